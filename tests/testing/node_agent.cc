#include "testing/node_agent.h"

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <ctime>
#include <fstream>
#include <optional>
#include <sstream>
#include <tuple>

#include "job/variable_references.h"
#include "kube/client/base64.h"
#include "testing/processes.h"

namespace cohort::testing {

namespace {

using Clock = std::chrono::steady_clock;
using nlohmann::json;

constexpr char kNetnsPrefix[] = "cohort-node-agent-";

// The kubelet's FallbackToLogsOnError message: the end of the log, at most 80 lines and 2048 bytes.
std::string LogTailMessage(const std::filesystem::path& log) {
  constexpr std::streamoff kMaxBytes = 2048;
  constexpr int kMaxLines = 80;
  std::ifstream in(log, std::ios::binary | std::ios::ate);
  if (!in) return "";
  std::streamoff size = in.tellg();
  std::streamoff start = std::max<std::streamoff>(0, size - kMaxBytes);
  in.seekg(start);
  std::string tail(static_cast<size_t>(size - start), '\0');
  in.read(tail.data(), static_cast<std::streamsize>(tail.size()));
  tail.resize(static_cast<size_t>(in.gcount()));
  // Walk back over at most kMaxLines lines (a final newline ends the last line).
  size_t begin = tail.size();
  int lines = 0;
  while (begin > 0) {
    if (tail[begin - 1] == '\n' && begin != tail.size() && ++lines == kMaxLines) break;
    --begin;
  }
  return tail.substr(begin);
}

std::string Now() {
  std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  char text[32];
  std::strftime(text, sizeof(text), "%Y-%m-%dT%H:%M:%SZ", &utc);
  return text;
}

// Runs an `ip` command line; the error names it and what it printed.
Status Ip(const std::string& arguments) {
  CommandResult result = RunCommand("ip " + arguments);
  if (result.exit_code != 0) {
    return Status::Internal("ip " + arguments + ": exit " + std::to_string(result.exit_code) +
                            ": " + result.output);
  }
  return Status::OK();
}

std::string String(const json& object, const char* key) {
  auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->get<std::string>() : "";
}

bool Matches(const json& selector, const std::map<std::string, std::string>& labels) {
  if (!selector.is_object() || selector.empty()) return false;
  for (const auto& [key, value] : selector.items()) {
    auto it = labels.find(key);
    if (it == labels.end() || !value.is_string() || it->second != value.get<std::string>()) {
      return false;
    }
  }
  return true;
}

int AgentNumber() {
  static std::atomic<int> next{0};
  return next++;
}

}  // namespace

struct NodeAgent::ContainerRun {
  std::string name;
  std::string image;
  std::vector<std::string> argv;
  bool message_from_log = false;         // terminationMessagePolicy FallbackToLogsOnError
  std::vector<std::string> environment;  // NAME=VALUE: the agent's own, then the container's
  std::filesystem::path working_dir;
  pid_t pid = -1;  // while running
  int restart_count = 0;
  std::string started_at;
  json state = {{"waiting", {{"reason", "ContainerCreating"}}}};
  json last_state = json::object();
  bool done = false;  // ended and will not run again
  std::optional<Clock::time_point> restart_at;
  int exit_code = 0;
};

struct NodeAgent::PodRun {
  std::string namespace_name;
  std::string name;
  std::string uid;
  std::string restart_policy;
  std::string hostname;
  std::map<std::string, std::string> labels;
  int address = 0;  // host number in the subnet
  std::string ip;
  std::string netns;
  std::string start_time;
  std::vector<ContainerRun> containers;
  std::optional<Clock::time_point> kill_at;  // deleting: SIGKILL then
  bool deleting = false;
};

Status CheckNodeAgentSupported() {
  if (geteuid() != 0) {
    return Status::FailedPrecondition("the node agent needs root for network namespaces");
  }
  CommandResult ip = RunCommand("ip netns list");
  if (ip.exit_code != 0) {
    return Status::FailedPrecondition("the node agent needs iproute2's `ip netns`: " + ip.output);
  }
  return Status::OK();
}

void SweepLeftoverNetworks() {
  CommandResult listed = RunCommand("ip netns list");
  if (listed.exit_code != 0) return;
  std::istringstream lines(listed.output);
  std::string line;
  while (std::getline(lines, line)) {
    std::string name = line.substr(0, line.find(' '));
    if (name.rfind(kNetnsPrefix, 0) != 0) continue;
    std::string rest = name.substr(sizeof(kNetnsPrefix) - 1);
    pid_t owner = std::atoi(rest.substr(0, rest.find('-')).c_str());
    if (owner > 0 && owner != getpid() && kill(owner, 0) != 0 && errno == ESRCH) {
      IgnoreError(Ip("netns delete " + name), "a leftover of a dead test; best effort");
    }
  }
}

NodeAgent::NodeAgent(kube::Api& api, NodeAgentOptions options)
    : api_(api),
      options_(std::move(options)),
      netns_prefix_(std::string(kNetnsPrefix) + std::to_string(getpid()) + "-" +
                    std::to_string(AgentNumber()) + "-"),
      hosts_file_(options_.work_dir / "hosts") {}

StatusOr<std::unique_ptr<NodeAgent>> NodeAgent::Start(kube::Api& api, NodeAgentOptions options) {
  if (Status supported = CheckNodeAgentSupported(); !supported.ok()) return supported;
  SweepLeftoverNetworks();
  std::error_code error;
  std::filesystem::create_directories(options.work_dir, error);
  if (error) {
    return Status::IOError("cannot create " + options.work_dir.string() + ": " + error.message());
  }
  std::unique_ptr<NodeAgent> agent(new NodeAgent(api, std::move(options)));
  if (Status bridge = agent->CreateBridge(); !bridge.ok()) return bridge;
  agent->RefreshHosts();
  // Both watches are the operator's informers: list, then watch, listing again on 410.
  kube::InformerOptions watching;
  watching.watch_timeout = std::chrono::seconds(1);
  watching.retry_delay = std::chrono::milliseconds(200);
  NodeAgent* a = agent.get();
  if (!a->options_.schedule_namespace.empty()) {
    // The scheduler's watch: unbound pods it may take.
    a->unbound_pods_ = std::make_unique<kube::Informer>(
        api, kube::PodResource(), a->options_.schedule_namespace,
        kube::Selector{a->options_.schedule_label_selector, "spec.nodeName="}, watching,
        [a](const json& pod, bool deleted) {
          if (!deleted) a->BindToThisNode(pod);
        });
    a->schedule_thread_ = std::thread([a] { a->unbound_pods_->Run(); });
  }
  // The kubelet's watch: pods bound to its node, in every namespace.
  a->bound_pods_ = std::make_unique<kube::Informer>(
      api, kube::PodResource(), "", kube::Selector{"", "spec.nodeName=" + a->options_.node_name},
      watching, [a](const json& pod, bool deleted) { a->OnPod(pod, deleted); });
  a->kubelet_thread_ = std::thread([a] { a->bound_pods_->Run(); });
  agent->supervise_thread_ = std::thread([a = agent.get()] { a->SuperviseLoop(); });
  return agent;
}

Status NodeAgent::CreateBridge() {
  std::string bridge = netns_prefix_ + "bridge";
  if (Status s = Ip("netns add " + bridge); !s.ok()) return s;
  if (Status s = Ip("-n " + bridge + " link add br0 type bridge"); !s.ok()) return s;
  return Ip("-n " + bridge + " link set br0 up");
}

NodeAgent::~NodeAgent() {
  stopping_ = true;
  for (kube::Informer* informer : {unbound_pods_.get(), bound_pods_.get()}) {
    if (informer) informer->Stop();
  }
  for (std::thread* thread : {&schedule_thread_, &kubelet_thread_, &supervise_thread_}) {
    if (thread->joinable()) thread->join();
  }
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& [uid, pod] : pods_) {
    for (ContainerRun& container : pod->containers) {
      if (container.pid <= 0) continue;
      kill(-container.pid, SIGKILL);
      int wait_status = 0;
      waitpid(container.pid, &wait_status, 0);
    }
    RemovePodNetwork(*pod);
  }
  IgnoreError(Ip("netns delete " + netns_prefix_ + "bridge"), "clean-up at the end; best effort");
}

