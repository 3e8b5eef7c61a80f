// The operator over every job kind on the in-memory API server, with kube/objects' real builders:
// a PyTorchJob run to Succeeded with the objects Kubeflow's operator makes for it (its environment
// in every container, init-pytorch on workers, its services, its conditions' reasons and its
// Events' source), a TFJob and a PyTorchJob of one name in one namespace both reconciled,
// --enable-scheme's kinds alone watched, and a kind whose CRD is missing reported while the others
// run. The test plays the kubelet; every wait is bounded.
#include <gtest/gtest.h>

#include <algorithm>
#include <mutex>
#include <set>
#include <tuple>

#include "fake_api.h"
#include "job/pytorchjob.h"
#include "job/tfjob.h"
#include "kube/client/base64.h"
#include "kube/objects/objects.h"
#include "kube/operator/operator.h"
#include "operator_fixture.h"
#include "testing/wait.h"

namespace cohort::kube::testing {
namespace {

using namespace std::chrono_literals;
using cohort::testing::WaitUntil;
using nlohmann::json;

constexpr auto kWait = std::chrono::milliseconds(20000);

// A PyTorchJob as a user applies it: one Master and `workers` Workers, each pod with the
// `pytorch` container and a `log-shipper` sidecar, every replica with `restart_policy`.
json PyTorchJobObject(const std::string& name, int workers,
                      const std::string& restart_policy = "OnFailure") {
  const json containers = json::array({{{"name", "pytorch"}, {"image", "torch:2.3"}},
                                       {{"name", "log-shipper"}, {"image", "fluent-bit:3"}}});
  json specs = {{"Master",
                 {{"replicas", 1},
                  {"restartPolicy", restart_policy},
                  {"template", {{"spec", {{"containers", containers}}}}}}}};
  if (workers > 0) {
    specs["Worker"] = {{"replicas", workers},
                       {"restartPolicy", restart_policy},
                       {"template", {{"spec", {{"containers", containers}}}}}};
  }
  return {{"apiVersion", "kubeflow.org/v1"},
          {"kind", "PyTorchJob"},
          {"metadata", {{"name", name}, {"namespace", "default"}}},
          {"spec", {{"pytorchReplicaSpecs", specs}}}};
}

// The names of a container's environment variables, in order.
std::vector<std::string> VariableNames(const json& container) {
  std::vector<std::string> names;
  for (const json& variable : container.value("env", json::array())) {
    names.push_back(variable.value("name", ""));
  }
  return names;
}

// A container's variable `name`, "" when it has none.
std::string Variable(const json& container, const std::string& name) {
  for (const json& variable : container.value("env", json::array())) {
    if (variable.value("name", "") == name) return variable.value("value", "");
  }
  return "";
}

// The Secret a container's COHORT_JOB_SECRET is read from, "" when it reads none.
std::string SecretOf(const json& container) {
  for (const json& variable : container.value("env", json::array())) {
    if (variable.value("name", "") != "COHORT_JOB_SECRET") continue;
    const json reference =
        variable.value("valueFrom", json::object()).value("secretKeyRef", json::object());
    EXPECT_EQ(reference.value("key", ""), "COHORT_JOB_SECRET") << variable.dump();
    return reference.value("name", "");
  }
  return "";
}

class KindsOperatorTest : public ::testing::Test {
 protected:
  OperatorOptions Options() {
    OperatorOptions options;
    options.identity = "operator-a";
    options.informer.watch_timeout = 1s;
    options.informer.retry_delay = 20ms;
    options.queue_poll = 20ms;
    options.log = [this](const std::string& line) {
      std::lock_guard<std::mutex> lock(log_mutex_);
      log_.push_back(line);
    };
    return options;
  }

  std::unique_ptr<Operator> StartOperator(OperatorOptions options) {
    auto op = std::make_unique<Operator>(api_, KubeObjectBuilders(), std::move(options),
                                         clock_.AsFunction());
    op->Start();
    return op;
  }

  void TearDown() override {
    if (HasFailure()) {
      std::lock_guard<std::mutex> lock(log_mutex_);
      for (const std::string& line : log_) std::cerr << line << "\n";
    }
  }

  int LogLines(const std::string& text) {
    std::lock_guard<std::mutex> lock(log_mutex_);
    return static_cast<int>(std::count_if(log_.begin(), log_.end(), [&](const std::string& line) {
      return line.find(text) != std::string::npos;
    }));
  }

