// `cohort operator`'s Operator against a real Kubernetes API server
// (tests/testing/kube_test_cluster.h) with the CRD Cohort ships (deploy/kubernetes/crd.yaml),
// through HttpApi, and with kubectl as an independent client in the same tests: jobs are applied
// with `kubectl apply -f`, and what the operator did is read back with `kubectl get tfjobs` (the
// STATE column), `kubectl describe tfjob` (conditions and events) and `kubectl get pods`. The test
// plays the kubelet by patching pod /status (phases, exit codes, signals, restart counts). Covered:
// every restart policy, backoffLimit, activeDeadlineSeconds, cleanPodPolicy, suspend and resume,
// TTL, successPolicy, a hung worker terminated on its peer's report, an operator restart in the
// middle of a job, two operators and one Lease, a 409 Conflict on a status write and an expired
// (410) watch, both forced by the test, gang scheduling against the PodGroup APIs of Volcano and
// scheduler-plugins (their CRDs' shapes, tests/data/kube), each job's Secret (its owner, its pods'
// references, two jobs' secrets apart, deleted with its job), and an operator holding only the
// rights deploy/kubernetes grants. Each test works in a namespace of its own.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "base/file.h"
#include "job/pytorchjob.h"
#include "job/tfjob.h"
#include "kube/client/base64.h"
#include "kube/client/http_api.h"
#include "kube/client/kubeconfig.h"
#include "kube/objects/objects.h"
#include "kube/operator/operator.h"
#include "kube/operator/replica_objects.h"
#include "testing/kube_test_cluster.h"
#include "testing/processes.h"
#include "testing/wait.h"

namespace cohort::kube {
namespace {

using namespace std::chrono_literals;
using cohort::testing::KubeClusterTest;
using cohort::testing::KubectlResult;
using cohort::testing::WaitForChild;
using cohort::testing::WaitForChildOrSignal;
using cohort::testing::WaitUntil;

constexpr auto kWait = std::chrono::milliseconds(60000);

std::string NamespaceOfThisTest() {
  std::string name = ::testing::UnitTest::GetInstance()->current_test_info()->name();
  for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return ("op-" + name).substr(0, 63);
}

// An Api that passes every call to another, for the tests that force what a real cluster does
// only now and then: a write that loses a race (409) and a watch that starts from a version the
// server no longer keeps (410). Both are answered by the real server; the decorator only arranges
// the circumstances.
class CircumstantialApi : public Api {
 public:
  explicit CircumstantialApi(Api& inner) : inner_(inner) {}

  // Before the next status write of a TFJob, another client changes the TFJob (a label), so the
  // write carries a stale resourceVersion and the server answers 409 Conflict.
  void RaceTheNextStatusWrite() { race_next_status_write_ = true; }
  // The next watch of TFJobs asks for resourceVersion 1, older than anything the server keeps:
  // the server answers 410 Gone.
  void ExpireTheNextJobWatch() { expire_next_job_watch_ = true; }
  int Conflicts() const { return conflicts_.load(); }
  int Expiries() const { return expiries_.load(); }

  StatusOr<nlohmann::json> Get(const Resource& resource, const std::string& namespace_name,
                               const std::string& name) override {
    return inner_.Get(resource, namespace_name, name);
  }
  StatusOr<ObjectList> List(const Resource& resource, const std::string& namespace_name,
                            const Selector& selector) override {
    return inner_.List(resource, namespace_name, selector);
  }
  StatusOr<nlohmann::json> Create(const Resource& resource, const std::string& namespace_name,
                                  const nlohmann::json& object) override {
    return inner_.Create(resource, namespace_name, object);
  }
  StatusOr<nlohmann::json> Update(const Resource& resource, const std::string& namespace_name,
                                  const nlohmann::json& object, bool status_subresource) override {
    if (status_subresource && resource.plural == JobResource(job::TFJobKind()).plural &&
        race_next_status_write_.exchange(false)) {
      const std::string name = object["metadata"].value("name", "");
      StatusOr<nlohmann::json> changed =
          inner_.Patch(resource, namespace_name, name,
                       {{"metadata", {{"labels", {{"changed-by", "another-client"}}}}}}, false);
      if (!changed.ok()) return changed.status();
      StatusOr<nlohmann::json> written =
          inner_.Update(resource, namespace_name, object, status_subresource);
      if (!written.ok() && written.status().code() == Status::Code::kAborted) ++conflicts_;
      return written;
    }
    return inner_.Update(resource, namespace_name, object, status_subresource);
  }
  StatusOr<nlohmann::json> Patch(const Resource& resource, const std::string& namespace_name,
                                 const std::string& name, const nlohmann::json& patch,
                                 bool status_subresource) override {
    return inner_.Patch(resource, namespace_name, name, patch, status_subresource);
  }
  Status Delete(const Resource& resource, const std::string& namespace_name,
                const std::string& name, const DeleteOptions& options) override {
    return inner_.Delete(resource, namespace_name, name, options);
  }
  Status Watch(const Resource& resource, const std::string& namespace_name,
               const Selector& selector, const std::string& resource_version,
               std::chrono::seconds timeout,
               const std::function<bool(const WatchEvent&)>& on_event) override {
    if (resource.plural == JobResource(job::TFJobKind()).plural &&
        expire_next_job_watch_.exchange(false)) {
      Status watched = inner_.Watch(resource, namespace_name, selector, "1", timeout, on_event);
      if (watched.code() == Status::Code::kOutOfRange) ++expiries_;
      return watched;
    }
    return inner_.Watch(resource, namespace_name, selector, resource_version, timeout, on_event);
  }
  StatusOr<std::string> PodLog(const std::string& namespace_name, const std::string& pod,
                               const LogOptions& options) override {
    return inner_.PodLog(namespace_name, pod, options);
  }

 private:
  Api& inner_;
  std::atomic<bool> race_next_status_write_{false};
  std::atomic<bool> expire_next_job_watch_{false};
  std::atomic<int> conflicts_{0};
  std::atomic<int> expiries_{0};
};

class OperatorClusterTest : public KubeClusterTest {
 protected:
  void SetUp() override {
    KubeClusterTest::SetUp();
    if (IsSkipped() || HasFailure()) return;
    namespace_ = NamespaceOfThisTest();
    Status created = cluster().CreateNamespace(namespace_);
    ASSERT_TRUE(created.ok()) << created.ToString();
    // The CRD Cohort ships (`cohort crd`). The test server is v1.20, which predates its CEL rules
    // (x-kubernetes-validations): kubectl's client-side validation would refuse them and the
    // server drops them, so it is applied without client-side validation.
    StatusOr<std::string> crd =
        ReadWholeFile(std::string(COHORT_TEST_DATA_DIR) + "/../../deploy/kubernetes/crd.yaml");
    ASSERT_TRUE(crd.ok()) << crd.status().ToString();
    KubectlResult applied = cluster().Kubectl("apply --validate=false -f -", *crd);
    ASSERT_TRUE(applied.ok()) << applied.Describe();
    KubectlResult established = cluster().Kubectl(
        "wait --for=condition=Established --timeout=60s crd/tfjobs.kubeflow.org "
        "crd/pytorchjobs.kubeflow.org");
    ASSERT_TRUE(established.ok()) << established.Describe();
    StatusOr<ConnectionConfig> config = LoadKubeconfig({cluster().admin_kubeconfig()}, "");
    ASSERT_TRUE(config.ok()) << config.status().ToString();
    http_api_ = std::make_unique<HttpApi>(*config, HttpApiOptions{});
    api_ = std::make_unique<CircumstantialApi>(*http_api_);
  }

  void TearDown() override {
    if (operator_) operator_->Stop();
  }