Status NodeAgent::Kill(const std::string& namespace_name, const std::string& pod) {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& [uid, run] : pods_) {
    if (run->namespace_name != namespace_name || run->name != pod) continue;
    bool killed = false;
    for (ContainerRun& container : run->containers) {
      if (container.pid > 0 && kill(-container.pid, SIGKILL) == 0) killed = true;
    }
    if (killed) return Status::OK();
  }
  return Status::NotFound("pod " + namespace_name + "/" + pod + " has no running container on " +
                          options_.node_name);
}

std::filesystem::path NodeAgent::LogPath(const std::string& namespace_name, const std::string& pod,
                                         const std::string& container, int restart_count) const {
  return options_.work_dir / "pods" / (namespace_name + "_" + pod) /
         (container + "-" + std::to_string(restart_count) + ".log");
}

std::string NodeAgent::PodIp(const std::string& namespace_name, const std::string& pod) const {
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& [uid, run] : pods_) {
    if (run->namespace_name == namespace_name && run->name == pod) return run->ip;
  }
  return "";
}

// The scheduler's part: bind an unbound pod it may take to its node.
void NodeAgent::BindToThisNode(const json& pod) {
  const json& metadata = pod.value("metadata", json::object());
  if (metadata.contains("deletionTimestamp")) return;
  if (!String(pod.value("spec", json::object()), "nodeName").empty()) return;
  json binding = {
      {"apiVersion", "v1"},
      {"kind", "Binding"},
      {"metadata", {{"name", String(metadata, "name")}}},
      {"target", {{"apiVersion", "v1"}, {"kind", "Node"}, {"name", options_.node_name}}}};
  kube::Resource resource{"", "v1", "pods/" + String(metadata, "name") + "/binding", "Binding"};
  // Bound meanwhile or gone: the next event says so; nothing to do here.
  (void)api_.Create(resource, options_.schedule_namespace, binding);
}