  json Create(const job::JobKind& kind, const json& object) {
    StatusOr<json> created = api_.Create(JobResource(kind), "default", object);
    EXPECT_TRUE(created.ok()) << created.status().ToString();
    return created.ok() ? *created : json();
  }

  // The job's condition of `type` as {status, reason}; empty strings while absent.
  std::pair<std::string, std::string> Condition(const std::string& plural, const std::string& name,
                                                const std::string& type) {
    const json job = api_.Object(plural, "default", name).value_or(json::object());
    if (!job.contains("status") || !job["status"].contains("conditions")) return {};
    for (const json& condition : job["status"]["conditions"]) {
      if (condition.value("type", "") == type) {
        return {condition.value("status", ""), condition.value("reason", "")};
      }
    }
    return {};
  }
  bool ConditionIs(const std::string& plural, const std::string& name, const std::string& type) {
    return Condition(plural, name, type).first == "True";
  }

  json Pod(const std::string& name) {
    return api_.Object("pods", "default", name).value_or(json::object());
  }
  size_t PodCount() { return api_.Objects("pods").size(); }

  // Events of `reason` about the job of `kind` and `uid`.
  std::vector<json> Events(const std::string& kind, const std::string& uid,
                           const std::string& reason = "") {
    std::vector<json> found;
    for (const json& event : api_.Objects("events")) {
      if (event["involvedObject"].value("kind", "") != kind) continue;
      if (event["involvedObject"].value("uid", "") != uid) continue;
      if (!reason.empty() && event.value("reason", "") != reason) continue;
      found.push_back(event);
    }
    return found;
  }