  OperatorOptions Options(const std::string& identity) {
    OperatorOptions options;
    options.namespace_name = namespace_;
    options.identity = identity;
    options.informer.watch_timeout = 2s;
    options.informer.retry_delay = 200ms;
    options.queue_poll = 50ms;
    LeaderElectionOptions lease;
    lease.lease_namespace = namespace_;
    lease.identity = identity;
    lease.retry_period = 1s;
    options.leader_election = lease;
    return options;
  }

  std::unique_ptr<Operator> NewOperator(const std::string& identity) {
    return std::make_unique<Operator>(*api_, KubeObjectBuilders(), Options(identity));
  }

  void StartOperator() {
    operator_ = NewOperator("operator-under-test");
    operator_->Start();
  }

  // `kubectl -n <namespace> ARGUMENTS`.
  KubectlResult Kubectl(const std::string& arguments, const std::string& stdin_text = "") {
    return cluster().Kubectl("-n " + namespace_ + " " + arguments, stdin_text);
  }

  // A TFJob of `replicas` ("Worker: 2, PS: 1"), each replica with `restart_policy`, with
  // `run_policy` lines (already indented for runPolicy) and `spec_lines` (for spec), applied
  // with `kubectl apply -f -`.
  void ApplyJob(const std::string& name, const std::vector<std::pair<std::string, int>>& replicas,
                const std::string& restart_policy, const std::string& run_policy = "",
                const std::string& spec_lines = "") {
    std::string manifest = "apiVersion: kubeflow.org/v1\nkind: TFJob\nmetadata:\n  name: " + name +
                           "\nspec:\n" + spec_lines;
    if (!run_policy.empty()) manifest += "  runPolicy:\n" + run_policy;
    manifest += "  tfReplicaSpecs:\n";
    for (const auto& [type, count] : replicas) {
      manifest += "    " + type + ":\n      replicas: " + std::to_string(count) +
                  "\n      restartPolicy: " + restart_policy +
                  "\n      template:\n        spec:\n          automountServiceAccountToken: "
                  "false\n          containers:\n          - name: tensorflow\n            image: "
                  "cohort-test/none\n";
    }
    KubectlResult applied = Kubectl("apply -f -", manifest);
    ASSERT_TRUE(applied.ok()) << applied.Describe() << "\n" << manifest;
  }

  // The STATE column of `kubectl get tfjobs` (or of `resource`) for `job` ("" while it has none,
  // "<absent>" once the job is not listed).
  std::string State(const std::string& job, const std::string& resource = "tfjobs") {
    KubectlResult listed = Kubectl("get " + resource);
    if (!listed.ok()) return "<error: " + listed.Describe() + ">";
    if (listed.out.empty()) return "<absent>";  // "No resources found" on standard error
    std::istringstream lines(listed.out);
    std::string line;
    std::getline(lines, line);
    if (line.rfind("NAME", 0) != 0 || line.find("STATE") == std::string::npos) {
      return "<no STATE column: " + line + ">";
    }
    while (std::getline(lines, line)) {
      std::istringstream columns(line);
      std::string name, state, age;
      columns >> name >> state >> age;
      if (name != job) continue;
      return age.empty() ? "" : state;  // a job with no condition yet shows <none> only in AGE
    }
    return "<absent>";
  }

  bool StateBecomes(const std::string& job, const std::string& state,
                    const std::string& resource = "tfjobs") {
    const bool reached = WaitUntil([&] { return State(job, resource) == state; }, kWait);
    if (!reached)
      ADD_FAILURE() << job << " never showed STATE " << state << " in `kubectl get " << resource
                    << "` (last: " << State(job, resource) << ")";
    return reached;
  }

  // `kubectl describe tfjob JOB`.
  std::string Describe(const std::string& job) {
    KubectlResult described = Kubectl("describe tfjob " + job);
    EXPECT_TRUE(described.ok()) << described.Describe();
    return described.out;
  }

  // The pods `kubectl get pods` lists, by name.
  std::vector<std::string> Pods() {
    KubectlResult listed = Kubectl("get pods --no-headers");
    std::vector<std::string> names;
    if (!listed.ok()) return {"<error: " + listed.Describe() + ">"};
    std::istringstream lines(listed.out);
    std::string line;
    while (std::getline(lines, line)) {
      std::istringstream columns(line);
      std::string name;
      columns >> name;
      if (!name.empty()) names.push_back(name);
    }
    return names;
  }

  bool PodsBecome(const std::vector<std::string>& names) {
    return WaitUntil([&] { return Pods() == names; }, kWait);
  }

  std::optional<nlohmann::json> Get(const Resource& resource, const std::string& name) {
    StatusOr<nlohmann::json> object = http_api_->Get(resource, namespace_, name);
    if (!object.ok()) return std::nullopt;
    return *object;
  }

  std::string Condition(const std::string& job, const std::string& type) {
    std::optional<nlohmann::json> tfjob = Get(JobResource(job::TFJobKind()), job);
    if (!tfjob || !(*tfjob)["status"].is_object()) return "";
    for (const nlohmann::json& condition :
         (*tfjob)["status"].value("conditions", nlohmann::json::array())) {
      if (condition.value("type", "") == type) return condition.value("status", "");
    }
    return "";
  }

  int ReplicaCount(const std::string& job, const std::string& type, const std::string& what) {
    std::optional<nlohmann::json> tfjob = Get(JobResource(job::TFJobKind()), job);
    if (!tfjob) return -1;
    const nlohmann::json& statuses = (*tfjob)["status"]["replicaStatuses"];
    if (!statuses.is_object() || !statuses.contains(type)) return 0;
    return statuses[type].value(what, 0);
  }

  std::string PodUid(const std::string& pod) {
    std::optional<nlohmann::json> object = Get(PodResource(), pod);
    return object ? (*object)["metadata"].value("uid", "") : "";
  }

  // The kubelet's part: the pod's tensorflow container runs (restartCount as it was).
  void Run(const std::string& pod) {
    const std::string now = FormatTime(Clock::now());
    PatchPodStatus(pod, "Running", RestartCount(pod), {{"running", {{"startedAt", now}}}}, nullptr);
  }

  // The container ends with `exit_code` (or, with `signal`, is killed by it and reports exit code
  // 128 + signal as a runtime does); the pod's restartPolicy decides what follows, as the kubelet
  // does: Never and ExitCode end the pod (Succeeded or Failed), OnFailure restarts a failure in
  // place and Always every exit (restartCount + 1, running again). `message` is what the
  // container left in its termination-message file.
  void Exit(const std::string& pod, int exit_code, int signal = 0,
            const std::string& message = "") {
    std::optional<nlohmann::json> object = Get(PodResource(), pod);
    ASSERT_TRUE(object) << "no pod " << pod;
    const std::string policy = (*object)["spec"].value("restartPolicy", "Never");
    const bool failed = exit_code != 0 || signal != 0;
    const bool in_place = policy == "Always" || (policy == "OnFailure" && failed);
    const std::string now = FormatTime(Clock::now());
    nlohmann::json terminated = {{"exitCode", exit_code},
                                 {"reason", failed ? "Error" : "Completed"},
                                 {"startedAt", now},
                                 {"finishedAt", now}};
    if (signal != 0) terminated["signal"] = signal;
    if (!message.empty()) terminated["message"] = message;
    const int restarts = RestartCount(pod);
    if (in_place) {
      PatchPodStatus(pod, "Running", restarts + 1, {{"running", {{"startedAt", now}}}},
                     {{"terminated", terminated}});
    } else {
      PatchPodStatus(pod, failed ? "Failed" : "Succeeded", restarts, {{"terminated", terminated}},
                     nullptr);
    }
  }

  int RestartCount(const std::string& pod) {
    std::optional<nlohmann::json> object = Get(PodResource(), pod);
    if (!object || !(*object)["status"].contains("containerStatuses")) return 0;
    return (*object)["status"]["containerStatuses"][0].value("restartCount", 0);
  }