void NodeAgent::OnPod(const json& pod, bool deleted) {
  const json& metadata = pod.value("metadata", json::object());
  std::string uid = String(metadata, "uid");
  std::unique_lock<std::mutex> lock(mu_);
  auto it = pods_.find(uid);
  if (deleted) {
    if (it == pods_.end()) return;
    // Removed outright (a forced delete): stop at once; there is nothing left to report to.
    for (ContainerRun& container : it->second->containers) {
      container.restart_at.reset();
      if (container.pid > 0) {
        kill(-container.pid, SIGKILL);
      } else {
        container.done = true;
      }
    }
    it->second->deleting = true;
    it->second->kill_at = Clock::now();
    return;
  }
  if (metadata.contains("deletionTimestamp")) {
    if (it == pods_.end()) {
      // Nothing of it runs here (ended, or never started): the kubelet's final delete is all
      // that is left.
      lock.unlock();
      kube::DeleteOptions options;
      options.uid = uid;
      options.grace_period_seconds = 0;
      (void)api_.Delete(kube::PodResource(), String(metadata, "namespace"),
                        String(metadata, "name"), options);
      return;
    }
    PodRun& run = *it->second;
    if (run.deleting) return;
    run.deleting = true;
    int64_t grace = metadata.value("deletionGracePeriodSeconds", int64_t{30});
    run.kill_at = Clock::now() + std::chrono::seconds(grace);
    for (ContainerRun& container : run.containers) {
      container.restart_at.reset();
      if (container.pid > 0) {
        kill(-container.pid, SIGTERM);
      } else {
        container.done = true;  // waiting for a restart: it never comes
      }
    }
    return;
  }
  if (it != pods_.end() || finished_uids_.count(uid) != 0) return;
  std::string phase = String(pod.value("status", json::object()), "phase");
  if (phase == "Succeeded" || phase == "Failed") return;
  lock.unlock();
  if (Status started = StartPod(pod); !started.ok()) {
    ReportStatus(
        String(metadata, "namespace"), String(metadata, "name"),
        {{"status",
          {{"phase", "Failed"}, {"reason", "NodeAgentError"}, {"message", started.ToString()}}}});
    std::lock_guard<std::mutex> relock(mu_);
    finished_uids_.insert(uid);
  }
}