  FakeApi api_;
  FakeClock clock_;
  Kubelet kubelet_{api_, clock_};
  std::mutex log_mutex_;
  std::vector<std::string> log_;
};

TEST_F(KindsOperatorTest, RunsAPyTorchJobToSuccessWithKubeflowsObjects) {
  auto op = StartOperator(Options());
  const json job = Create(job::PyTorchJobKind(), PyTorchJobObject("torch", 2));
  const std::string uid = job["metadata"]["uid"];
  ASSERT_TRUE(WaitUntil([&] { return PodCount() == 3; }, kWait)) << PodCount();

  // Kubeflow's environment, in its order, last in every container; RANK counts the master first.
  const std::vector<std::string> names = {
      "PYTHONUNBUFFERED", "MASTER_PORT", "PET_MASTER_PORT", "MASTER_ADDR",        "PET_MASTER_ADDR",
      "WORLD_SIZE",       "RANK",        "PET_NODE_RANK",   "PET_NPROC_PER_NODE", "PET_NNODES"};
  std::vector<std::string> sidecar_names = {"COHORT_JOB_SECRET"};
  sidecar_names.insert(sidecar_names.end(), names.begin(), names.end());
  std::vector<std::string> main_names = {"COHORT_TERMINATION_MESSAGE_PATH", "COHORT_JOB_NAME"};
  main_names.insert(main_names.end(), sidecar_names.begin(), sidecar_names.end());
  const std::vector<std::pair<std::string, std::string>> ranks = {
      {"torch-master-0", "0"}, {"torch-worker-0", "1"}, {"torch-worker-1", "2"}};
  for (const auto& [name, rank] : ranks) {
    const json pod = Pod(name);
    ASSERT_TRUE(pod.contains("spec")) << name;
    EXPECT_EQ(ControllerUid(pod, "PyTorchJob"), uid) << name;
    EXPECT_EQ(ControllerUid(pod, "TFJob"), "") << name;
    EXPECT_EQ(pod["metadata"]["labels"].value(kOperatorNameLabel, ""), "pytorchjob-controller");
    EXPECT_EQ(pod["spec"].value("restartPolicy", ""), "OnFailure") << name;
    const json& containers = pod["spec"]["containers"];
    ASSERT_EQ(containers.size(), 2u) << name;
    EXPECT_EQ(containers[0]["name"], "pytorch");
    EXPECT_EQ(VariableNames(containers[0]), main_names) << name;
    EXPECT_EQ(VariableNames(containers[1]), sidecar_names) << name << ": the sidecar gets it too";
    for (const json& container : containers) {
      EXPECT_EQ(SecretOf(container), "torch-pytorchjob-secret") << name;
    }
    for (const json& container : containers) {
      EXPECT_EQ(Variable(container, "MASTER_ADDR"), "torch-master-0") << name;
      EXPECT_EQ(Variable(container, "MASTER_PORT"), "23456") << name;
      EXPECT_EQ(Variable(container, "WORLD_SIZE"), "3") << name;
      EXPECT_EQ(Variable(container, "RANK"), rank) << name;
    }
    const json init = pod["spec"].value("initContainers", json::array());
    if (name == "torch-master-0") {
      EXPECT_TRUE(init.empty()) << "the master waits for nobody";
    } else {
      ASSERT_EQ(init.size(), 1u) << name;
      EXPECT_EQ(init[0]["name"], "init-pytorch");
      EXPECT_NE(init[0]["command"][2].get<std::string>().find("nslookup torch-master-0"),
                std::string::npos);
    }
    const json service = api_.Object("services", "default", name).value_or(json::object());
    ASSERT_TRUE(service.contains("spec")) << name;
    EXPECT_EQ(ControllerUid(service, "PyTorchJob"), uid) << name;
    EXPECT_EQ(service["spec"]["ports"],
              json::array({{{"name", "pytorchjob-port"}, {"port", 23456}}}));
  }

  ASSERT_TRUE(WaitUntil([&] { return ConditionIs("pytorchjobs", "torch", "Created"); }, kWait));
  EXPECT_EQ(Condition("pytorchjobs", "torch", "Created").second, "PyTorchJobCreated");
  for (const auto& [name, rank] : ranks) ASSERT_TRUE(kubelet_.Run(name).ok()) << name;
  ASSERT_TRUE(WaitUntil([&] { return ConditionIs("pytorchjobs", "torch", "Running"); }, kWait));
  EXPECT_EQ(Condition("pytorchjobs", "torch", "Running").second, "PyTorchJobRunning");
  // The master decides: its success is the job's.
  ASSERT_TRUE(kubelet_.Exit("torch-master-0", 0).ok());
  ASSERT_TRUE(WaitUntil([&] { return ConditionIs("pytorchjobs", "torch", "Succeeded"); }, kWait));
  EXPECT_EQ(Condition("pytorchjobs", "torch", "Succeeded").second, "PyTorchJobSucceeded");
  const json status = api_.Object("pytorchjobs", "default", "torch")->at("status");
  EXPECT_EQ(status["replicaStatuses"]["Master"].value("succeeded", 0), 1);

  ASSERT_TRUE(WaitUntil(
      [&] { return Events("PyTorchJob", uid, "PyTorchJobSucceeded").size() == 1; }, kWait));
  ASSERT_TRUE(WaitUntil(
      [&] { return Events("PyTorchJob", uid, "SuccessfulCreatePod").size() == 3; }, kWait));
  const std::vector<json> events = Events("PyTorchJob", uid);
  EXPECT_EQ(events.size(), api_.Objects("events").size()) << "every Event is about the job";
  EXPECT_EQ(Events("PyTorchJob", uid, "SuccessfulCreateSecret").size(), 1u);
  for (const json& event : events) {
    EXPECT_EQ(event["source"].value("component", ""), "pytorchjob-controller");
    EXPECT_EQ(event["involvedObject"].value("apiVersion", ""), "kubeflow.org/v1");
    EXPECT_EQ(event["involvedObject"].value("name", ""), "torch");
  }
  EXPECT_EQ(api_.Calls("update-status", "tfjobs"), 0);
}

TEST_F(KindsOperatorTest, ATFJobAndAPyTorchJobOfOneNameAreBothReconciled) {
  auto op = StartOperator(Options());
  // Replica types whose pods' names differ: same-chief-0 and same-master-0.
  json tfjob = TFJobObject("same", {{"Chief", 1}});
  const json tf = Create(job::TFJobKind(), tfjob);
  const json torch = Create(job::PyTorchJobKind(), PyTorchJobObject("same", 0));
  ASSERT_TRUE(WaitUntil([&] { return PodCount() == 2; }, kWait)) << PodCount();
  EXPECT_EQ(ControllerUid(Pod("same-chief-0"), "TFJob"), tf["metadata"]["uid"]);
  EXPECT_EQ(ControllerUid(Pod("same-master-0"), "PyTorchJob"), torch["metadata"]["uid"]);
  EXPECT_EQ(Pod("same-chief-0")["metadata"]["labels"].value(kOperatorNameLabel, ""),
            "tfjob-controller");
  ASSERT_TRUE(WaitUntil([&] { return ConditionIs("tfjobs", "same", "Created"); }, kWait));
  ASSERT_TRUE(WaitUntil([&] { return ConditionIs("pytorchjobs", "same", "Created"); }, kWait));
  EXPECT_EQ(Condition("tfjobs", "same", "Created").second, "TFJobCreated");

  ASSERT_TRUE(kubelet_.Run("same-chief-0").ok());
  ASSERT_TRUE(kubelet_.Run("same-master-0").ok());
  ASSERT_TRUE(WaitUntil([&] { return ConditionIs("tfjobs", "same", "Running"); }, kWait));
  ASSERT_TRUE(WaitUntil([&] { return ConditionIs("pytorchjobs", "same", "Running"); }, kWait));
  // The PyTorchJob's master ends first: only it succeeds; then the TFJob's chief.
  ASSERT_TRUE(kubelet_.Exit("same-master-0", 0).ok());
  ASSERT_TRUE(WaitUntil([&] { return ConditionIs("pytorchjobs", "same", "Succeeded"); }, kWait));
  EXPECT_FALSE(ConditionIs("tfjobs", "same", "Succeeded"));
  ASSERT_TRUE(kubelet_.Exit("same-chief-0", 0).ok());
  ASSERT_TRUE(WaitUntil([&] { return ConditionIs("tfjobs", "same", "Succeeded"); }, kWait));
  ASSERT_TRUE(WaitUntil(
      [&] { return Events("TFJob", tf["metadata"]["uid"], "TFJobSucceeded").size() == 1; }, kWait));
  for (const json& event : Events("TFJob", tf["metadata"]["uid"])) {
    EXPECT_EQ(event["source"].value("component", ""), "tfjob-controller");
  }
  for (const json& event : Events("PyTorchJob", torch["metadata"]["uid"])) {
    EXPECT_EQ(event["source"].value("component", ""), "pytorchjob-controller");
  }
}

TEST_F(KindsOperatorTest, OnlyTheEnabledKindsAreWatched) {
  OperatorOptions options = Options();
  options.kinds = {&job::TFJobKind()};
  auto op = StartOperator(options);
  Create(job::PyTorchJobKind(), PyTorchJobObject("torch", 1));
  Create(job::TFJobKind(), TFJobObject("tf", {{"Worker", 1}}));
  ASSERT_TRUE(WaitUntil([&] { return ConditionIs("tfjobs", "tf", "Created"); }, kWait));
  EXPECT_EQ(op->jobs(job::PyTorchJobKind()), nullptr);
  EXPECT_EQ(api_.Calls("list", "pytorchjobs"), 0);
  EXPECT_EQ(api_.Calls("watch", "pytorchjobs"), 0);
  EXPECT_EQ(PodCount(), 1u) << "the PyTorchJob is not this operator's";
  EXPECT_EQ(LogLines("starting: TFJobs, namespace"), 1);
}

TEST_F(KindsOperatorTest, AKindWithoutItsCrdIsReportedOnceAndTheOthersRun) {
  api_.Unserve("pytorchjobs");
  auto op = StartOperator(Options());
  Create(job::TFJobKind(), TFJobObject("tf", {{"Worker", 1}}));
  ASSERT_TRUE(WaitUntil([&] { return ConditionIs("tfjobs", "tf", "Created"); }, kWait));
  // It keeps listing, quietly, so that installing the CRD later is enough.
  ASSERT_TRUE(WaitUntil([&] { return api_.Calls("list", "pytorchjobs") >= 3; }, kWait));
  EXPECT_EQ(LogLines("PyTorchJobs are not run: the server has no pytorchjobs.kubeflow.org/v1 "
                     "(its CustomResourceDefinition is not installed). Install it with "
                     "`cohort crd pytorchjob | kubectl apply -f -`"),
            1);
  EXPECT_EQ(LogLines("TFJobs run meanwhile"), 1);
  EXPECT_EQ(LogLines("list failed"), 0);
}

// Every job gets a Secret of its own before its first pod: owned by the job (the garbage collector
// deletes it with the job), holding a fresh 256-bit secret that each pod's containers read; two
// jobs never share one, and a TFJob and a PyTorchJob of one name have one each. Made once: a
// re-created pod reads the same Secret, and the operator does not make another.
TEST_F(KindsOperatorTest, EveryJobGetsItsOwnSecretBeforeItsPods) {
  auto op = StartOperator(Options());
  const json first = Create(job::TFJobKind(), TFJobObject("first", {{"Worker", 2}}));
  const json second = Create(job::TFJobKind(), TFJobObject("second", {{"Worker", 1}}));
  const json torch = Create(job::PyTorchJobKind(), PyTorchJobObject("first", 0));
  ASSERT_TRUE(WaitUntil([&] { return PodCount() == 4; }, kWait)) << PodCount();
  std::set<std::string> values;
  for (const auto& [name, kind, owner] : std::vector<std::tuple<std::string, std::string, json>>{
           {"first-tfjob-secret", "TFJob", first},
           {"second-tfjob-secret", "TFJob", second},
           {"first-pytorchjob-secret", "PyTorchJob", torch}}) {
    const std::optional<json> secret = api_.Object("secrets", "default", name);
    ASSERT_TRUE(secret.has_value()) << name;
    EXPECT_EQ(ControllerUid(*secret, kind), owner["metadata"]["uid"]) << name;
    EXPECT_EQ((*secret)["type"], "Opaque");
    EXPECT_EQ((*secret)["immutable"], true);
    StatusOr<std::string> value =
        DecodeBase64((*secret)["data"].value("COHORT_JOB_SECRET", ""), name);
    ASSERT_TRUE(value.ok()) << value.status().ToString();
    EXPECT_EQ(value->size(), 64u) << "256 bits in hex";
    values.insert(*value);
  }
  EXPECT_EQ(values.size(), 3u) << "two jobs share a secret";
  for (const char* pod : {"first-worker-0", "first-worker-1"}) {
    EXPECT_EQ(SecretOf(Pod(pod)["spec"]["containers"][0]), "first-tfjob-secret") << pod;
  }
  EXPECT_EQ(SecretOf(Pod("second-worker-0")["spec"]["containers"][0]), "second-tfjob-secret");
  EXPECT_EQ(SecretOf(Pod("first-master-0")["spec"]["containers"][0]), "first-pytorchjob-secret");

  // A replica re-created after a failure reads the Secret made at the start; none is made again.
  const std::string before = Pod("first-worker-1")["metadata"]["uid"];
  ASSERT_TRUE(kubelet_.Run("first-worker-1").ok());
  ASSERT_TRUE(api_.Delete(PodResource(), "default", "first-worker-1", {}).ok());
  ASSERT_TRUE(WaitUntil(
      [&] {
        const json pod = Pod("first-worker-1");
        return pod.contains("metadata") && pod["metadata"].value("uid", "") != before;
      },
      kWait));
  EXPECT_EQ(api_.Calls("create", "secrets"), 3);
  EXPECT_EQ(Events("TFJob", first["metadata"]["uid"], "SuccessfulCreateSecret").size(), 1u);
}

// A Secret of the job's Secret's name that the job does not control may hold a value others know:
// the operator does not use it, creates no pod, and says why in a Warning event.
TEST_F(KindsOperatorTest, ASecretOfThatNameTheJobDoesNotControlIsNotUsed) {
  ASSERT_TRUE(api_.Create(SecretResource(), "default",
                          {{"apiVersion", "v1"},
                           {"kind", "Secret"},
                           {"metadata", {{"name", "taken-tfjob-secret"}}},
                           {"data", {{"COHORT_JOB_SECRET", EncodeBase64("known")}}}})
                  .ok());
  auto op = StartOperator(Options());
  const json job = Create(job::TFJobKind(), TFJobObject("taken", {{"Worker", 1}}));
  const std::string uid = job["metadata"]["uid"];
  ASSERT_TRUE(
      WaitUntil([&] { return !Events("TFJob", uid, "FailedCreateSecret").empty(); }, kWait));
  const json event = Events("TFJob", uid, "FailedCreateSecret").front();
  EXPECT_EQ(event.value("type", ""), "Warning");
  EXPECT_NE(event.value("message", "")
                .find("default/taken-tfjob-secret exists but is not "
                      "controlled by TFJob default/taken"),
            std::string::npos)
      << event.dump();
  EXPECT_EQ(PodCount(), 0u);
}

}  // namespace
}  // namespace cohort::kube::testing