  void PatchPodStatus(const std::string& pod, const std::string& phase, int restart_count,
                      const nlohmann::json& state, const nlohmann::json& last_state) {
    // The pod's first container: the job kind's (tensorflow, pytorch).
    std::string name = "tensorflow";
    if (std::optional<nlohmann::json> object = Get(PodResource(), pod)) {
      const nlohmann::json& containers = (*object)["spec"]["containers"];
      if (containers.is_array() && !containers.empty()) name = containers[0].value("name", name);
    }
    nlohmann::json container = {{"name", name},
                                {"image", "cohort-test/none"},
                                {"imageID", ""},
                                {"ready", phase == "Running"},
                                {"restartCount", restart_count},
                                {"state", state}};
    if (!last_state.is_null()) container["lastState"] = last_state;
    nlohmann::json status = {{"status",
                              {{"phase", phase},
                               {"startTime", FormatTime(Clock::now())},
                               {"containerStatuses", {container}}}}};
    StatusOr<nlohmann::json> patched =
        http_api_->Patch(PodResource(), namespace_, pod, status, true);
    ASSERT_TRUE(patched.ok()) << patched.status().ToString();
  }

  int Events(const std::string& reason) {
    StatusOr<ObjectList> events = http_api_->List(EventResource(), namespace_);
    if (!events.ok()) return 0;
    int count = 0;
    for (const nlohmann::json& event : events->items) {
      if (event.value("reason", "") == reason) count += event.value("count", 1);
    }
    return count;
  }

  // `cohort operator` as a child process for this namespace, with leader election, its standard
  // error in `log`; it dies with the test.
  pid_t StartOperatorCommand(const std::string& pod_name, const std::string& log) {
    const std::string binary = std::string(COHORT_BINARY_DIR) + "/apps/cohort/cohort";
    const std::string kubeconfig = "--kubeconfig=" + cluster().admin_kubeconfig().string();
    const std::string watched = "--namespace=" + namespace_;
    const std::string lease = "--lease-namespace=" + namespace_;
    const std::string pod_env = "POD_NAME=" + pod_name;
    const pid_t pid = fork();
    if (pid == 0) {
      prctl(PR_SET_PDEATHSIG, SIGKILL);
      const int fd = open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      if (fd >= 0) dup2(fd, STDERR_FILENO);
      putenv(const_cast<char*>(pod_env.c_str()));
      execl(binary.c_str(), binary.c_str(), "operator", kubeconfig.c_str(), watched.c_str(),
            "--leader-elect", lease.c_str(), static_cast<char*>(nullptr));
      _exit(127);
    }
    return pid;
  }

  // Installs a CustomResourceDefinition from tests/data/kube and waits until it is served.
  void InstallCrd(const std::string& file, const std::string& name) {
    StatusOr<std::string> crd = ReadWholeFile(std::string(COHORT_TEST_DATA_DIR) + "/kube/" + file);
    ASSERT_TRUE(crd.ok()) << crd.status().ToString();
    KubectlResult applied = cluster().Kubectl("apply -f -", *crd);
    ASSERT_TRUE(applied.ok()) << applied.Describe();
    KubectlResult established =
        cluster().Kubectl("wait --for=condition=Established --timeout=60s crd/" + name);
    ASSERT_TRUE(established.ok()) << established.Describe();
  }

  // A gang-scheduled TFJob: 2 workers of 1 CPU and 1Gi each, with `scheduling_policy` lines
  // (already indented for schedulingPolicy).
  void ApplyGangJob(const std::string& name, const std::string& scheduling_policy) {
    std::string manifest = "apiVersion: kubeflow.org/v1\nkind: TFJob\nmetadata:\n  name: " + name +
                           "\nspec:\n  runPolicy:\n    schedulingPolicy:\n" + scheduling_policy +
                           "  tfReplicaSpecs:\n    Worker:\n      replicas: 2\n"
                           "      restartPolicy: Never\n      template:\n        spec:\n"
                           "          automountServiceAccountToken: false\n"
                           "          containers:\n          - name: tensorflow\n"
                           "            image: cohort-test/none\n            resources:\n"
                           "              requests: {cpu: \"1\", memory: 1Gi}\n";
    KubectlResult applied = Kubectl("apply -f -", manifest);
    ASSERT_TRUE(applied.ok()) << applied.Describe() << "\n" << manifest;
  }

  // Both workers of `job` run and succeed; the job then shows Succeeded.
  void RunBothWorkersToSuccess(const std::string& job) {
    for (const std::string& pod : {job + "-worker-0", job + "-worker-1"}) Run(pod);
    ASSERT_TRUE(StateBecomes(job, "Running"));
    for (const std::string& pod : {job + "-worker-0", job + "-worker-1"}) Exit(pod, 0);
    ASSERT_TRUE(StateBecomes(job, "Succeeded"));
  }