namespace {

// The value of an env variable's valueFrom.secretKeyRef, read from the Secret on the server as
// the kubelet reads it (data, base64); nullopt for another valueFrom (not played) or a missing
// optional one. A missing Secret or key that is not optional is an error naming them (the kubelet
// would keep the container waiting in CreateContainerConfigError).
StatusOr<std::optional<std::string>> SecretKeyValue(kube::Api& api,
                                                    const std::string& namespace_name,
                                                    const json& variable) {
  const json& value_from = variable["valueFrom"];
  if (!value_from.is_object() || !value_from.contains("secretKeyRef")) {
    return std::optional<std::string>();
  }
  const json& reference = value_from["secretKeyRef"];
  const std::string name = String(reference, "name"), key = String(reference, "key");
  const bool optional = reference.value("optional", false);
  const std::string what = "env " + String(variable, "name") + " from secret " + namespace_name +
                           "/" + name + " key " + key;
  StatusOr<json> secret = api.Get(kube::SecretResource(), namespace_name, name);
  if (!secret.ok() && secret.status().code() == Status::Code::kNotFound && optional) {
    return std::optional<std::string>();
  }
  if (!secret.ok()) return secret.status().WithContext(what);
  const json data = secret->value("data", json::object());
  if (!data.is_object() || !data.contains(key) || !data[key].is_string()) {
    if (optional) return std::optional<std::string>();
    return Status::NotFound(what + ": the secret has no such key");
  }
  StatusOr<std::string> decoded = kube::DecodeBase64(data[key].get<std::string>(), what);
  if (!decoded.ok()) return decoded.status();
  return std::optional<std::string>(std::move(*decoded));
}

}  // namespace

Status NodeAgent::StartPod(const json& pod) {
  const json& metadata = pod.value("metadata", json::object());
  const json& spec = pod.value("spec", json::object());
  auto run = std::make_unique<PodRun>();
  run->namespace_name = String(metadata, "namespace");
  run->name = String(metadata, "name");
  run->uid = String(metadata, "uid");
  run->restart_policy = spec.value("restartPolicy", std::string("Always"));
  run->hostname = spec.value("hostname", run->name);
  json labels = metadata.value("labels", json::object());
  for (const auto& [key, value] : labels.items()) {
    if (value.is_string()) run->labels[key] = value.get<std::string>();
  }
  run->start_time = Now();
  std::string pod_name = run->namespace_name + "/" + run->name;

  std::filesystem::path pod_dir = LogPath(run->namespace_name, run->name, "x", 0).parent_path();
  std::error_code error;
  std::filesystem::create_directories(pod_dir, error);
  if (error) return Status::IOError("cannot create " + pod_dir.string() + ": " + error.message());

  std::vector<std::string> inherited;
  for (char** variable = environ; *variable != nullptr; ++variable) inherited.push_back(*variable);
  for (const json& item : spec.value("containers", json::array())) {
    job::Container container;
    container.name = String(item, "name");
    container.image = String(item, "image");
    container.command = item.value("command", std::vector<std::string>{});
    container.args = item.value("args", std::vector<std::string>{});
    StatusOr<std::vector<std::string>> argv = options_.images.CommandFor(container, pod_name);
    if (!argv.ok()) return argv.status();
    // As the kubelet does: $(NAME) in command and args from the container's own variables.
    std::map<std::string, std::string> variables;
    for (const json& variable : item.value("env", json::array())) {
      if (variable.contains("value"))
        variables[String(variable, "name")] = String(variable, "value");
    }
    ContainerRun container_run;
    container_run.name = container.name;
    container_run.image = container.image;
    container_run.argv = job::ExpandVariableReferences(*argv, variables);
    container_run.message_from_log =
        String(item, "terminationMessagePolicy") == "FallbackToLogsOnError";
    container_run.environment = inherited;
    container_run.environment.push_back("HOSTNAME=" + run->hostname);
    for (const json& variable : item.value("env", json::array())) {
      if (variable.contains("valueFrom")) {
        StatusOr<std::optional<std::string>> value =
            SecretKeyValue(api_, run->namespace_name, variable);
        if (!value.ok()) return value.status().WithContext("pod " + pod_name);
        if (*value) container_run.environment.push_back(String(variable, "name") + "=" + **value);
        continue;
      }
      container_run.environment.push_back(String(variable, "name") + "=" +
                                          String(variable, "value"));
    }
    std::string working_dir = String(item, "workingDir");
    container_run.working_dir = working_dir.empty() ? pod_dir : std::filesystem::path(working_dir);
    run->containers.push_back(std::move(container_run));
  }
  if (run->containers.empty())
    return Status::InvalidArgument("pod " + pod_name + " has no container");

  std::unique_lock<std::mutex> lock(mu_);
  for (int address = 2; address < 255; ++address) {
    if (used_addresses_.insert(address).second) {
      run->address = address;
      break;
    }
  }
  if (run->address == 0) return Status::Unavailable("no free address for pod " + pod_name);
  run->ip = options_.subnet + "." + std::to_string(run->address);
  run->netns = netns_prefix_ + std::to_string(run->address);
  std::string bridge = netns_prefix_ + "bridge";
  std::string veth = "v" + std::to_string(run->address);
  Status network = Ip("netns add " + run->netns);
  if (network.ok()) {
    network = Ip("link add " + veth + " netns " + bridge + " type veth peer name eth0 netns " +
                 run->netns);
  }
  if (network.ok()) network = Ip("-n " + bridge + " link set " + veth + " master br0 up");
  if (network.ok()) network = Ip("-n " + run->netns + " addr add " + run->ip + "/24 dev eth0");
  if (network.ok()) network = Ip("-n " + run->netns + " link set eth0 up");
  if (network.ok()) network = Ip("-n " + run->netns + " link set lo up");
  if (!network.ok()) {
    RemovePodNetwork(*run);
    return network;
  }
  PodRun& started = *run;
  pods_[run->uid] = std::move(run);
  lock.unlock();
  RefreshHosts();
  lock.lock();
  for (ContainerRun& container : started.containers) StartContainer(started, container);
  json patch = StatusPatch(started);
  std::string namespace_name = started.namespace_name, name = started.name;
  lock.unlock();
  ReportStatus(namespace_name, name, patch);
  return Status::OK();
}

