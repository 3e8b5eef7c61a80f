#include "exec/local_executor.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <csignal>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>

#include "base/hex.h"
#include "exec/free_ports.h"
#include "exec/process.h"
#include "job/job_kind.h"
#include "job/status_json.h"

extern char** environ;

namespace cohort::exec {
namespace {

// The self-pipe that turns signals into poll wake-ups, and how many stops were asked for.
int wake_pipe[2] = {-1, -1};
volatile sig_atomic_t stop_requests = 0;
volatile sig_atomic_t stop_signal = 0;

void WakeUp() {
  if (wake_pipe[1] >= 0) {
    ssize_t ignored = write(wake_pipe[1], "x", 1);
    (void)ignored;
  }
}

void OnChildExit(int) { WakeUp(); }

std::string NewSecret() {
  std::random_device random;  // getrandom(2) on Linux
  std::string bytes(32, '\0');
  for (char& byte : bytes) byte = static_cast<char>(random() & 0xff);
  return HexEncode(bytes);
}

std::optional<Time> Earliest(std::optional<Time> a, std::optional<Time> b) {
  if (!a) return b;
  if (!b) return a;
  return std::min(*a, *b);
}

}  // namespace

std::string ShortReplicaName(const std::string& replica_type, int index) {
  return job::LowerCase(replica_type) + "-" + std::to_string(index);
}

Status PrepareLocalJob(JobStore& store, const job::Job& job, const ImageMap& images,
                       SupervisorLock* lock) {
  COHORT_RETURN_IF_ERROR(images.CheckJob(job));
  int total = 0;
  for (const auto& [type, spec] : job.replica_specs) total += spec.replicas;
  StatusOr<std::vector<int>> ports = ReserveFreePorts(total);
  if (!ports.ok()) return ports.status();

  COHORT_RETURN_IF_ERROR(store.CreateJob(job, lock));
  JobKey key{job.metadata.namespace_name, job.metadata.name};
  std::map<std::string, int> by_replica;
  size_t next = 0;
  for (const auto& [type, spec] : job.replica_specs) {
    for (int index = 0; index < spec.replicas; ++index) {
      by_replica[ShortReplicaName(type, index)] = (*ports)[next++];
    }
  }
  Status written = store.WriteEndpoints(key, by_replica);
  std::filesystem::path secret_path = store.JobDirectory(key) / "secret";
  if (written.ok()) written = WriteFileAtomically(secret_path, NewSecret(), 0600);
  // A job that cannot start is not left behind to be reported as one whose supervisor died.
  if (!written.ok()) store.DeleteJob(key);
  return written;
}

std::map<std::string, std::string> ReplicaEnvironment(const job::Job& job,
                                                      const std::string& replica_type, int index,
                                                      const std::map<std::string, int>& ports,
                                                      const std::string& secret) {
  std::map<std::string, std::string> environment;
  for (char** entry = environ; *entry != nullptr; ++entry) {
    std::string text = *entry;
    size_t equals = text.find('=');
    if (equals != std::string::npos) environment[text.substr(0, equals)] = text.substr(equals + 1);
  }
  // A cluster variable (TF_CONFIG) or job identity inherited from whoever started cohort must
  // never leak in.
  const job::JobKind& kind = *job.job_kind;
  for (const std::string& name : kind.EnvironmentNames()) environment.erase(name);
  for (const char* name :
       {"COHORT_JOB_NAME", "COHORT_REPLICA_TYPE", "COHORT_REPLICA_INDEX", "COHORT_JOB_SECRET"}) {
    environment.erase(name);
  }
  const job::Container* container =
      kind.MainContainer(job.replica_specs.at(replica_type).template_spec);
  if (container != nullptr) {
    for (const job::EnvVar& variable : container->env) {
      if (variable.value_from.is_null()) environment[variable.name] = variable.value;
    }
  }
  auto endpoint = [&](const std::string& type, int task_index) {
    auto it = ports.find(ShortReplicaName(type, task_index));
    return "localhost:" + std::to_string(it == ports.end() ? 0 : it->second);
  };
  for (const job::EnvVar& variable : kind.ReplicaEnvironment(job, replica_type, index, endpoint)) {
    environment[variable.name] = variable.value;
  }
  environment["COHORT_JOB_NAME"] = job.metadata.name;
  environment["COHORT_REPLICA_TYPE"] = job::LowerCase(replica_type);
  environment["COHORT_REPLICA_INDEX"] = std::to_string(index);
  environment["COHORT_JOB_SECRET"] = secret;
  return environment;
}

LocalExecutor::LocalExecutor(JobStore store, JobKey key, SupervisorLock lock, ImageMap images,
                             ExecutorObserver observer)
    : store_(std::move(store)),
      key_(std::move(key)),
      images_(std::move(images)),
      observer_(std::move(observer)),
      lock_(std::move(lock)) {}

LocalExecutor::~LocalExecutor() {
  for (int& fd : wake_pipe) {
    if (fd >= 0) close(fd);
    fd = -1;
  }
}

void LocalExecutor::RequestStop(int signal_number) {
  stop_signal = signal_number;
  stop_requests = stop_requests + 1;
  WakeUp();
}

Status LocalExecutor::ReloadSpecIfChanged() {
  std::filesystem::file_time_type version = store_.SpecVersion(key_);
  if (version == spec_version_) return Status::OK();
  StatusOr<job::Job> job = store_.ReadSpec(key_);
  if (!job.ok()) return job.status();
  job_ = std::move(*job);
  spec_version_ = version;
  return Status::OK();
}

Status LocalExecutor::Setup() {
  // Taking the lock only now would leave the job visible without a holder since its creation,
  // and any command run in that moment would mark it Failed as abandoned.
  if (!lock_.held()) {
    return Status::FailedPrecondition("the supervisor of " + key_.ToString() +
                                      " was started without the job's supervisor lock");
  }
  COHORT_RETURN_IF_ERROR(ReloadSpecIfChanged());
  StatusOr<std::map<std::string, int>> ports = store_.ReadEndpoints(key_);
  if (!ports.ok()) return ports.status();
  ports_ = std::move(*ports);
  StatusOr<std::string> secret = ReadWholeFile(store_.JobDirectory(key_) / "secret");
  if (!secret.ok()) return secret.status();
  secret_ = *secret;
  StatusOr<job::JobStatus> status = store_.ReadStatus(key_);
  if (!status.ok()) return status.status();
  status_ = std::move(*status);
  if (job::IsFinished(status_)) {
    return Status::FailedPrecondition("job " + key_.ToString() + " has already finished");
  }

  COHORT_RETURN_IF_ERROR(WriteFileAtomically(store_.JobDirectory(key_) / "supervisor.pid",
                                             std::to_string(getpid()) + "\n"));
  if (pipe2(wake_pipe, O_CLOEXEC | O_NONBLOCK) != 0) {
    return Status::Unavailable(std::string("pipe: ") + std::strerror(errno));
  }
  stop_requests = 0;
  struct sigaction action {};
  action.sa_handler = OnChildExit;
  action.sa_flags = SA_RESTART | SA_NOCLDSTOP;
  sigaction(SIGCHLD, &action, nullptr);
  action.sa_handler = RequestStop;
  for (int signal_number : {SIGINT, SIGTERM, SIGHUP}) sigaction(signal_number, &action, nullptr);
  signal(SIGPIPE, SIG_IGN);
  return watchdog_.Start(store_, key_, lock_.fd());
}

StatusOr<job::JobStatus> LocalExecutor::Run() {
  COHORT_RETURN_IF_ERROR(Setup());
  bool stop_handled = false;
  while (true) {
    // `cohort suspend` and `cohort resume` edit the saved spec, as kubectl patch would.
    if (Status reloaded = ReloadSpecIfChanged(); !reloaded.ok() && observer_.on_event) {
      observer_.on_event({"Warning", "SpecReloadFailed", reloaded.message(), Clock::now()});
    }
    Time now = Clock::now();
    std::vector<job::Event> deletions;
    ReapExited(now, deletions);
    Publish(status_, deletions);
    if (stop_requests > 0 && !stop_handled) {
      stop_handled = true;
      std::string message =
          job_.job_kind->name() + " " + key_.ToString() + " was stopped by " +
          (stop_signal == SIGINT ? "the user (Ctrl-C)" : "signal " + std::to_string(stop_signal)) +
          " before it finished.";
      job::JobStatus stopped = status_;
      const std::string reason = job_.job_kind->Reason(job::kConditionFailed);
      job::SetCondition(stopped, job::kConditionFailed, "True", reason, message, now);
      if (!stopped.completion_time) stopped.completion_time = now;
      Publish(stopped, {job::Event{"Warning", reason, message, now}});
    }
    if (stop_requests > 1) {  // asked twice: do not wait for the grace period
      for (auto& [key, replica] : replicas_) {
        if (replica.kill_at) replica.kill_at = now;
      }
    }
    EscalateStops(now);
    if (!job::IsFinished(status_)) StartDueRestarts(now);

    job::ReconcileResult result = job::Reconcile(job_, status_, Observe(), now);
    std::vector<job::Event> events = result.events;
    for (const job::Action& action : result.actions) Apply(action, now, events);
    Publish(result.status, events);
    // Locally no replica outlives the job's supervisor: once the job has finished and the
    // reconciler's cleanPodPolicy actions are done, whatever still runs is stopped.
    if (job::IsFinished(status_)) StopEverything(now);
    WriteReplicaTable();
    if (observer_.on_tick) observer_.on_tick();
    if (job::IsFinished(status_) && !AnyProcessAlive()) break;

    std::optional<Time> wake_at = result.requeue_at;
    for (const auto& [key, replica] : replicas_) {
      wake_at = Earliest(wake_at, Earliest(replica.restart_at, replica.kill_at));
    }
    WaitForWork(wake_at);
  }
  if (observer_.on_tick) observer_.on_tick();
  watchdog_.Dismiss();
  if (deleting_) {
    Status deleted = store_.DeleteJob(key_);
    Time now = Clock::now();
    if (!deleted.ok()) {
      Publish(status_,
              {{"Warning", "FailedDeleteJob", "Error deleting: " + deleted.message(), now}});
      return deleted;
    }
    // The job's event log went with its directory, so only the observer (`cohort run`) can show
    // this one.
    if (observer_.on_event) {
      observer_.on_event({"Normal", "SuccessfulDeleteJob", "Deleted job: " + key_.name, now});
    }
  }
  return status_;
}

void LocalExecutor::ReapExited(Time now, std::vector<job::Event>& events) {
  for (auto it = replicas_.begin(); it != replicas_.end();) {
    Replica& replica = it->second;
    int exit_code = 0;
    if (replica.pid > 0 && TryReap(replica.pid, &exit_code)) {
      // The process is gone; stop its group too, so nothing it forked keeps running.
      SignalProcessGroup(replica.pid, SIGKILL);
      replica.pid = -1;
      if (replica.kill_at) {  // we stopped it: like a deleted pod, it is simply absent now
        events.push_back(
            {"Normal", "SuccessfulDeletePod",
             "Deleted pod: " + job::ReplicaName(key_.name, replica.type, replica.index), now});
        it = replicas_.erase(it);
        continue;
      }
      replica.phase = exit_code == 0 ? job::ReplicaPhase::kSucceeded : job::ReplicaPhase::kFailed;
      replica.exit_code = exit_code;
      replica.finished_at = now;
    }
    ++it;
  }
}

void LocalExecutor::StartDueRestarts(Time now) {
  for (auto& [key, replica] : replicas_) {
    if (replica.restart_at && *replica.restart_at <= now && replica.pid < 0) {
      replica.restart_at.reset();
      std::vector<job::Event> events;
      StartReplica(replica, now, events);
      Publish(status_, events);
    }
  }
}

void LocalExecutor::EscalateStops(Time now) {
  for (auto& [key, replica] : replicas_) {
    if (replica.pid > 0 && replica.kill_at && *replica.kill_at <= now) {
      SignalProcessGroup(replica.pid, SIGKILL);
    }
  }
}

void LocalExecutor::Apply(const job::Action& action, Time now, std::vector<job::Event>& events) {
  ReplicaKey key{action.type, action.index};
  switch (action.kind) {
    case job::Action::Kind::kStart: {
      if (replicas_.count(key)) return;
      Replica& replica = replicas_[key];
      replica.type = action.type;
      replica.index = action.index;
      StartReplica(replica, now, events);
      return;
    }
    case job::Action::Kind::kRestart: {
      auto it = replicas_.find(key);
      if (it == replicas_.end() || it->second.pid > 0) return;
      Replica& replica = it->second;
      replica.restart_at = now + job::RestartBackoff(replica.restart_count);
      replica.restart_count += 1;
      replica.phase = job::ReplicaPhase::kPending;
      return;
    }
    case job::Action::Kind::kStop: {
      auto it = replicas_.find(key);
      if (it != replicas_.end()) StopReplica(it->second, now);
      return;
    }
    case job::Action::Kind::kDeleteJob:
      deleting_ = true;
      StopEverything(now);
      return;
  }
}

void LocalExecutor::StartReplica(Replica& replica, Time now, std::vector<job::Event>& events) {
  std::string name = ShortReplicaName(replica.type, replica.index);
  std::string pod = job::ReplicaName(key_.name, replica.type, replica.index);
  std::filesystem::path log_path = store_.LogPath(key_, name);
  if (replica.restart_count > 0) {
    std::ofstream log(log_path, std::ios::app);
    log << "===== cohort: restart " << replica.restart_count << " of " << name << " at "
        << FormatTime(now) << " (previous exit code " << replica.exit_code << ") =====\n";
  }
  const job::ReplicaSpec& spec = job_.replica_specs.at(replica.type);
  const job::Container* container = job_.job_kind->MainContainer(spec.template_spec);
  Status status;
  if (container == nullptr) {
    status = Status::InvalidArgument("no container named " + job_.job_kind->facts().container_name);
  } else {
    StatusOr<std::vector<std::string>> argv = images_.CommandFor(*container, name);
    if (argv.ok()) {
      ProcessSpec process{*argv,
                          ReplicaEnvironment(job_, replica.type, replica.index, ports_, secret_),
                          container->working_dir, log_path.string()};
      StatusOr<pid_t> pid = StartProcess(process);
      if (pid.ok()) {
        replica.pid = *pid;
        watchdog_.Watch(*pid);
      } else {
        status = pid.status();
      }
    } else {
      status = argv.status();
    }
  }
  if (status.ok()) {
    replica.phase = job::ReplicaPhase::kRunning;
    replica.started_at = now;
    replica.finished_at.reset();
    events.push_back({"Normal", "SuccessfulCreatePod", "Created pod: " + pod, now});
  } else {
    // Reported like a container that could not start, so the restart policy still applies.
    replica.phase = job::ReplicaPhase::kFailed;
    replica.exit_code = 127;
    replica.finished_at = now;
    events.push_back({"Warning", "FailedCreatePod", "Error creating: " + status.message(), now});
  }
}

void LocalExecutor::StopReplica(Replica& replica, Time now) {
  if (replica.pid > 0) {
    if (!replica.kill_at) {
      SignalProcessGroup(replica.pid, SIGTERM);
      replica.kill_at = now + GracePeriod(replica.type);
    }
    return;
  }
  // Not running (exited, or waiting to restart): it just goes away, like a deleted pod.
  replicas_.erase(ReplicaKey{replica.type, replica.index});
}

void LocalExecutor::StopEverything(Time now) {
  std::vector<ReplicaKey> keys;
  for (const auto& [key, replica] : replicas_) {
    if (replica.pid > 0 || replica.restart_at) keys.push_back(key);
  }
  for (const ReplicaKey& key : keys) StopReplica(replicas_.at(key), now);
}

std::vector<job::ObservedReplica> LocalExecutor::Observe() const {
  std::vector<job::ObservedReplica> observed;
  for (const auto& [key, replica] : replicas_) {
    observed.push_back({replica.type, replica.index, replica.phase, replica.exit_code,
                        replica.restart_count, replica.started_at, replica.finished_at});
  }
  return observed;
}

bool LocalExecutor::AnyProcessAlive() const {
  return std::any_of(replicas_.begin(), replicas_.end(),
                     [](const auto& entry) { return entry.second.pid > 0; });
}

void LocalExecutor::Publish(const job::JobStatus& status, const std::vector<job::Event>& events) {
  nlohmann::json before = job::JobStatusToJson(status_);
  nlohmann::json after = job::JobStatusToJson(status);
  if (before != after || !std::filesystem::exists(store_.JobDirectory(key_) / "status.json")) {
    if (observer_.on_condition) {
      for (const job::JobCondition& condition : status.conditions) {
        bool changed = std::none_of(status_.conditions.begin(), status_.conditions.end(),
                                    [&](const job::JobCondition& old) {
                                      return old.type == condition.type &&
                                             old.status == condition.status &&
                                             old.reason == condition.reason;
                                    });
        if (changed) observer_.on_condition(condition);
      }
    }
    status_ = status;
    Status written = store_.WriteStatus(key_, status_);
    if (!written.ok() && observer_.on_event) {
      observer_.on_event({"Warning", "StatusWriteFailed", written.message(), Clock::now()});
    }
  }
  if (!events.empty()) {
    store_.AppendEvents(key_, events);
    if (observer_.on_event) {
      for (const job::Event& event : events) observer_.on_event(event);
    }
  }
}

Status LocalExecutor::WriteReplicaTable() {
  nlohmann::json table = nlohmann::json::array();
  for (const auto& [key, replica] : replicas_) {
    std::string name = ShortReplicaName(replica.type, replica.index);
    nlohmann::json row = {{"name", name},
                          {"phase", job::ToString(replica.phase)},
                          {"restarts", replica.restart_count},
                          {"port", ports_.count(name) ? ports_.at(name) : 0}};
    if (replica.pid > 0) row["pid"] = replica.pid;
    if (replica.finished_at) row["exitCode"] = replica.exit_code;
    if (replica.started_at) row["startedAt"] = FormatTime(*replica.started_at);
    if (replica.finished_at) row["finishedAt"] = FormatTime(*replica.finished_at);
    table.push_back(row);
  }
  std::string text = table.dump(2) + "\n";
  std::filesystem::path path = store_.JobDirectory(key_) / "replicas.json";
  StatusOr<std::string> current = ReadWholeFile(path);
  if (current.ok() && *current == text) return Status::OK();
  return WriteFileAtomically(path, text);
}

void LocalExecutor::WaitForWork(std::optional<Time> wake_at) {
  // Never sleep longer than a second: cheap, and it bounds any missed wake-up.
  auto timeout = std::chrono::milliseconds(observer_.on_tick ? 100 : 1000);
  if (wake_at) {
    auto until = std::chrono::duration_cast<std::chrono::milliseconds>(*wake_at - Clock::now());
    timeout =
        std::clamp(until + std::chrono::milliseconds(1), std::chrono::milliseconds(0), timeout);
  }
  pollfd descriptor{wake_pipe[0], POLLIN, 0};
  poll(&descriptor, 1, static_cast<int>(timeout.count()));
  char drain[64];
  while (read(wake_pipe[0], drain, sizeof drain) > 0) {
  }
}

std::chrono::seconds LocalExecutor::GracePeriod(const std::string& replica_type) const {
  const nlohmann::json& raw = job_.replica_specs.at(replica_type).template_spec.raw;
  const nlohmann::json::json_pointer pointer("/spec/terminationGracePeriodSeconds");
  if (raw.is_object() && raw.contains(pointer) && raw.at(pointer).is_number_integer()) {
    return std::chrono::seconds(std::max<int64_t>(0, raw.at(pointer).get<int64_t>()));
  }
  return std::chrono::seconds(30);  // Kubernetes' default terminationGracePeriodSeconds
}

}  // namespace cohort::exec