  std::string namespace_;
  std::unique_ptr<HttpApi> http_api_;
  std::unique_ptr<CircumstantialApi> api_;
  std::unique_ptr<Operator> operator_;
};

std::string LogOf(const std::string& path) {
  StatusOr<std::string> text = ReadWholeFile(path);
  return text.ok() ? *text : text.status().ToString();
}

bool Contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST_F(OperatorClusterTest, RunsAJobToSuccess) {
  StartOperator();
  ApplyJob("mnist", {{"Worker", 1}}, "Never");
  ASSERT_TRUE(WaitUntil([&] { return Get(PodResource(), "mnist-worker-0").has_value(); }, kWait));
  EXPECT_TRUE(Get(ServiceResource(), "mnist-worker-0").has_value());
  ASSERT_TRUE(StateBecomes("mnist", "Created"));
  EXPECT_EQ(Pods(), std::vector<std::string>{"mnist-worker-0"});
  Run("mnist-worker-0");
  ASSERT_TRUE(StateBecomes("mnist", "Running"));
  Exit("mnist-worker-0", 0);
  ASSERT_TRUE(StateBecomes("mnist", "Succeeded"));
  ASSERT_TRUE(WaitUntil([&] { return Events("TFJobSucceeded") == 1; }, kWait));
  EXPECT_EQ(Events("SuccessfulCreatePod"), 1);
  const std::string described = Describe("mnist");
  EXPECT_TRUE(Contains(described, "Conditions:")) << described;
  EXPECT_TRUE(Contains(described, "TFJobSucceeded")) << described;
  EXPECT_TRUE(Contains(described, "SuccessfulCreatePod")) << described;
  std::optional<nlohmann::json> lease = Get(LeaseResource(), "cohort-operator");
  ASSERT_TRUE(lease);
  EXPECT_EQ((*lease)["spec"]["holderIdentity"], "operator-under-test");
}

// A PyTorchJob (kubectl apply -f, as Kubeflow's examples are written) to Succeeded, with the test
// as kubelet running each pod's container command for real: a shell script that checks the
// environment the operator gave it (MASTER_ADDR, MASTER_PORT, WORLD_SIZE, RANK) and exits 0 only
// when it is right, run with exactly the pod's environment variables.
TEST_F(OperatorClusterTest, RunsAPyTorchJobWhosePodsCheckTheirEnvironmentToSuccess) {
  StartOperator();
  const std::string check =
      "test \"$MASTER_ADDR\" = torch-master-0 && test \"$MASTER_PORT\" = 23456 && "
      "test \"$WORLD_SIZE\" = 3 && case \"$RANK\" in 0|1|2) echo rank $RANK ;; *) exit 1 ;; esac";
  std::string manifest =
      "apiVersion: kubeflow.org/v1\nkind: PyTorchJob\nmetadata:\n  name: torch\nspec:\n"
      "  pytorchReplicaSpecs:\n";
  for (const auto& [type, count] :
       std::vector<std::pair<std::string, int>>{{"Master", 1}, {"Worker", 2}}) {
    manifest += "    " + type + ":\n      replicas: " + std::to_string(count) +
                "\n      template:\n        spec:\n          automountServiceAccountToken: "
                "false\n          containers:\n          - name: pytorch\n            image: "
                "cohort-test/none\n            command: [\"sh\", \"-c\", " +
                nlohmann::json(check).dump() + "]\n";
  }
  KubectlResult applied = Kubectl("apply -f -", manifest);
  ASSERT_TRUE(applied.ok()) << applied.Describe() << "\n" << manifest;
  const std::vector<std::string> pods = {"torch-master-0", "torch-worker-0", "torch-worker-1"};
  ASSERT_TRUE(PodsBecome(pods));
  ASSERT_TRUE(StateBecomes("torch", "Created", "pytorchjobs"));
  for (const std::string& pod : pods) Run(pod);
  ASSERT_TRUE(StateBecomes("torch", "Running", "pytorchjobs"));

  // The kubelet's part: each pod's command, with the pod's environment only, and its exit code.
  std::vector<std::string> ranks;
  for (const std::string& pod : {"torch-worker-0", "torch-worker-1", "torch-master-0"}) {
    std::optional<nlohmann::json> object = Get(PodResource(), pod);
    ASSERT_TRUE(object) << pod;
    const nlohmann::json& container = (*object)["spec"]["containers"][0];
    ASSERT_EQ(container["name"], "pytorch") << pod;
    std::string command = "env -i";
    for (const nlohmann::json& variable : container.value("env", nlohmann::json::array())) {
      command += " " + cohort::testing::ShellQuote(variable.value("name", "") + "=" +
                                                   variable.value("value", ""));
    }
    for (const nlohmann::json& argument : container["command"]) {
      command += " " + cohort::testing::ShellQuote(argument.get<std::string>());
    }
    cohort::testing::CommandResult ran = cohort::testing::RunCommand(command);
    EXPECT_EQ(ran.exit_code, 0) << pod << ": " << ran.output << "\n" << container.dump(2);
    ranks.push_back(ran.output);
    Exit(pod, ran.exit_code);
  }
  EXPECT_EQ(ranks, (std::vector<std::string>{"rank 1\n", "rank 2\n", "rank 0\n"}));
  ASSERT_TRUE(StateBecomes("torch", "Succeeded", "pytorchjobs"));
  ASSERT_TRUE(WaitUntil([&] { return Events("PyTorchJobSucceeded") == 1; }, kWait));
  EXPECT_EQ(Events("SuccessfulCreatePod"), 3);
  EXPECT_EQ(Events("TFJobSucceeded"), 0);
  KubectlResult described = Kubectl("describe pytorchjob torch");
  ASSERT_TRUE(described.ok()) << described.Describe();
  EXPECT_TRUE(Contains(described.out, "PyTorchJobSucceeded")) << described.out;
  EXPECT_TRUE(Contains(described.out, "pytorchjob-controller")) << described.out;
  // The workers wait for the master's name, as Kubeflow's do.
  std::optional<nlohmann::json> worker = Get(PodResource(), "torch-worker-0");
  ASSERT_TRUE(worker);
  EXPECT_EQ((*worker)["spec"]["initContainers"][0]["name"], "init-pytorch");
}

TEST_F(OperatorClusterTest, NeverFailsTheJobOnAFailedPodAndLeavesIt) {
  StartOperator();
  ApplyJob("never", {{"Worker", 2}}, "Never");
  ASSERT_TRUE(PodsBecome({"never-worker-0", "never-worker-1"}));
  Run("never-worker-0");
  Run("never-worker-1");
  ASSERT_TRUE(StateBecomes("never", "Running"));
  Exit("never-worker-1", 3);
  ASSERT_TRUE(StateBecomes("never", "Failed"));
  const std::string described = Describe("never");
  EXPECT_TRUE(Contains(described, "1 Worker replica(s) failed")) << described;
  EXPECT_TRUE(Contains(described, "TFJobFailed")) << described;
  // cleanPodPolicy defaults to None: both pods stay, and none was created again.
  EXPECT_EQ(Pods(), (std::vector<std::string>{"never-worker-0", "never-worker-1"}));
  EXPECT_EQ(Events("SuccessfulCreatePod"), 2);
}

TEST_F(OperatorClusterTest, ExitCodeRecreatesARetryableExitAndFailsOnAPermanentOne) {
  StartOperator();
  ApplyJob("retry", {{"Worker", 1}}, "ExitCode");
  ASSERT_TRUE(WaitUntil([&] { return !PodUid("retry-worker-0").empty(); }, kWait));
  const std::string first_uid = PodUid("retry-worker-0");
  Run("retry-worker-0");
  ASSERT_TRUE(StateBecomes("retry", "Running"));
  Exit("retry-worker-0", 137, 9);  // SIGKILL: retryable
  ASSERT_TRUE(WaitUntil(
      [&] {
        const std::string uid = PodUid("retry-worker-0");
        return !uid.empty() && uid != first_uid;
      },
      kWait))
      << "the pod killed by SIGKILL was never created again";
  EXPECT_EQ(Annotation(*Get(PodResource(), "retry-worker-0"), kRestartsAnnotation), "1");
  ASSERT_TRUE(WaitUntil([&] { return Events("TFJobRestarting") == 1; }, kWait));
  Run("retry-worker-0");
  ASSERT_TRUE(StateBecomes("retry", "Running"));
  Exit("retry-worker-0", 1);  // a permanent code
  ASSERT_TRUE(StateBecomes("retry", "Failed"));
  EXPECT_EQ(Events("SuccessfulCreatePod"), 2);
}

// worker-0 gives up on a hung worker-1 (138 and a peer report): worker-1's pod is deleted and
// re-created, and worker-0's re-created pod carries its group restart.
TEST_F(OperatorClusterTest, TerminatesAHungWorkerAndRestartsBoth) {
  StartOperator();
  ApplyJob("hung", {{"Worker", 2}}, "ExitCode");
  ASSERT_TRUE(WaitUntil([&] { return !PodUid("hung-worker-1").empty(); }, kWait));
  ASSERT_TRUE(WaitUntil([&] { return !PodUid("hung-worker-0").empty(); }, kWait));
  const nlohmann::json hung_pod = *Get(PodResource(), "hung-worker-1");
  bool names_the_path = false;
  for (const nlohmann::json& env : hung_pod["spec"]["containers"][0]["env"]) {
    names_the_path =
        names_the_path || (env.value("name", "") == "COHORT_TERMINATION_MESSAGE_PATH" &&
                           env.value("value", "") == "/dev/termination-log");
  }
  EXPECT_TRUE(names_the_path) << hung_pod.dump();
  const std::string hung_uid = PodUid("hung-worker-1");
  const std::string reporter_uid = PodUid("hung-worker-0");
  Run("hung-worker-0");
  Run("hung-worker-1");
  ASSERT_TRUE(StateBecomes("hung", "Running"));
  Exit("hung-worker-0", 138, 0, "peer worker:1 hung (no heartbeat for 30 s)");
  ASSERT_TRUE(WaitUntil(
      [&] {
        const std::string uid = PodUid("hung-worker-1");
        return !uid.empty() && uid != hung_uid;
      },
      kWait))
      << "the hung worker's pod was never created again";
  ASSERT_TRUE(WaitUntil(
      [&] {
        const std::string uid = PodUid("hung-worker-0");
        return !uid.empty() && uid != reporter_uid;
      },
      kWait));
  EXPECT_EQ(Annotation(*Get(PodResource(), "hung-worker-1"), kRestartsAnnotation), "1");
  EXPECT_EQ(Annotation(*Get(PodResource(), "hung-worker-0"), kGroupRestartsAnnotation), "1");
  ASSERT_TRUE(WaitUntil([&] { return Events("Unhealthy") == 1; }, kWait));
  EXPECT_NE(Describe("hung").find("worker-1 hung (no heartbeat for 30 s), as worker-0 reported"),
            std::string::npos);
}

TEST_F(OperatorClusterTest, OnFailureRestartsInPlaceUntilTheBackoffLimit) {
  StartOperator();
  ApplyJob("inplace", {{"Worker", 1}}, "OnFailure", "    backoffLimit: 2\n");
  ASSERT_TRUE(PodsBecome({"inplace-worker-0"}));
  const std::string uid = PodUid("inplace-worker-0");
  Run("inplace-worker-0");
  ASSERT_TRUE(StateBecomes("inplace", "Running"));
  const int syncs = operator_->Syncs();
  Exit("inplace-worker-0", 1);  // restartCount 1
  Exit("inplace-worker-0", 1);  // restartCount 2: the limit
  // The operator has looked at the job since (the pod's change wakes it) and lets it run on.
  ASSERT_TRUE(WaitUntil([&] { return operator_->Syncs() >= syncs + 2; }, kWait));
  ASSERT_TRUE(WaitUntil([&] { return ReplicaCount("inplace", "Worker", "active") == 1; }, kWait));
  EXPECT_EQ(State("inplace"), "Running");
  EXPECT_EQ(PodUid("inplace-worker-0"), uid);
  Exit("inplace-worker-0", 1);  // restartCount 3: past it
  ASSERT_TRUE(StateBecomes("inplace", "Failed"));
  EXPECT_TRUE(Contains(Describe("inplace"), "backoff limit")) << Describe("inplace");
  ASSERT_TRUE(PodsBecome({})) << "the replicas of a failed job are stopped";
  EXPECT_EQ(Events("SuccessfulCreatePod"), 1);
}

TEST_F(OperatorClusterTest, AlwaysRestartsEvenASuccessInPlace) {
  StartOperator();
  ApplyJob("always", {{"Worker", 1}}, "Always");
  ASSERT_TRUE(PodsBecome({"always-worker-0"}));
  Run("always-worker-0");
  ASSERT_TRUE(StateBecomes("always", "Running"));
  const int syncs = operator_->Syncs();
  Exit("always-worker-0", 0);
  ASSERT_TRUE(WaitUntil([&] { return RestartCount("always-worker-0") == 1; }, kWait));
  ASSERT_TRUE(WaitUntil([&] { return operator_->Syncs() > syncs; }, kWait))
      << "the operator never looked at the job after its container restarted";
  // The operator sees the restarted container and the job runs on.
  ASSERT_TRUE(WaitUntil([&] { return ReplicaCount("always", "Worker", "active") == 1; }, kWait));
  EXPECT_EQ(State("always"), "Running");
  EXPECT_NE(Condition("always", "Succeeded"), "True");
  EXPECT_EQ(Events("SuccessfulCreatePod"), 1);
}

TEST_F(OperatorClusterTest, ExitCodeRecreationsCountTowardsTheBackoffLimit) {
  StartOperator();
  ApplyJob("limited", {{"Worker", 1}}, "ExitCode", "    backoffLimit: 1\n");
  ASSERT_TRUE(WaitUntil([&] { return !PodUid("limited-worker-0").empty(); }, kWait));
  const std::string first_uid = PodUid("limited-worker-0");
  Run("limited-worker-0");
  Exit("limited-worker-0", 0, 15);  // SIGTERM with no exit code of its own: 143
  ASSERT_TRUE(WaitUntil(
      [&] {
        const std::string uid = PodUid("limited-worker-0");
        return !uid.empty() && uid != first_uid;
      },
      kWait));
  Run("limited-worker-0");
  Exit("limited-worker-0", 137, 9);
  ASSERT_TRUE(StateBecomes("limited", "Failed"));
  EXPECT_TRUE(Contains(Describe("limited"), "after 1 restart")) << Describe("limited");
}

TEST_F(OperatorClusterTest, ActiveDeadlineFailsTheJobAndStopsItsReplicas) {
  StartOperator();
  ApplyJob("deadline", {{"Worker", 2}}, "Never", "    activeDeadlineSeconds: 2\n");
  ASSERT_TRUE(PodsBecome({"deadline-worker-0", "deadline-worker-1"}));
  Run("deadline-worker-0");
  Run("deadline-worker-1");
  // Nothing else changes: the deadline alone ends the job.
  ASSERT_TRUE(StateBecomes("deadline", "Failed"));
  EXPECT_TRUE(Contains(Describe("deadline"), "active longer than specified deadline"))
      << Describe("deadline");
  ASSERT_TRUE(PodsBecome({}));
  KubectlResult pods = Kubectl("get pods");
  EXPECT_TRUE(Contains(pods.err, "No resources found")) << pods.Describe();
}

// Worker 0 succeeds while the PS still runs and worker 1 is still pending: Running deletes the
// PS and the pending worker, All deletes every pod.
TEST_F(OperatorClusterTest, CleanPodPolicyDeletesWhatItSaysOnceTheJobSucceeded) {
  StartOperator();
  ApplyJob("running", {{"PS", 1}, {"Worker", 2}}, "Never", "    cleanPodPolicy: Running\n");
  ApplyJob("all", {{"PS", 1}, {"Worker", 2}}, "Never", "    cleanPodPolicy: All\n");
  ASSERT_TRUE(PodsBecome({"all-ps-0", "all-worker-0", "all-worker-1", "running-ps-0",
                          "running-worker-0", "running-worker-1"}));
  for (const std::string job : {"running", "all"}) {
    Run(job + "-ps-0");
    Run(job + "-worker-0");
    Exit(job + "-worker-0", 0);
  }
  ASSERT_TRUE(StateBecomes("running", "Succeeded"));
  ASSERT_TRUE(StateBecomes("all", "Succeeded"));
  ASSERT_TRUE(PodsBecome({"running-worker-0"})) << "left: " << ::testing::PrintToString(Pods());
}

TEST_F(OperatorClusterTest, SuspendDeletesEveryPodAndResumeCreatesThemAgain) {
  StartOperator();
  ApplyJob("pause", {{"PS", 1}, {"Worker", 1}}, "Never");
  ASSERT_TRUE(PodsBecome({"pause-ps-0", "pause-worker-0"}));
  Run("pause-ps-0");
  Run("pause-worker-0");
  ASSERT_TRUE(StateBecomes("pause", "Running"));
  KubectlResult suspended =
      Kubectl(R"(patch tfjob pause --type=merge -p '{"spec":{"runPolicy":{"suspend":true}}}')");
  ASSERT_TRUE(suspended.ok()) << suspended.Describe();
  ASSERT_TRUE(StateBecomes("pause", "Suspended"));
  ASSERT_TRUE(PodsBecome({}));
  EXPECT_EQ(Condition("pause", "Running"), "False");
  KubectlResult resumed =
      Kubectl(R"(patch tfjob pause --type=merge -p '{"spec":{"runPolicy":{"suspend":false}}}')");
  ASSERT_TRUE(resumed.ok()) << resumed.Describe();
  ASSERT_TRUE(PodsBecome({"pause-ps-0", "pause-worker-0"}));
  ASSERT_TRUE(WaitUntil([&] { return Condition("pause", "Suspended") == "False"; }, kWait));
  ASSERT_TRUE(WaitUntil([&] { return Events("TFJobResumed") == 1; }, kWait));
  EXPECT_EQ(Events("TFJobSuspended"), 1);
  const std::string described = Describe("pause");
  EXPECT_TRUE(Contains(described, "TFJobSuspended")) << described;
  EXPECT_TRUE(Contains(described, "TFJobResumed")) << described;
}

TEST_F(OperatorClusterTest, TtlDeletesTheFinishedJob) {
  StartOperator();
  ApplyJob("ttl", {{"Worker", 1}}, "Never", "    ttlSecondsAfterFinished: 1\n");
  ASSERT_TRUE(PodsBecome({"ttl-worker-0"}));
  Run("ttl-worker-0");
  Exit("ttl-worker-0", 0);
  ASSERT_TRUE(StateBecomes("ttl", "Succeeded"));
  // The operator deletes it in the foreground a second later; the controller-manager's garbage
  // collector then removes its pod and service and last the job, once it has discovered the
  // TFJob resource (its discovery runs every 30 s, so this may take that long).
  ASSERT_TRUE(WaitUntil([&] { return Events("SuccessfulDeleteJob") == 1; }, kWait));
  ASSERT_TRUE(WaitUntil([&] { return State("ttl") == "<absent>"; }, 90s))
      << "the TFJob deleted after its TTL is still listed by `kubectl get tfjobs`";
  KubectlResult gone = Kubectl("get tfjob ttl");
  EXPECT_FALSE(gone.ok());
  EXPECT_TRUE(Contains(gone.err, "NotFound")) << gone.Describe();
  EXPECT_TRUE(PodsBecome({}));
}

TEST_F(OperatorClusterTest, SuccessPolicyAllWorkersWaitsForEveryWorker) {
  StartOperator();
  ApplyJob("every", {{"Worker", 2}}, "Never", "", "  successPolicy: AllWorkers\n");
  ASSERT_TRUE(PodsBecome({"every-worker-0", "every-worker-1"}));
  Run("every-worker-0");
  Run("every-worker-1");
  Exit("every-worker-0", 0);
  ASSERT_TRUE(WaitUntil([&] { return ReplicaCount("every", "Worker", "succeeded") == 1; }, kWait));
  EXPECT_EQ(State("every"), "Running");
  Exit("every-worker-1", 0);
  ASSERT_TRUE(StateBecomes("every", "Succeeded"));
}

// The operator goes away while a job runs; a pod fails meanwhile. The next operator carries on
// from what is on the server: it creates nothing twice and counts the restart.
TEST_F(OperatorClusterTest, ANewOperatorCarriesOnWhereTheLastStopped) {
  std::unique_ptr<Operator> first = NewOperator("operator-a");
  first->Start();
  ApplyJob("resume", {{"PS", 1}, {"Worker", 2}}, "ExitCode");
  ASSERT_TRUE(PodsBecome({"resume-ps-0", "resume-worker-0", "resume-worker-1"}));
  for (const char* pod : {"resume-ps-0", "resume-worker-0", "resume-worker-1"}) Run(pod);
  ASSERT_TRUE(StateBecomes("resume", "Running"));
  first->Stop();
  first.reset();
  const std::string first_uid = PodUid("resume-worker-1");
  Exit("resume-worker-1", 137, 9);
  operator_ = NewOperator("operator-b");
  operator_->Start();
  ASSERT_TRUE(WaitUntil(
      [&] {
        const std::string uid = PodUid("resume-worker-1");
        return !uid.empty() && uid != first_uid;
      },
      kWait));
  EXPECT_EQ(Annotation(*Get(PodResource(), "resume-worker-1"), kRestartsAnnotation), "1");
  Run("resume-worker-1");
  ASSERT_TRUE(WaitUntil([&] { return ReplicaCount("resume", "Worker", "active") == 2; }, kWait));
  EXPECT_EQ(State("resume"), "Running");
  EXPECT_EQ(Pods(),
            (std::vector<std::string>{"resume-ps-0", "resume-worker-0", "resume-worker-1"}));
  EXPECT_EQ(Events("SuccessfulCreatePod"), 4);  // three, and the one re-created
  EXPECT_EQ(Events("TFJobRestarting"), 1);
}

// The same through the real `cohort operator`: SIGTERM stops it cleanly (exit 0, the Lease
// released), a pod fails while no operator runs, and the next process carries the job on.
TEST_F(OperatorClusterTest, TheOperatorCommandStopsOnSigtermAndTheNextCarriesOn) {
  const std::string log = ::testing::TempDir() + "/" + namespace_ + "-operator.log";
  pid_t first = StartOperatorCommand("first", log);
  ASSERT_GT(first, 0);
  ApplyJob("command", {{"Worker", 2}}, "ExitCode");
  const bool created = PodsBecome({"command-worker-0", "command-worker-1"});
  if (!created) WaitForChildOrSignal(first, 1ms, SIGKILL);
  ASSERT_TRUE(created) << "cohort operator created no pods; its log:\n" << LogOf(log);
  Run("command-worker-0");
  Run("command-worker-1");
  ASSERT_TRUE(StateBecomes("command", "Running"));
  ASSERT_EQ(kill(first, SIGTERM), 0);
  const int stopped = WaitForChildOrSignal(first, 30s, SIGKILL);
  EXPECT_EQ(stopped, 0) << "cohort operator did not stop cleanly on SIGTERM; its log:\n"
                        << LogOf(log);
  std::optional<nlohmann::json> lease = Get(LeaseResource(), "cohort-operator");
  ASSERT_TRUE(lease);
  EXPECT_EQ((*lease)["spec"].value("holderIdentity", ""), "") << lease->dump();

  const std::string first_uid = PodUid("command-worker-1");
  Exit("command-worker-1", 137, 9);
  pid_t second = StartOperatorCommand("second", log);
  ASSERT_GT(second, 0);
  const bool recreated = WaitUntil(
      [&] {
        const std::string uid = PodUid("command-worker-1");
        return !uid.empty() && uid != first_uid;
      },
      kWait);
  if (recreated) {
    EXPECT_EQ(Annotation(*Get(PodResource(), "command-worker-1"), kRestartsAnnotation), "1");
    Run("command-worker-1");
    EXPECT_TRUE(WaitUntil([&] { return ReplicaCount("command", "Worker", "active") == 2; }, kWait));
    EXPECT_EQ(State("command"), "Running");
    EXPECT_EQ(Events("SuccessfulCreatePod"), 3);
  }
  ASSERT_EQ(kill(second, SIGTERM), 0);
  EXPECT_EQ(WaitForChildOrSignal(second, 30s, SIGKILL), 0);
  EXPECT_TRUE(recreated) << "the second cohort operator never re-created the killed pod; its log:\n"
                         << LogOf(log);
}

// Two operators, one Lease: only the holder creates anything; when it stops (releasing the
// Lease) the other takes over and carries the job on from what is on the server.
TEST_F(OperatorClusterTest, TheSecondOperatorTakesOverWhenTheLeaderStops) {
  std::unique_ptr<Operator> first = NewOperator("operator-one");
  first->Start();
  ASSERT_TRUE(WaitUntil([&] { return first->Acting(); }, kWait));
  std::unique_ptr<Operator> second = NewOperator("operator-two");
  second->Start();
  ApplyJob("handover", {{"Worker", 1}}, "Never");
  ASSERT_TRUE(PodsBecome({"handover-worker-0"}));
  ASSERT_TRUE(StateBecomes("handover", "Created"));
  EXPECT_FALSE(second->Acting());
  EXPECT_EQ(second->Syncs(), 0);
  first->Stop();
  ASSERT_TRUE(WaitUntil([&] { return second->Acting(); }, kWait));
  std::optional<nlohmann::json> lease = Get(LeaseResource(), "cohort-operator");
  ASSERT_TRUE(lease);
  EXPECT_EQ((*lease)["spec"]["holderIdentity"], "operator-two");
  EXPECT_EQ((*lease)["spec"]["leaseTransitions"], 1);
  KubectlResult leases = Kubectl("get leases");
  EXPECT_TRUE(Contains(leases.out, "cohort-operator")) << leases.Describe();
  EXPECT_TRUE(Contains(leases.out, "operator-two")) << leases.out;
  Run("handover-worker-0");
  Exit("handover-worker-0", 0);
  ASSERT_TRUE(StateBecomes("handover", "Succeeded"));
  EXPECT_EQ(Events("SuccessfulCreatePod"), 1);
  second->Stop();
}

// Another client changes the TFJob between the operator's read and its status write: the server
// answers 409 Conflict, and the operator writes again from a fresh read, losing neither write.
TEST_F(OperatorClusterTest, AStatusWriteThatLosesARaceIsWrittenAgain) {
  api_->RaceTheNextStatusWrite();
  StartOperator();
  ApplyJob("conflict", {{"Worker", 1}}, "Never");
  ASSERT_TRUE(StateBecomes("conflict", "Created"));
  EXPECT_EQ(api_->Conflicts(), 1);
  KubectlResult labels = Kubectl("get tfjob conflict --show-labels");
  EXPECT_TRUE(Contains(labels.out, "changed-by=another-client")) << labels.Describe();
  EXPECT_EQ(Pods(), std::vector<std::string>{"conflict-worker-0"});
  EXPECT_EQ(Events("SuccessfulCreatePod"), 1);
}

// A watch of TFJobs from a version the server no longer keeps: the server answers 410 Gone, and
// the operator lists again and misses nothing created meanwhile.
TEST_F(OperatorClusterTest, AnExpiredWatchListsAgainAndMissesNothing) {
  StartOperator();
  ApplyJob("before", {{"Worker", 1}}, "Never");
  ASSERT_TRUE(PodsBecome({"before-worker-0"}));
  const int lists = operator_->jobs(job::TFJobKind())->Lists();
  api_->ExpireTheNextJobWatch();
  ASSERT_TRUE(WaitUntil([&] { return api_->Expiries() == 1; }, kWait))
      << "the server never answered 410 to a watch from resourceVersion 1";
  ASSERT_TRUE(WaitUntil([&] { return operator_->jobs(job::TFJobKind())->Lists() > lists; }, kWait));
  ApplyJob("after", {{"Worker", 1}}, "Never");
  ASSERT_TRUE(PodsBecome({"after-worker-0", "before-worker-0"}));
  Run("before-worker-0");
  ASSERT_TRUE(StateBecomes("before", "Running"));
  EXPECT_EQ(Events("SuccessfulCreatePod"), 2);
}

const Resource kVolcanoPodGroups{"scheduling.volcano.sh", "v1beta1", "podgroups", "PodGroup", true};
const Resource kSchedulerPluginsPodGroups{"scheduling.x-k8s.io", "v1alpha1", "podgroups",
                                          "PodGroup", true};

// Gang scheduling with Volcano, against Volcano's PodGroup API on the real server: the PodGroup
// comes first, owned by the job, with the policy's fields where Volcano reads them; no pod is
// created until the test, playing Volcano, admits the group; the pods then name the group and the
// scheduler; the group goes when the job has succeeded.
TEST_F(OperatorClusterTest, GangSchedulesWithAVolcanoPodGroupTheServerAccepts) {
  InstallCrd("volcano-podgroup-crd.yaml", "podgroups.scheduling.volcano.sh");
  operator_ = std::make_unique<Operator>(*api_, KubeObjectBuilders(), [&] {
    OperatorOptions options = Options("operator-under-test");
    options.objects.gang_scheduler = "volcano";
    return options;
  }());
  operator_->Start();
  ApplyGangJob("gang", "      minAvailable: 2\n      queue: training\n");
  ASSERT_TRUE(WaitUntil([&] { return Get(kVolcanoPodGroups, "gang").has_value(); }, kWait))
      << "no PodGroup gang";
  const nlohmann::json group = *Get(kVolcanoPodGroups, "gang");
  EXPECT_EQ(group["spec"].value("minMember", 0), 2);
  EXPECT_EQ(group["spec"].value("queue", ""), "training");
  EXPECT_EQ(group["spec"]["minResources"], nlohmann::json({{"cpu", "2"}, {"memory", "2Gi"}}))
      << group.dump();
  ASSERT_EQ(group["metadata"]["ownerReferences"].size(), 1u) << group.dump();
  EXPECT_EQ(group["metadata"]["ownerReferences"][0].value("kind", ""), "TFJob");
  EXPECT_TRUE(group["metadata"]["ownerReferences"][0].value("controller", false));

  // Not admitted yet: no pod, however often the operator looks (it looks again every second).
  EXPECT_FALSE(WaitUntil([&] { return !Pods().empty(); }, 3s)) << "pods before admission";
  StatusOr<nlohmann::json> admitted = http_api_->Patch(kVolcanoPodGroups, namespace_, "gang",
                                                       {{"status", {{"phase", "Inqueue"}}}}, false);
  ASSERT_TRUE(admitted.ok()) << admitted.status().ToString();
  ASSERT_TRUE(PodsBecome({"gang-worker-0", "gang-worker-1"}));
  const nlohmann::json pod = *Get(PodResource(), "gang-worker-1");
  EXPECT_EQ(pod["spec"].value("schedulerName", ""), "volcano");
  EXPECT_EQ(pod["metadata"]["annotations"].value("scheduling.k8s.io/group-name", ""), "gang");
  EXPECT_EQ(pod["metadata"]["annotations"].value("volcano.sh/task-spec", ""), "worker");

  RunBothWorkersToSuccess("gang");
  ASSERT_TRUE(WaitUntil([&] { return !Get(kVolcanoPodGroups, "gang").has_value(); }, kWait))
      << "the PodGroup outlived the job";
  ASSERT_TRUE(WaitUntil([&] { return Events("SuccessfulDeletePodGroup") == 1; }, kWait));
}

// Gang scheduling with the scheduler-plugins coscheduling plugin: its PodGroup API on the real
// server, pods created at once (that scheduler holds them back itself), labelled with the group.
TEST_F(OperatorClusterTest, GangSchedulesWithASchedulerPluginsPodGroupTheServerAccepts) {
  InstallCrd("scheduler-plugins-podgroup-crd.yaml", "podgroups.scheduling.x-k8s.io");
  operator_ = std::make_unique<Operator>(*api_, KubeObjectBuilders(), [&] {
    OperatorOptions options = Options("operator-under-test");
    options.objects.gang_scheduler = "scheduler-plugins-scheduler";
    return options;
  }());
  operator_->Start();
  ApplyGangJob("coscheduled", "      minAvailable: 1\n      scheduleTimeoutSeconds: 120\n");
  ASSERT_TRUE(PodsBecome({"coscheduled-worker-0", "coscheduled-worker-1"}));
  std::optional<nlohmann::json> group = Get(kSchedulerPluginsPodGroups, "coscheduled");
  ASSERT_TRUE(group.has_value()) << "no PodGroup coscheduled";
  EXPECT_EQ((*group)["spec"].value("minMember", 0), 1);
  EXPECT_EQ((*group)["spec"].value("scheduleTimeoutSeconds", 0), 120);
  EXPECT_EQ((*group)["spec"]["minResources"], nlohmann::json({{"cpu", "1"}, {"memory", "1Gi"}}))
      << group->dump();
  const nlohmann::json pod = *Get(PodResource(), "coscheduled-worker-0");
  EXPECT_EQ(pod["spec"].value("schedulerName", ""), "scheduler-plugins-scheduler");
  EXPECT_EQ(pod["metadata"]["labels"].value("scheduling.x-k8s.io/pod-group", ""), "coscheduled");
  RunBothWorkersToSuccess("coscheduled");
  ASSERT_TRUE(
      WaitUntil([&] { return !Get(kSchedulerPluginsPodGroups, "coscheduled").has_value(); }, kWait))
      << "the PodGroup outlived the job";
}

// Every job gets a Secret of its own, read back with kubectl: owned by the job (controller
// reference), immutable, holding 256 random bits; every container of the job reads
// COHORT_JOB_SECRET from it; two jobs' secrets differ; the garbage collector deletes it with its
// job, and the other job's stays.
TEST_F(OperatorClusterTest, EveryJobGetsASecretOfItsOwnThatGoesWithIt) {
  StartOperator();
  ApplyJob("alpha", {{"PS", 1}, {"Worker", 2}}, "Never");
  ApplyJob("beta", {{"Worker", 1}}, "Never");
  ASSERT_TRUE(PodsBecome({"alpha-ps-0", "alpha-worker-0", "alpha-worker-1", "beta-worker-0"}))
      << ::testing::PrintToString(Pods());
  auto json_of = [&](const std::string& what) {
    KubectlResult got = Kubectl("get " + what + " -o json");
    EXPECT_TRUE(got.ok()) << got.Describe();
    return got.ok() ? nlohmann::json::parse(got.out) : nlohmann::json::object();
  };
  std::map<std::string, std::string> values;
  for (const std::string job : {"alpha", "beta"}) {
    const nlohmann::json secret = json_of("secret " + job + "-tfjob-secret");
    ASSERT_TRUE(secret.contains("metadata")) << job;
    const nlohmann::json owners = secret["metadata"].value("ownerReferences", nlohmann::json());
    ASSERT_TRUE(owners.is_array() && owners.size() == 1u) << secret.dump();
    EXPECT_EQ(owners[0]["uid"], json_of("tfjob " + job)["metadata"]["uid"]) << job;
    EXPECT_EQ(owners[0]["kind"], "TFJob");
    EXPECT_EQ(owners[0].value("controller", false), true);
    EXPECT_EQ(secret.value("type", ""), "Opaque");
    EXPECT_EQ(secret.value("immutable", false), true) << secret.dump();
    StatusOr<std::string> value = DecodeBase64(
        secret.value("data", nlohmann::json::object()).value("COHORT_JOB_SECRET", ""), job);
    ASSERT_TRUE(value.ok()) << value.status().ToString();
    EXPECT_EQ(value->size(), 64u) << "256 bits in hex";
    values[job] = *value;
  }
  EXPECT_NE(values["alpha"], values["beta"]) << "two jobs share a secret";
  for (const std::string pod :
       {"alpha-ps-0", "alpha-worker-0", "alpha-worker-1", "beta-worker-0"}) {
    const nlohmann::json env = json_of("pod " + pod)["spec"]["containers"][0]["env"];
    const std::string job = pod.substr(0, pod.find('-'));
    bool found = false;
    for (const nlohmann::json& variable : env) {
      if (variable.value("name", "") != "COHORT_JOB_SECRET") continue;
      found = true;
      EXPECT_EQ(variable["valueFrom"]["secretKeyRef"],
                nlohmann::json({{"name", job + "-tfjob-secret"}, {"key", "COHORT_JOB_SECRET"}}))
          << pod;
    }
    EXPECT_TRUE(found) << pod << " does not read COHORT_JOB_SECRET: " << env.dump();
  }
  // Immutable: a replica re-created later reads what its peers read.
  KubectlResult changed = Kubectl(
      R"(patch secret beta-tfjob-secret --type=merge -p '{"data":{"COHORT_JOB_SECRET":"eA=="}}')");
  EXPECT_FALSE(changed.ok()) << "the job secret could be changed under the running job";

  KubectlResult deleted = Kubectl("delete tfjob alpha --wait=false");
  ASSERT_TRUE(deleted.ok()) << deleted.Describe();
  // The controller-manager's garbage collector deletes the job's dependents once it has
  // discovered the TFJob resource (its discovery runs every 30 s, so this may take that long).
  ASSERT_TRUE(
      WaitUntil([&] { return !Get(SecretResource(), "alpha-tfjob-secret").has_value(); }, 90s))
      << "the Secret outlived its job";
  EXPECT_TRUE(PodsBecome({"beta-worker-0"})) << ::testing::PrintToString(Pods());
  EXPECT_TRUE(Get(SecretResource(), "beta-tfjob-secret").has_value()) << "the other job's went too";
  EXPECT_EQ(Events("SuccessfulCreateSecret"), 2) << "one Secret made per job";
}

// The rights deploy/kubernetes grants are enough, and are what the operator uses: an operator
// signed in as a user with only the shipped ClusterRole (bound in this namespace) and the shipped
// leader-election Role runs a gang-scheduled job through every step that needs a right: the Lease,
// watching jobs, pods, services and PodGroups, creating and deleting them, status writes, Events.
TEST_F(OperatorClusterTest, TheShippedRbacRulesAreEnoughToRunAJob) {
  InstallCrd("volcano-podgroup-crd.yaml", "podgroups.scheduling.volcano.sh");
  const std::string deploy = std::string(COHORT_TEST_DATA_DIR) + "/../../deploy/kubernetes/";
  StatusOr<std::string> cluster_role = ReadWholeFile(deploy + "cluster-role.yaml");
  StatusOr<std::string> lease_role = ReadWholeFile(deploy + "leader-election-role.yaml");
  ASSERT_TRUE(cluster_role.ok() && lease_role.ok());
  KubectlResult applied = cluster().Kubectl("apply -f -", *cluster_role);
  ASSERT_TRUE(applied.ok()) << applied.Describe();
  // The shipped Role and its binding, moved into this namespace and given to the test's user.
  std::string role = *lease_role;
  for (size_t at; (at = role.find("namespace: cohort-system")) != std::string::npos;) {
    role.replace(at, 24, "namespace: " + namespace_);
  }
  role = role.substr(0, role.find("subjects:")) +
         "subjects:\n  - kind: User\n    name: cohort-test-nobody\n"
         "    apiGroup: rbac.authorization.k8s.io\n";
  applied = cluster().Kubectl("apply -f -", role);
  ASSERT_TRUE(applied.ok()) << applied.Describe() << "\n" << role;
  applied = Kubectl(
      "create rolebinding cohort-operator --clusterrole=cohort-operator "
      "--user=cohort-test-nobody");
  ASSERT_TRUE(applied.ok()) << applied.Describe();

  StatusOr<ConnectionConfig> nobody = LoadKubeconfig({cluster().unprivileged_kubeconfig()}, "");
  ASSERT_TRUE(nobody.ok()) << nobody.status().ToString();
  HttpApi least_rights(*nobody, HttpApiOptions{});
  operator_ = std::make_unique<Operator>(least_rights, KubeObjectBuilders(), [&] {
    OperatorOptions options = Options("operator-under-test");
    options.objects.gang_scheduler = "volcano";
    return options;
  }());
  operator_->Start();
  // Every kind's jobs: listing PyTorchJobs is granted too.
  ASSERT_TRUE(WaitUntil([&] { return operator_->jobs(job::PyTorchJobKind())->HasSynced(); }, kWait))
      << "the shipped ClusterRole does not let the operator list pytorchjobs";
  ApplyGangJob("rights", "      minAvailable: 2\n");
  ASSERT_TRUE(WaitUntil([&] { return Get(kVolcanoPodGroups, "rights").has_value(); }, kWait));
  ASSERT_TRUE(http_api_
                  ->Patch(kVolcanoPodGroups, namespace_, "rights",
                          {{"status", {{"phase", "Inqueue"}}}}, false)
                  .ok());
  ASSERT_TRUE(PodsBecome({"rights-worker-0", "rights-worker-1"}));
  Exit("rights-worker-0", 1);  // Never: the job fails, which records events and a status
  ASSERT_TRUE(StateBecomes("rights", "Failed"));
  ASSERT_TRUE(WaitUntil([&] { return !Get(kVolcanoPodGroups, "rights").has_value(); }, kWait));
  EXPECT_GE(Events("SuccessfulCreatePod"), 2);
  std::optional<nlohmann::json> lease = Get(LeaseResource(), "cohort-operator");
  ASSERT_TRUE(lease.has_value()) << "the operator held no Lease";
  EXPECT_EQ((*lease)["spec"].value("holderIdentity", ""), "operator-under-test");
  operator_->Stop();
  operator_.reset();
}

}  // namespace
}  // namespace cohort::kube