// Forks the container's process into the pod's namespaces. Called with mu_ held.
void NodeAgent::StartContainer(PodRun& pod, ContainerRun& container) {
  std::string log = LogPath(pod.namespace_name, pod.name, container.name, container.restart_count);
  std::string netns = "/run/netns/" + pod.netns;
  std::string hosts = hosts_file_.string();
  std::string working_dir = container.working_dir.string();
  std::vector<char*> argv, envp;
  for (std::string& word : container.argv) argv.push_back(word.data());
  argv.push_back(nullptr);
  for (std::string& variable : container.environment) envp.push_back(variable.data());
  envp.push_back(nullptr);
  const std::string& hostname = pod.hostname;

  int log_fd = open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  pid_t parent = getpid();
  pid_t pid = fork();
  if (pid == 0) {
    auto fail = [&](const char* what) {
      dprintf(log_fd, "node agent: %s failed: %s\n", what, strerror(errno));
      _exit(127);
    };
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(127);
    setpgid(0, 0);
    if (log_fd < 0) _exit(127);
    int netns_fd = open(netns.c_str(), O_RDONLY | O_CLOEXEC);
    if (netns_fd < 0 || setns(netns_fd, CLONE_NEWNET) != 0) fail("joining the pod's network");
    if (unshare(CLONE_NEWNS | CLONE_NEWUTS) != 0) fail("unshare");
    if (mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) fail("private mounts");
    if (mount(hosts.c_str(), "/etc/hosts", nullptr, MS_BIND, nullptr) != 0) fail("/etc/hosts");
    if (sethostname(hostname.data(), hostname.size()) != 0) fail("sethostname");
    if (chdir(working_dir.c_str()) != 0) fail("chdir to the workingDir");
    int null_fd = open("/dev/null", O_RDONLY);
    if (null_fd < 0 || dup2(null_fd, 0) < 0 || dup2(log_fd, 1) < 0 || dup2(log_fd, 2) < 0) {
      fail("redirecting output");
    }
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    execvpe(argv[0], argv.data(), envp.data());
    fail("exec");
  }
  if (log_fd >= 0) close(log_fd);
  container.started_at = Now();
  if (pid < 0) {
    container.state = {{"terminated",
                        {{"exitCode", 128},
                         {"reason", "StartError"},
                         {"message", std::string("fork: ") + strerror(errno)},
                         {"startedAt", container.started_at},
                         {"finishedAt", container.started_at}}}};
    container.done = true;
    return;
  }
  setpgid(pid, pid);  // also here, so that a kill of the group never races the child's own
  container.pid = pid;
  container.state = {{"running", {{"startedAt", container.started_at}}}};
}

// Called with mu_ held, once the container's process has been reaped.
void NodeAgent::OnContainerExit(PodRun& pod, ContainerRun& container, int wait_status) {
  kill(-container.pid, SIGKILL);  // what the process left behind in its group
  container.pid = -1;
  json terminated = {{"startedAt", container.started_at}, {"finishedAt", Now()}};
  if (WIFSIGNALED(wait_status)) {
    container.exit_code = 128 + WTERMSIG(wait_status);
    terminated["signal"] = WTERMSIG(wait_status);
  } else {
    container.exit_code = WEXITSTATUS(wait_status);
  }
  terminated["exitCode"] = container.exit_code;
  terminated["reason"] = container.exit_code == 0 ? "Completed" : "Error";
  if (container.message_from_log && container.exit_code != 0) {
    std::string message = LogTailMessage(
        LogPath(pod.namespace_name, pod.name, container.name, container.restart_count));
    if (!message.empty()) terminated["message"] = message;
  }
  terminated["containerID"] = "node-agent://" + pod.uid + "/" + container.name + "/" +
                              std::to_string(container.restart_count);
  container.state = {{"terminated", terminated}};
  bool restart = !pod.deleting && (pod.restart_policy == "Always" ||
                                   (pod.restart_policy == "OnFailure" && container.exit_code != 0));
  if (!restart) {
    container.done = true;
    return;
  }
  int doublings = std::min(container.restart_count, 3);
  container.restart_at = Clock::now() + options_.restart_backoff * (1 << doublings);
  container.last_state = container.state;
  container.state = {{"waiting", {{"reason", "CrashLoopBackOff"}}}};
}

void NodeAgent::SuperviseLoop() {
  auto last_hosts_refresh = Clock::now();
  while (!stopping_) {
    std::vector<std::pair<std::string, std::string>> to_delete;  // namespace, name (uid below)
    std::vector<std::string> to_delete_uids;
    std::vector<std::tuple<std::string, std::string, json>> reports;
    {
      std::lock_guard<std::mutex> lock(mu_);
      for (auto it = pods_.begin(); it != pods_.end();) {
        PodRun& pod = *it->second;
        bool changed = false;
        for (ContainerRun& container : pod.containers) {
          if (container.pid > 0) {
            int wait_status = 0;
            if (waitpid(container.pid, &wait_status, WNOHANG) == container.pid) {
              OnContainerExit(pod, container, wait_status);
              changed = true;
            } else if (pod.kill_at && Clock::now() >= *pod.kill_at) {
              kill(-container.pid, SIGKILL);
            }
          } else if (container.restart_at && Clock::now() >= *container.restart_at) {
            container.restart_at.reset();
            ++container.restart_count;
            StartContainer(pod, container);
            changed = true;
          }
        }
        bool all_done = true;
        for (const ContainerRun& container : pod.containers) all_done &= container.done;
        if (changed) reports.emplace_back(pod.namespace_name, pod.name, StatusPatch(pod));
        if (all_done) {
          if (pod.deleting) {
            to_delete.emplace_back(pod.namespace_name, pod.name);
            to_delete_uids.push_back(pod.uid);
          }
          finished_uids_.insert(pod.uid);
          RemovePodNetwork(pod);
          it = pods_.erase(it);
        } else {
          ++it;
        }
      }
    }
    for (const auto& [namespace_name, name, patch] : reports) {
      ReportStatus(namespace_name, name, patch);
    }
    for (size_t i = 0; i < to_delete.size(); ++i) {
      kube::DeleteOptions options;
      options.uid = to_delete_uids[i];
      options.grace_period_seconds = 0;  // the kubelet's final delete
      (void)api_.Delete(kube::PodResource(), to_delete[i].first, to_delete[i].second, options);
    }
    // Services come and go without a watch of them: a pod started before its service resolves
    // the name within this.
    if (Clock::now() - last_hosts_refresh >= std::chrono::milliseconds(500)) {
      RefreshHosts();
      last_hosts_refresh = Clock::now();
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

// Called with mu_ held.
void NodeAgent::RemovePodNetwork(PodRun& pod) {
  if (pod.netns.empty()) return;
  // Deleting the namespace takes the veth pair with it.
  IgnoreError(Ip("netns delete " + pod.netns), "clean-up of a finished pod; best effort");
  used_addresses_.erase(pod.address);
  pod.netns.clear();
}

void NodeAgent::RefreshHosts() {
  std::map<std::string, std::vector<std::pair<std::map<std::string, std::string>, std::string>>>
      pods_by_namespace;  // namespace -> (labels, ip)
  std::string contents = "127.0.0.1 localhost\n::1 localhost\n";
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [uid, pod] : pods_) {
      // A pod on its way out gives its names to its successor (the operator's new pod of the
      // same name).
      if (pod->ip.empty() || pod->deleting) continue;
      pods_by_namespace[pod->namespace_name].emplace_back(pod->labels, pod->ip);
      contents += pod->ip + " " + pod->hostname + "\n";
    }
  }
  for (const auto& [namespace_name, pods] : pods_by_namespace) {
    StatusOr<kube::ObjectList> services = api_.List(kube::ServiceResource(), namespace_name);
    if (!services.ok()) continue;
    for (const json& service : services->items) {
      std::string name = String(service.value("metadata", json::object()), "name");
      json selector = service.value("spec", json::object()).value("selector", json::object());
      for (const auto& [labels, ip] : pods) {
        if (!Matches(selector, labels)) continue;
        std::string base = name + "." + namespace_name;
        contents += ip + " " + base + ".svc " + base + ".svc.cluster.local " + base + "\n";
      }
    }
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (contents == hosts_contents_) return;
  hosts_contents_ = contents;
  // In place, never by rename: the pods' /etc/hosts is a bind mount of this very file.
  std::ofstream out(hosts_file_, std::ios::in | std::ios::out | std::ios::trunc);
  if (!out) out.open(hosts_file_, std::ios::out | std::ios::trunc);
  out << contents;
}

json NodeAgent::StatusPatch(const PodRun& pod) const {
  json statuses = json::array();
  bool all_running = true, all_done = true, all_succeeded = true;
  for (const ContainerRun& container : pod.containers) {
    bool running = container.pid > 0;
    all_running &= running;
    all_done &= container.done;
    all_succeeded &= container.done && container.exit_code == 0;
    json status = {{"name", container.name},
                   {"image", container.image},
                   {"imageID", ""},
                   {"ready", running},
                   {"started", running},
                   {"restartCount", container.restart_count},
                   {"state", container.state},
                   {"lastState", container.last_state}};
    if (running) {
      status["containerID"] = "node-agent://" + pod.uid + "/" + container.name + "/" +
                              std::to_string(container.restart_count);
    }
    statuses.push_back(status);
  }
  std::string phase = "Running";
  if (all_done) phase = all_succeeded ? "Succeeded" : "Failed";
  std::string ready = all_running ? "True" : "False";
  std::string now = Now();
  json conditions = json::array();
  for (const auto& [type, value] :
       std::vector<std::pair<std::string, std::string>>{{"Initialized", "True"},
                                                        {"Ready", ready},
                                                        {"ContainersReady", ready},
                                                        {"PodScheduled", "True"}}) {
    conditions.push_back({{"type", type}, {"status", value}, {"lastTransitionTime", now}});
  }
  return {{"status",
           {{"phase", phase},
            {"hostIP", options_.subnet + ".1"},
            {"podIP", pod.ip},
            {"podIPs", json::array({{{"ip", pod.ip}}})},
            {"startTime", pod.start_time},
            {"conditions", conditions},
            {"containerStatuses", statuses}}}};
}

void NodeAgent::ReportStatus(const std::string& namespace_name, const std::string& name,
                             const json& patch) {
  // A pod deleted meanwhile has no status to report; every other failure is tried again once.
  for (int attempt = 0; attempt < 2; ++attempt) {
    StatusOr<json> patched = api_.Patch(kube::PodResource(), namespace_name, name, patch,
                                        /*status_subresource=*/true);
    if (patched.ok() || patched.status().code() == Status::Code::kNotFound) return;
  }
}

}  // namespace cohort::testing
