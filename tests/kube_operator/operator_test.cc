// The operator end to end on an in-memory API server: every lifecycle path of a TFJob, with the
// test playing the kubelet (pods run, exit, restart in place) and a fake clock for back-offs,
// deadlines and TTLs. Every wait is bounded (WaitUntil).
#include "kube/operator/operator.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <mutex>

#include "fake_api.h"
#include "job/tfjob.h"
#include "kube/objects/objects.h"
#include "operator_fixture.h"
#include "testing/wait.h"

namespace cohort::kube::testing {
namespace {

using namespace std::chrono_literals;
using cohort::testing::WaitUntil;

constexpr auto kWait = std::chrono::milliseconds(20000);

class OperatorTest : public ::testing::Test {
 protected:
  OperatorOptions Options(const std::string& identity = "operator-a") {
    OperatorOptions options;
    options.identity = identity;
    options.informer.watch_timeout = 1s;
    options.informer.retry_delay = 20ms;
    options.queue_poll = 20ms;
    options.log = [this, identity](const std::string& line) {
      std::lock_guard<std::mutex> lock(log_mutex_);
      log_.push_back(identity + ": " + line);
    };
    return options;
  }

  std::unique_ptr<Operator> StartOperator(OperatorOptions options) {
    auto op =
        std::make_unique<Operator>(api_, TestBuilders(), std::move(options), clock_.AsFunction());
    op->Start();
    return op;
  }
  std::unique_ptr<Operator> StartOperator() { return StartOperator(Options()); }

  void TearDown() override {
    if (HasFailure()) {
      std::lock_guard<std::mutex> lock(log_mutex_);
      for (const std::string& line : log_) std::cerr << line << "\n";
    }
  }

  nlohmann::json CreateJob(const nlohmann::json& tfjob) {
    StatusOr<nlohmann::json> created = api_.Create(JobResource(job::TFJobKind()), "default", tfjob);
    EXPECT_TRUE(created.ok()) << created.status().ToString();
    return created.ok() ? *created : nlohmann::json();
  }

  nlohmann::json Job(const std::string& name) {
    return api_.Object("tfjobs", "default", name).value_or(nlohmann::json::object());
  }

  // The job's status.replicaStatuses[type][field], 0 while the operator has not written it.
  int ReplicaCount(const std::string& name, const std::string& type, const std::string& field) {
    const nlohmann::json replicas = Job(name)["status"]["replicaStatuses"][type];
    return replicas.is_object() ? replicas.value(field, 0) : 0;
  }

  // The job's condition of `type`, "" when absent, else its status ("True"/"False").
  std::string Condition(const std::string& name, const std::string& type) {
    nlohmann::json job = Job(name);
    if (!job.contains("status") || !job["status"].contains("conditions")) return "";
    for (const nlohmann::json& condition : job["status"]["conditions"]) {
      if (condition.value("type", "") == type) return condition.value("status", "");
    }
    return "";
  }
  std::string ConditionMessage(const std::string& name, const std::string& type) {
    nlohmann::json job = Job(name);
    for (const nlohmann::json& condition : job["status"]["conditions"]) {
      if (condition.value("type", "") == type) return condition.value("message", "");
    }
    return "";
  }

  std::vector<std::string> PodNames() {
    std::vector<std::string> names;
    for (const nlohmann::json& pod : api_.Objects("pods")) {
      names.push_back(pod["metadata"].value("name", ""));
    }
    return names;
  }
  std::optional<nlohmann::json> Pod(const std::string& name) {
    return api_.Object("pods", "default", name);
  }
  std::optional<nlohmann::json> Service(const std::string& name) {
    return api_.Object("services", "default", name);
  }
  bool PodsAre(std::vector<std::string> names) {
    std::sort(names.begin(), names.end());
    return PodNames() == names;
  }

  // Events with `reason` (and a message containing `text`), summing aggregated counts.
  int Events(const std::string& reason, const std::string& text = "") {
    int count = 0;
    for (const nlohmann::json& event : api_.Objects("events")) {
      if (event.value("reason", "") != reason) continue;
      if (event.value("message", "").find(text) == std::string::npos) continue;
      count += event.value("count", 1);
    }
    return count;
  }

  void RunAll() {
    for (const std::string& name : PodNames()) ASSERT_TRUE(kubelet_.Run(name).ok()) << name;
  }

  // Updates the TFJob's spec as kubectl patch would.
  void EditJob(const std::string& name, const std::function<void(nlohmann::json&)>& edit) {
    StatusOr<nlohmann::json> updated = UpdateWithRetry(api_, JobResource(job::TFJobKind()),
                                                       "default", name, [&](nlohmann::json& job) {
                                                         edit(job);
                                                         return true;
                                                       });
    ASSERT_TRUE(updated.ok()) << updated.status().ToString();
  }

  FakeApi api_;
  FakeClock clock_;
  Kubelet kubelet_{api_, clock_};
  std::mutex log_mutex_;
  std::vector<std::string> log_;
};

TEST_F(OperatorTest, CreatesAPodAndServicePerReplicaAndRunsTheJobToSuccess) {
  auto op = StartOperator();
  nlohmann::json job = CreateJob(TFJobObject("mnist", {{"PS", 1}, {"Worker", 2}}));
  ASSERT_TRUE(WaitUntil([&] { return PodNames().size() == 3; }, kWait));
  for (const std::string name : {"mnist-ps-0", "mnist-worker-0", "mnist-worker-1"}) {
    std::optional<nlohmann::json> pod = Pod(name);
    ASSERT_TRUE(pod) << name;
    EXPECT_EQ(ControllerUid(*pod, "TFJob"), job["metadata"]["uid"]);
    EXPECT_TRUE(Service(name)) << name;
  }
  ASSERT_TRUE(WaitUntil([&] { return Condition("mnist", "Created") == "True"; }, kWait));
  RunAll();
  ASSERT_TRUE(WaitUntil([&] { return Condition("mnist", "Running") == "True"; }, kWait));
  ASSERT_TRUE(kubelet_.Exit("mnist-worker-0", 0).ok());
  ASSERT_TRUE(WaitUntil([&] { return Condition("mnist", "Succeeded") == "True"; }, kWait));
  nlohmann::json status = Job("mnist")["status"];
  EXPECT_EQ(status["replicaStatuses"]["Worker"].value("succeeded", 0), 2);
  EXPECT_TRUE(status.contains("completionTime"));
  EXPECT_TRUE(WaitUntil([&] { return Events("SuccessfulCreatePod") == 3; }, kWait))
      << Events("SuccessfulCreatePod");
  EXPECT_TRUE(WaitUntil([&] { return Events("SuccessfulCreateService") == 3; }, kWait))
      << Events("SuccessfulCreateService");
  EXPECT_TRUE(WaitUntil([&] { return Events("TFJobSucceeded") == 1; }, kWait));
  EXPECT_TRUE(WaitUntil(
      [&] { return Events("ExitedWithCode", "mnist-worker-0 exited with code 0") == 1; }, kWait))
      << Events("ExitedWithCode", "mnist-worker-0 exited with code 0");
  for (const nlohmann::json& event : api_.Objects("events")) {
    EXPECT_EQ(event["source"].value("component", ""), "tfjob-controller");
    EXPECT_EQ(event["involvedObject"].value("name", ""), "mnist");
    EXPECT_EQ(event["involvedObject"].value("uid", ""), job["metadata"]["uid"]);
  }
  // cleanPodPolicy None (the default): the PS keeps running.
  EXPECT_TRUE(Pod("mnist-ps-0"));
}

TEST_F(OperatorTest, TheResyncPeriodSyncsEveryJobAgainFromTheCache) {
  OperatorOptions options = Options();
  options.resync_period = 50ms;
  auto op = StartOperator(options);
  CreateJob(TFJobObject("first", {{"Worker", 1}}));
  CreateJob(TFJobObject("second", {{"Worker", 1}}));
  ASSERT_TRUE(WaitUntil([&] { return Condition("first", "Created") == "True"; }, kWait));
  ASSERT_TRUE(WaitUntil([&] { return Condition("second", "Created") == "True"; }, kWait));
  auto logged = [&](const std::string& text) {
    std::lock_guard<std::mutex> lock(log_mutex_);
    return std::any_of(log_.begin(), log_.end(), [&](const std::string& line) {
      return line.find(text) != std::string::npos;
    });
  };
  const int syncs = op->Syncs();
  // Nothing changes on the server, yet both jobs are synced again, and the resync says so.
  ASSERT_TRUE(WaitUntil([&] { return op->Syncs() >= syncs + 2; }, kWait));
  ASSERT_TRUE(WaitUntil([&] { return logged("resync: 2 jobs synced in "); }, kWait));
  EXPECT_TRUE(logged("resync: 2 jobs queued"));
  EXPECT_TRUE(PodsAre({"first-worker-0", "second-worker-0"}));
}

TEST_F(OperatorTest, NeverFailsTheJobOnAFailedPod) {
  auto op = StartOperator();
  CreateJob(TFJobObject("never", {{"Worker", 2}}));
  ASSERT_TRUE(WaitUntil([&] { return PodNames().size() == 2; }, kWait));
  RunAll();
  ASSERT_TRUE(kubelet_.Exit("never-worker-1", 3).ok());
  ASSERT_TRUE(WaitUntil([&] { return Condition("never", "Failed") == "True"; }, kWait));
  EXPECT_EQ(ConditionMessage("never", "Failed"),
            "TFJob default/never has failed because 1 Worker replica(s) failed: worker-1 exited "
            "with code 3 at 2026-11-24T10:00:00Z after 0 restarts.");
  EXPECT_TRUE(Pod("never-worker-1"));  // not re-created, not deleted (cleanPodPolicy None)
  EXPECT_EQ(api_.Calls("create", "pods"), 2);
}

TEST_F(OperatorTest, ExitCodeRecreatesARetryableExitAfterTheBackoffAndKeepsTheCount) {
  auto op = StartOperator();
  CreateJob(TFJobObject("retry", {{"Worker", 1}}, "ExitCode"));
  ASSERT_TRUE(WaitUntil([&] { return Pod("retry-worker-0").has_value(); }, kWait));
  const std::string first_uid = (*Pod("retry-worker-0"))["metadata"]["uid"];
  RunAll();
  ASSERT_TRUE(kubelet_.Exit("retry-worker-0", 137).ok());
  // The exited pod goes at once; the restart is recorded on the service until the back-off ends.
  ASSERT_TRUE(WaitUntil([&] { return !Pod("retry-worker-0").has_value(); }, kWait));
  ASSERT_TRUE(WaitUntil([&] { return Condition("retry", "Restarting") == "True"; }, kWait));
  EXPECT_EQ(Annotation(*Service("retry-worker-0"), kRestartsAnnotation), "1");
  EXPECT_TRUE(WaitUntil([&] { return Events("TFJobRestarting") == 1; }, kWait))
      << Events("TFJobRestarting");
  clock_.Advance(1500ms);  // RestartBackoff(0) is 1 s
  ASSERT_TRUE(WaitUntil([&] { return Pod("retry-worker-0").has_value(); }, kWait));
  nlohmann::json pod = *Pod("retry-worker-0");
  EXPECT_NE(pod["metadata"]["uid"], first_uid);
  EXPECT_EQ(Annotation(pod, kRestartsAnnotation), "1");
  ASSERT_TRUE(WaitUntil(
      [&] { return Annotation(*Service("retry-worker-0"), kRestartAfterAnnotation).empty(); },
      kWait));
  ASSERT_TRUE(kubelet_.Run("retry-worker-0").ok());
  ASSERT_TRUE(WaitUntil([&] { return Condition("retry", "Running") == "True"; }, kWait));
  // A permanent code (1-127) under ExitCode fails the job.
  ASSERT_TRUE(kubelet_.Exit("retry-worker-0", 1).ok());
  ASSERT_TRUE(WaitUntil([&] { return Condition("retry", "Failed") == "True"; }, kWait));
  EXPECT_EQ(api_.Calls("create", "pods"), 2);
}

TEST_F(OperatorTest, OnFailureRestartsInPlaceCountTowardsTheBackoffLimit) {
  auto op = StartOperator();
  CreateJob(TFJobObject("inplace", {{"Worker", 1}}, "OnFailure", {{"backoffLimit", 2}}));
  ASSERT_TRUE(WaitUntil([&] { return Pod("inplace-worker-0").has_value(); }, kWait));
  RunAll();
  ASSERT_TRUE(WaitUntil([&] { return Condition("inplace", "Running") == "True"; }, kWait));
  ASSERT_TRUE(kubelet_.Exit("inplace-worker-0", 1).ok());  // restartCount 1
  ASSERT_TRUE(kubelet_.Exit("inplace-worker-0", 1).ok());  // restartCount 2: the limit
  clock_.Advance(1s);
  ASSERT_TRUE(kubelet_.Run("inplace-worker-0").ok());
  // Within the limit the job keeps running, on the same pod.
  ASSERT_TRUE(WaitUntil([&] { return ReplicaCount("inplace", "Worker", "active") == 1; }, kWait));
  EXPECT_NE(Condition("inplace", "Failed"), "True");
  ASSERT_TRUE(kubelet_.Exit("inplace-worker-0", 1).ok());  // restartCount 3: past it
  ASSERT_TRUE(WaitUntil([&] { return Condition("inplace", "Failed") == "True"; }, kWait));
  EXPECT_NE(ConditionMessage("inplace", "Failed").find("reached the specified backoff limit"),
            std::string::npos);
  ASSERT_TRUE(WaitUntil([&] { return PodNames().empty(); }, kWait));  // every replica stopped
  EXPECT_EQ(api_.Calls("create", "pods"), 1);
}

TEST_F(OperatorTest, AlwaysRestartsEvenASuccessInPlace) {
  auto op = StartOperator();
  CreateJob(TFJobObject("always", {{"Worker", 1}}, "Always"));
  ASSERT_TRUE(WaitUntil([&] { return Pod("always-worker-0").has_value(); }, kWait));
  RunAll();
  ASSERT_TRUE(kubelet_.Exit("always-worker-0", 0).ok());
  ASSERT_TRUE(WaitUntil([&] { return Condition("always", "Running") == "True"; }, kWait));
  EXPECT_NE(Condition("always", "Succeeded"), "True");
  EXPECT_EQ(api_.Calls("create", "pods"), 1);
}

TEST_F(OperatorTest, ExitCodeRecreationsCountTowardsTheBackoffLimit) {
  auto op = StartOperator();
  CreateJob(TFJobObject("limited", {{"Worker", 1}}, "ExitCode", {{"backoffLimit", 1}}));
  ASSERT_TRUE(WaitUntil([&] { return Pod("limited-worker-0").has_value(); }, kWait));
  RunAll();
  ASSERT_TRUE(kubelet_.Exit("limited-worker-0", 137).ok());
  ASSERT_TRUE(WaitUntil([&] { return !Pod("limited-worker-0").has_value(); }, kWait));
  clock_.Advance(1500ms);
  ASSERT_TRUE(WaitUntil([&] { return Pod("limited-worker-0").has_value(); }, kWait));
  RunAll();
  ASSERT_TRUE(kubelet_.Exit("limited-worker-0", 137).ok());
  ASSERT_TRUE(WaitUntil([&] { return Condition("limited", "Failed") == "True"; }, kWait));
  EXPECT_NE(ConditionMessage("limited", "Failed").find("after 1 restart"), std::string::npos)
      << ConditionMessage("limited", "Failed");
}

TEST_F(OperatorTest, ActiveDeadlineFailsTheJobWhenItPassesWithNothingElseChanging) {
  auto op = StartOperator();
  CreateJob(TFJobObject("deadline", {{"Worker", 2}}, "Never", {{"activeDeadlineSeconds", 5}}));
  ASSERT_TRUE(WaitUntil([&] { return PodNames().size() == 2; }, kWait));
  RunAll();
  ASSERT_TRUE(WaitUntil([&] { return Condition("deadline", "Running") == "True"; }, kWait));
  clock_.Advance(6s);
  ASSERT_TRUE(WaitUntil([&] { return Condition("deadline", "Failed") == "True"; }, kWait));
  EXPECT_NE(ConditionMessage("deadline", "Failed").find("active longer than specified deadline"),
            std::string::npos);
  ASSERT_TRUE(WaitUntil([&] { return PodNames().empty(); }, kWait));
  EXPECT_TRUE(api_.Objects("services").empty());
}

class CleanPodPolicyTest
    : public OperatorTest,
      public ::testing::WithParamInterface<std::pair<std::string, std::vector<std::string>>> {};

// Worker 0 succeeds while the PS still runs and worker 1 is still pending.
TEST_P(CleanPodPolicyTest, DeletesWhatThePolicySaysOnceTheJobSucceeded) {
  // Named copies: a lambda cannot capture a structured binding before C++20 as clang 14 reads it.
  const auto& [policy, pods_left] = GetParam();
  const auto left = pods_left;
  auto op = StartOperator();
  CreateJob(
      TFJobObject("clean", {{"PS", 1}, {"Worker", 2}}, "Never", {{"cleanPodPolicy", policy}}));
  ASSERT_TRUE(WaitUntil([&] { return PodNames().size() == 3; }, kWait));
  ASSERT_TRUE(kubelet_.Run("clean-ps-0").ok());
  ASSERT_TRUE(kubelet_.Run("clean-worker-0").ok());
  ASSERT_TRUE(kubelet_.Exit("clean-worker-0", 0).ok());
  ASSERT_TRUE(WaitUntil([&] { return Condition("clean", "Succeeded") == "True"; }, kWait));
  ASSERT_TRUE(WaitUntil([&] { return PodsAre(left); }, kWait)) << policy;
  EXPECT_EQ(api_.Objects("services").size(), left.size());
}

INSTANTIATE_TEST_SUITE_P(
    Policies, CleanPodPolicyTest,
    ::testing::Values(
        std::make_pair(std::string("None"),
                       std::vector<std::string>{"clean-ps-0", "clean-worker-0", "clean-worker-1"}),
        std::make_pair(std::string("Running"), std::vector<std::string>{"clean-worker-0"}),
        std::make_pair(std::string("All"), std::vector<std::string>{})),
    [](const auto& info) { return info.param.first; });

TEST_F(OperatorTest, TtlDeletesTheFinishedJob) {
  auto op = StartOperator();
  CreateJob(TFJobObject("ttl", {{"Worker", 1}}, "Never", {{"ttlSecondsAfterFinished", 10}}));
  ASSERT_TRUE(WaitUntil([&] { return Pod("ttl-worker-0").has_value(); }, kWait));
  RunAll();
  ASSERT_TRUE(kubelet_.Exit("ttl-worker-0", 0).ok());
  ASSERT_TRUE(WaitUntil([&] { return Condition("ttl", "Succeeded") == "True"; }, kWait));
  clock_.Advance(5s);
  EXPECT_FALSE(WaitUntil([&] { return api_.Objects("tfjobs").empty(); }, 300ms));
  clock_.Advance(6s);
  ASSERT_TRUE(WaitUntil([&] { return api_.Objects("tfjobs").empty(); }, kWait));
  ASSERT_TRUE(
      WaitUntil([&] { return Events("SuccessfulDeleteJob", "Deleted job: ttl") == 1; }, kWait));
}

TEST_F(OperatorTest, SuspendDeletesEveryPodAndResumeCreatesThemAgain) {
  auto op = StartOperator();
  CreateJob(TFJobObject("pause", {{"PS", 1}, {"Worker", 1}}));
  ASSERT_TRUE(WaitUntil([&] { return PodNames().size() == 2; }, kWait));
  RunAll();
  ASSERT_TRUE(WaitUntil([&] { return Condition("pause", "Running") == "True"; }, kWait));
  EditJob("pause", [](nlohmann::json& job) { job["spec"]["runPolicy"]["suspend"] = true; });
  ASSERT_TRUE(WaitUntil([&] { return Condition("pause", "Suspended") == "True"; }, kWait));
  ASSERT_TRUE(WaitUntil([&] { return PodNames().empty(); }, kWait));
  EXPECT_TRUE(api_.Objects("services").empty());
  EXPECT_EQ(Condition("pause", "Running"), "False");
  EditJob("pause", [](nlohmann::json& job) { job["spec"]["runPolicy"]["suspend"] = false; });
  ASSERT_TRUE(WaitUntil([&] { return PodNames().size() == 2; }, kWait));
  ASSERT_TRUE(WaitUntil([&] { return Condition("pause", "Suspended") == "False"; }, kWait));
  EXPECT_TRUE(WaitUntil([&] { return Events("TFJobSuspended") == 1; }, kWait))
      << Events("TFJobSuspended");
  EXPECT_TRUE(WaitUntil([&] { return Events("TFJobResumed") == 1; }, kWait))
      << Events("TFJobResumed");
}

TEST_F(OperatorTest, SuccessPolicyAllWorkersWaitsForEveryWorker) {
  auto op = StartOperator();
  nlohmann::json tfjob = TFJobObject("all", {{"Worker", 2}});
  tfjob["spec"]["successPolicy"] = "AllWorkers";
  CreateJob(tfjob);
  ASSERT_TRUE(WaitUntil([&] { return PodNames().size() == 2; }, kWait));
  RunAll();
  ASSERT_TRUE(kubelet_.Exit("all-worker-0", 0).ok());
  ASSERT_TRUE(WaitUntil([&] { return ReplicaCount("all", "Worker", "succeeded") == 1; }, kWait));
  EXPECT_NE(Condition("all", "Succeeded"), "True");
  ASSERT_TRUE(kubelet_.Exit("all-worker-1", 0).ok());
  ASSERT_TRUE(WaitUntil([&] { return Condition("all", "Succeeded") == "True"; }, kWait));
}

TEST_F(OperatorTest, LeavesAJobManagedByAnotherControllerAlone) {
  auto op = StartOperator();
  CreateJob(
      TFJobObject("kueue", {{"Worker", 1}}, "Never", {{"managedBy", "kueue.x-k8s.io/multikueue"}}));
  CreateJob(TFJobObject("ours", {{"Worker", 1}}));
  ASSERT_TRUE(WaitUntil([&] { return Pod("ours-worker-0").has_value(); }, kWait));
  ASSERT_TRUE(WaitUntil([&] { return Condition("ours", "Created") == "True"; }, kWait));
  EXPECT_EQ(PodNames(), std::vector<std::string>{"ours-worker-0"});
  EXPECT_FALSE(Job("kueue").contains("status"));
  EXPECT_EQ(Events("SuccessfulCreatePod", "kueue"), 0);
}

TEST_F(OperatorTest, AnInvalidJobFailsWithTheValidatorsMessage) {
  auto op = StartOperator();
  nlohmann::json tfjob = TFJobObject("broken", {{"Worker", 1}});
  tfjob["spec"]["tfReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0].erase("image");
  CreateJob(tfjob);
  ASSERT_TRUE(WaitUntil([&] { return Condition("broken", "Failed") == "True"; }, kWait));
  const std::string message = ConditionMessage("broken", "Failed");
  EXPECT_NE(message.find("TFJob default/broken is invalid"), std::string::npos) << message;
  EXPECT_NE(message.find("image"), std::string::npos) << message;
  ASSERT_TRUE(WaitUntil([&] { return Events("TFJobFailed", "is invalid") == 1; }, kWait));
  EXPECT_TRUE(PodNames().empty());
}

TEST_F(OperatorTest, NeverAdoptsOrDeletesPodsItDoesNotOwn) {
  // A pod with the operator's labels and the name of the job's replica, owned by nothing, and
  // one that looks like an out-of-spec replica of the job, owned by another TFJob uid.
  auto labelled = [](const std::string& name, const std::string& index, nlohmann::json owners) {
    return nlohmann::json{
        {"apiVersion", "v1"},
        {"kind", "Pod"},
        {"metadata",
         {{"name", name},
          {"labels",
           {{kOperatorNameLabel, job::TFJobKind().facts().controller_name},
            {kJobNameLabel, "adopt"},
            {kReplicaTypeLabel, "worker"},
            {kReplicaIndexLabel, index}}},
          {"ownerReferences", owners}}},
        {"spec", {{"containers", {{{"name", "tensorflow"}, {"image", "other:1"}}}}}}};
  };
  ASSERT_TRUE(api_.Create(PodResource(), "default",
                          labelled("adopt-worker-1", "1", nlohmann::json::array()))
                  .ok());
  ASSERT_TRUE(api_.Create(PodResource(), "default",
                          labelled("adopt-worker-5", "5",
                                   {{{"apiVersion", "kubeflow.org/v1"},
                                     {"kind", "TFJob"},
                                     {"name", "adopt"},
                                     {"uid", "someone-else"},
                                     {"controller", true}}}))
                  .ok());
  ASSERT_TRUE(kubelet_.Run("adopt-worker-1").ok());
  auto op = StartOperator();
  CreateJob(TFJobObject("adopt", {{"Worker", 2}}));
  ASSERT_TRUE(WaitUntil([&] { return Pod("adopt-worker-0").has_value(); }, kWait));
  ASSERT_TRUE(kubelet_.Run("adopt-worker-0").ok());
  ASSERT_TRUE(WaitUntil([&] { return ReplicaCount("adopt", "Worker", "active") == 1; }, kWait));
  // The foreign pods are untouched: not counted, not deleted, not changed.
  EXPECT_EQ(ControllerUid(*Pod("adopt-worker-1"), "TFJob"), "");
  EXPECT_TRUE(Pod("adopt-worker-5"));
  EXPECT_EQ(api_.Calls("delete", "pods"), 0);
  ASSERT_TRUE(WaitUntil([&] { return Events("FailedCreatePod", "adopt-worker-1") > 0; }, kWait));
}

TEST_F(OperatorTest, ANewOperatorCarriesOnWithoutDuplicatingOrLosingAnything) {
  auto first = StartOperator(Options("operator-a"));
  CreateJob(TFJobObject("resume", {{"PS", 1}, {"Worker", 2}}, "ExitCode"));
  ASSERT_TRUE(WaitUntil([&] { return PodNames().size() == 3; }, kWait));
  RunAll();
  ASSERT_TRUE(kubelet_.Exit("resume-worker-1", 137).ok());
  ASSERT_TRUE(WaitUntil([&] { return !Pod("resume-worker-1").has_value(); }, kWait));
  ASSERT_TRUE(WaitUntil(
      [&] { return !Annotation(*Service("resume-worker-1"), kRestartAfterAnnotation).empty(); },
      kWait));
  // The operator goes away in the middle of the restart's back-off.
  first->Stop();
  first.reset();
  const int creates_before = api_.Calls("create", "pods");
  auto second = StartOperator(Options("operator-b"));
  ASSERT_TRUE(WaitUntil([&] { return second->Syncs() > 0; }, kWait));
  EXPECT_EQ(api_.Calls("create", "pods"), creates_before);  // nothing created twice
  clock_.Advance(1500ms);
  ASSERT_TRUE(WaitUntil([&] { return Pod("resume-worker-1").has_value(); }, kWait));
  EXPECT_EQ(Annotation(*Pod("resume-worker-1"), kRestartsAnnotation), "1");
  ASSERT_TRUE(kubelet_.Run("resume-worker-1").ok());
  ASSERT_TRUE(WaitUntil([&] { return Condition("resume", "Running") == "True"; }, kWait));
  // Its next restart counts on from 1.
  ASSERT_TRUE(kubelet_.Exit("resume-worker-1", 137).ok());
  ASSERT_TRUE(WaitUntil(
      [&] {
        auto service = Service("resume-worker-1");
        return service && Annotation(*service, kRestartsAnnotation) == "2";
      },
      kWait));
  clock_.Advance(3s);  // RestartBackoff(1) is 2 s
  ASSERT_TRUE(WaitUntil(
      [&] {
        auto pod = Pod("resume-worker-1");
        return pod && Annotation(*pod, kRestartsAnnotation) == "2";
      },
      kWait));
  EXPECT_EQ(api_.Calls("create", "pods"), creates_before + 2);
  EXPECT_EQ(PodNames().size(), 3u);
  EXPECT_TRUE(WaitUntil([&] { return Events("TFJobRestarting") == 2; }, kWait))
      << Events("TFJobRestarting");
}

// ---- Peer reports: a hung replica is terminated and restarted; a group restart counts once ----

constexpr char kWorker1Hung[] = "peer worker:1 hung (no heartbeat for 30 s)";

std::string Uid(const std::optional<nlohmann::json>& object) {
  return object ? (*object)["metadata"].value("uid", "") : "";
}

// worker-1 hangs; worker-0 gives up on it (138, naming it). worker-1's pod is deleted, as a failed
// liveness probe would end it, and re-created with its restart count; worker-0 is re-created as a
// group restart, which backoffLimit 1 does not count.
TEST_F(OperatorTest, AHungWorkerIsTerminatedAndRestartedAndTheGroupCountsOnce) {
  auto op = StartOperator();
  CreateJob(TFJobObject("hung", {{"Worker", 2}}, "ExitCode", {{"backoffLimit", 1}}));
  ASSERT_TRUE(WaitUntil([&] { return PodNames().size() == 2; }, kWait));
  RunAll();
  ASSERT_TRUE(WaitUntil([&] { return Condition("hung", "Running") == "True"; }, kWait));
  const std::string hung_uid = Uid(Pod("hung-worker-1"));
  const std::string reporter_uid = Uid(Pod("hung-worker-0"));
  ASSERT_TRUE(kubelet_.ExitSaying("hung-worker-0", 138, kWorker1Hung).ok());
  ASSERT_TRUE(WaitUntil([&] { return PodNames().empty(); }, kWait));
  ASSERT_TRUE(WaitUntil(
      [&] { return !Annotation(*Service("hung-worker-1"), kRestartAfterAnnotation).empty(); },
      kWait));
  EXPECT_EQ(Events("Unhealthy", "hung-worker-1: worker-1 hung (no heartbeat for 30 s)"), 1);
  EXPECT_EQ(Events("TFJobRestarting", "worker-1 hung (no heartbeat for 30 s), as worker-0"), 1);
  nlohmann::json hung_service = *Service("hung-worker-1");
  EXPECT_EQ(Annotation(hung_service, kRestartsAnnotation), "1");
  EXPECT_EQ(Annotation(hung_service, kGroupRestartsAnnotation), "0");
  EXPECT_EQ(Annotation(hung_service, kRestartOfAnnotation), hung_uid);
  EXPECT_EQ(Annotation(hung_service, kTerminatedPodAnnotation), "") << "the restart replaced it";
  nlohmann::json reporter_service = *Service("hung-worker-0");
  EXPECT_EQ(Annotation(reporter_service, kRestartsAnnotation), "1");
  EXPECT_EQ(Annotation(reporter_service, kGroupRestartsAnnotation), "1");
  EXPECT_EQ(Annotation(reporter_service, kRestartOfAnnotation), reporter_uid);

  clock_.Advance(1500ms);  // RestartBackoff(0) is 1 s
  ASSERT_TRUE(WaitUntil([&] { return PodNames().size() == 2; }, kWait));
  EXPECT_NE(Uid(Pod("hung-worker-1")), hung_uid);
  EXPECT_EQ(Annotation(*Pod("hung-worker-1"), kRestartsAnnotation), "1");
  EXPECT_EQ(Annotation(*Pod("hung-worker-1"), kGroupRestartsAnnotation), "");
  EXPECT_EQ(Annotation(*Pod("hung-worker-0"), kRestartsAnnotation), "1");
  EXPECT_EQ(Annotation(*Pod("hung-worker-0"), kGroupRestartsAnnotation), "1");
  RunAll();
  ASSERT_TRUE(WaitUntil([&] { return Condition("hung", "Running") == "True"; }, kWait));
  EXPECT_NE(Condition("hung", "Failed"), "True") << ConditionMessage("hung", "Failed");
  EXPECT_EQ(api_.Calls("create", "pods"), 4);
  // One counted restart so far: worker-1's next exit is the second, past backoffLimit 1.
  ASSERT_TRUE(kubelet_.Exit("hung-worker-1", 137).ok());
  ASSERT_TRUE(WaitUntil([&] { return Condition("hung", "Failed") == "True"; }, kWait));
  EXPECT_NE(ConditionMessage("hung", "Failed").find("reached the specified backoff limit"),
            std::string::npos);
}

// A termination that cannot be recorded is not made, and the reporter's group restart waits with
// it, so that its report is still there for the next pass.
TEST_F(OperatorTest, AReporterWaitsForTheTerminationItAskedFor) {
  auto op = StartOperator();
  CreateJob(TFJobObject("retried", {{"Worker", 2}}, "ExitCode"));
  ASSERT_TRUE(WaitUntil([&] { return PodNames().size() == 2; }, kWait));
  ASSERT_TRUE(WaitUntil([&] { return Service("retried-worker-1").has_value(); }, kWait));
  RunAll();
  ASSERT_TRUE(WaitUntil([&] { return Condition("retried", "Running") == "True"; }, kWait));
  api_.FailPatches("services", 1);
  ASSERT_TRUE(kubelet_.ExitSaying("retried-worker-0", 138, kWorker1Hung).ok());
  ASSERT_TRUE(WaitUntil([&] { return PodNames().empty(); }, kWait));
  EXPECT_EQ(Annotation(*Service("retried-worker-0"), kGroupRestartsAnnotation), "1");
  ASSERT_TRUE(WaitUntil(
      [&] { return !Annotation(*Service("retried-worker-1"), kRestartAfterAnnotation).empty(); },
      kWait));
  EXPECT_EQ(Annotation(*Service("retried-worker-1"), kRestartsAnnotation), "1");
}

// An operator that stops right after terminating a pod leaves the termination on the replica's
// service: the next one observes the replica as failed with the counts recorded there, though the
// pod is gone, and restarts it from the record.
TEST_F(OperatorTest, ANewOperatorRestartsATerminatedReplicaFromItsServiceRecord) {
  auto first = StartOperator(Options("operator-a"));
  CreateJob(TFJobObject("handover", {{"Worker", 2}}, "ExitCode"));
  ASSERT_TRUE(WaitUntil([&] { return PodNames().size() == 2; }, kWait));
  ASSERT_TRUE(WaitUntil([&] { return Service("handover-worker-1").has_value(); }, kWait));
  RunAll();
  ASSERT_TRUE(WaitUntil([&] { return Condition("handover", "Running") == "True"; }, kWait));
  first->Stop();
  first.reset();
  // What the first operator's kTerminate left: worker-0's report, the record of worker-1's pod
  // (which had restarted twice before) and that pod deleted.
  const std::string hung_uid = Uid(Pod("handover-worker-1"));
  ASSERT_TRUE(kubelet_.ExitSaying("handover-worker-0", 138, kWorker1Hung).ok());
  ASSERT_TRUE(api_.Patch(ServiceResource(), "default", "handover-worker-1",
                         {{"metadata",
                           {{"annotations",
                             {{kTerminatedPodAnnotation, hung_uid},
                              {kTerminatedAtAnnotation, FormatTime(clock_.Now())},
                              {kRestartsAnnotation, "2"},
                              {kGroupRestartsAnnotation, "1"}}}}}},
                         false)
                  .ok());
  ASSERT_TRUE(api_.Delete(PodResource(), "default", "handover-worker-1", {}).ok());

  auto second = StartOperator(Options("operator-b"));
  ASSERT_TRUE(WaitUntil(
      [&] {
        auto service = Service("handover-worker-1");
        return service && Annotation(*service, kRestartsAnnotation) == "3" &&
               Annotation(*service, kTerminatedPodAnnotation).empty();
      },
      kWait));
  EXPECT_EQ(Annotation(*Service("handover-worker-1"), kGroupRestartsAnnotation), "1");
  EXPECT_EQ(Events("Unhealthy"), 0) << "nothing runs to terminate";
  clock_.Advance(5s);  // RestartBackoff(2) is 4 s
  ASSERT_TRUE(WaitUntil([&] { return PodNames().size() == 2; }, kWait));
  EXPECT_EQ(Annotation(*Pod("handover-worker-1"), kRestartsAnnotation), "3");
  EXPECT_EQ(Annotation(*Pod("handover-worker-1"), kGroupRestartsAnnotation), "1");
  EXPECT_EQ(Annotation(*Pod("handover-worker-0"), kGroupRestartsAnnotation), "1");
  RunAll();
  ASSERT_TRUE(WaitUntil([&] { return Condition("handover", "Running") == "True"; }, kWait));
  EXPECT_TRUE(Annotation(*Service("handover-worker-1"), kRestartsAnnotation).empty());
}

// The terminated replica's own policy decides: under Never its SIGTERM fails the job.
TEST_F(OperatorTest, ATerminatedReplicaUnderNeverFailsTheJob) {
  auto op = StartOperator();
  nlohmann::json tfjob = TFJobObject("strict", {{"Chief", 1}, {"Worker", 1}}, "ExitCode");
  tfjob["spec"]["tfReplicaSpecs"]["Worker"]["restartPolicy"] = "Never";
  CreateJob(tfjob);
  ASSERT_TRUE(WaitUntil([&] { return PodNames().size() == 2; }, kWait));
  RunAll();
  ASSERT_TRUE(WaitUntil([&] { return Condition("strict", "Running") == "True"; }, kWait));
  ASSERT_TRUE(
      kubelet_.ExitSaying("strict-chief-0", 138, "peer worker:0 hung (no heartbeat for 30 s)")
          .ok());
  ASSERT_TRUE(WaitUntil([&] { return Condition("strict", "Failed") == "True"; }, kWait));
  EXPECT_NE(ConditionMessage("strict", "Failed")
                .find("1 Worker replica(s) failed: worker-0 exited with code 143 (128 + SIGTERM)"),
            std::string::npos)
      << ConditionMessage("strict", "Failed");
  EXPECT_FALSE(Pod("strict-worker-0"));
  EXPECT_TRUE(WaitUntil([&] { return Events("Unhealthy", "strict-worker-0") == 1; }, kWait))
      << Events("Unhealthy", "strict-worker-0");
  EXPECT_EQ(api_.Calls("create", "pods"), 2) << "nothing restarted once the job failed";
}

TEST_F(OperatorTest, StatusWritesRetryOnConflict) {
  api_.FailStatusUpdates(2);
  auto op = StartOperator();
  CreateJob(TFJobObject("conflict", {{"Worker", 1}}));
  ASSERT_TRUE(WaitUntil([&] { return Condition("conflict", "Created") == "True"; }, kWait));
  EXPECT_GE(api_.Calls("update-status", "tfjobs"), 3);
  EXPECT_EQ(api_.Calls("create", "pods"), 1);
}

TEST_F(OperatorTest, AnExpiredWatchListsAgainAndMissesNothing) {
  auto op = StartOperator();
  CreateJob(TFJobObject("before", {{"Worker", 1}}));
  ASSERT_TRUE(WaitUntil([&] { return Pod("before-worker-0").has_value(); }, kWait));
  const int lists = op->jobs(job::TFJobKind())->Lists();
  api_.ExpireWatches();
  ASSERT_TRUE(WaitUntil([&] { return op->jobs(job::TFJobKind())->Lists() > lists; }, kWait));
  CreateJob(TFJobObject("after", {{"Worker", 1}}));
  ASSERT_TRUE(WaitUntil([&] { return Pod("after-worker-0").has_value(); }, kWait));
  ASSERT_TRUE(kubelet_.Run("before-worker-0").ok());
  ASSERT_TRUE(WaitUntil([&] { return Condition("before", "Running") == "True"; }, kWait));
  EXPECT_EQ(api_.Calls("create", "pods"), 2);
}

// kube/objects' builders: the pods carry TF_CONFIG with the services' names, and the operator's
// informers find what they build (labels, ownerReference).
TEST_F(OperatorTest, RunsAJobWithTheRealObjectBuilders) {
  OperatorOptions options = Options();
  options.objects.cluster_domain = "cluster.local";
  Operator op(api_, KubeObjectBuilders(), options, clock_.AsFunction());
  op.Start();
  nlohmann::json tfjob = TFJobObject("real", {{"PS", 1}, {"Worker", 1}});
  tfjob["spec"]["tfReplicaSpecs"]["Worker"]["template"]["spec"]["restartPolicy"] = "Always";
  CreateJob(tfjob);
  ASSERT_TRUE(WaitUntil([&] { return PodNames().size() == 2; }, kWait));
  nlohmann::json pod = *Pod("real-worker-0");
  std::string tf_config;
  for (const nlohmann::json& env : pod["spec"]["containers"][0]["env"]) {
    if (env.value("name", "") == "TF_CONFIG") tf_config = env.value("value", "");
  }
  EXPECT_NE(tf_config.find("real-ps-0.default.svc.cluster.local:2222"), std::string::npos)
      << tf_config;
  EXPECT_EQ(pod["spec"]["restartPolicy"], "Never");
  EXPECT_EQ(Service("real-ps-0").value_or(nlohmann::json())["spec"]["clusterIP"], "None");
  ASSERT_TRUE(WaitUntil([&] { return Events("SetPodTemplateRestartPolicy") == 1; }, kWait));
  RunAll();
  ASSERT_TRUE(kubelet_.Exit("real-worker-0", 0).ok());
  ASSERT_TRUE(WaitUntil([&] { return Condition("real", "Succeeded") == "True"; }, kWait));
  op.Stop();
}

// Volcano gang scheduling: the PodGroup comes first, and no pod is created until Volcano has
// admitted the group (its phase set and not Pending).
TEST_F(OperatorTest, WaitsForVolcanoToAdmitThePodGroupBeforeCreatingPods) {
  OperatorOptions options = Options();
  options.objects.gang_scheduler = "volcano";
  Operator op(api_, KubeObjectBuilders(), options, clock_.AsFunction());
  op.Start();
  CreateJob(TFJobObject("gang", {{"Worker", 2}}));
  ASSERT_TRUE(
      WaitUntil([&] { return api_.Object("podgroups", "default", "gang").has_value(); }, kWait));
  clock_.Advance(2s);
  EXPECT_FALSE(WaitUntil([&] { return !PodNames().empty(); }, 300ms));
  const Resource podgroups{"scheduling.volcano.sh", "v1beta1", "podgroups", "PodGroup", true};
  ASSERT_TRUE(
      api_.Patch(podgroups, "default", "gang", {{"status", {{"phase", "Inqueue"}}}}, false).ok());
  clock_.Advance(2s);
  ASSERT_TRUE(WaitUntil([&] { return PodNames().size() == 2; }, kWait));
  EXPECT_EQ(api_.Calls("create", "podgroups"), 1);
  op.Stop();
}

TEST_F(OperatorTest, APodThatCannotStartIsReportedOnTheJob) {
  auto op = StartOperator();
  CreateJob(TFJobObject("pull", {{"Worker", 1}}));
  ASSERT_TRUE(WaitUntil([&] { return Pod("pull-worker-0").has_value(); }, kWait));
  ASSERT_TRUE(api_.SetPodStatus("default", "pull-worker-0",
                                {{"phase", "Pending"},
                                 {"containerStatuses",
                                  {{{"name", "tensorflow"},
                                    {"restartCount", 0},
                                    {"state",
                                     {{"waiting",
                                       {{"reason", "ErrImagePull"},
                                        {"message", "pull access denied for trainer"}}}}}}}}})
                  .ok());
  ASSERT_TRUE(WaitUntil(
      [&] {
        return Events("ErrImagePull",
                      "Error pod pull-worker-0 container tensorflow waiting message: pull access "
                      "denied for trainer") >= 1;
      },
      kWait));
}

// ---- Leader election ----

OperatorOptions WithLease(OperatorOptions options) {
  LeaderElectionOptions lease;
  lease.lease_name = "cohort-operator";
  lease.lease_namespace = "default";
  lease.identity = options.identity;
  lease.lease_duration = 15s;
  lease.renew_deadline = 10s;
  lease.retry_period = 1s;
  options.leader_election = lease;
  return options;
}

TEST_F(OperatorTest, OnlyTheLeaderActsAndTheOtherTakesOverWhenItLeaves) {
  auto a = StartOperator(WithLease(Options("operator-a")));
  ASSERT_TRUE(WaitUntil([&] { return a->Acting(); }, kWait));
  auto b = StartOperator(WithLease(Options("operator-b")));
  CreateJob(TFJobObject("led", {{"Worker", 2}}));
  ASSERT_TRUE(WaitUntil([&] { return PodNames().size() == 2; }, kWait));
  ASSERT_TRUE(WaitUntil([&] { return Condition("led", "Created") == "True"; }, kWait));
  EXPECT_FALSE(b->Acting());
  EXPECT_EQ(b->Syncs(), 0);
  EXPECT_EQ(api_.Calls("create", "pods"), 2);
  // A clean shutdown releases the Lease: b takes over without waiting for it to expire.
  a->Stop();
  ASSERT_TRUE(WaitUntil([&] { return b->Acting(); }, kWait));
  nlohmann::json lease = *api_.Object("leases", "default", "cohort-operator");
  EXPECT_EQ(lease["spec"]["holderIdentity"], "operator-b");
  EXPECT_EQ(lease["spec"]["leaseTransitions"], 1);
  RunAll();
  ASSERT_TRUE(WaitUntil([&] { return Condition("led", "Running") == "True"; }, kWait));
  EXPECT_EQ(api_.Calls("create", "pods"), 2);
}

TEST(LeaderElectorTest, TakesAnExpiredLeaseAndTheOldHolderStopsLeading) {
  FakeApi api;
  FakeClock clock;
  LeaderElectionOptions options;
  options.lease_duration = 15s;
  options.renew_deadline = 10s;
  options.identity = "a";
  LeaderElector a(api, options, clock.AsFunction());
  options.identity = "b";
  LeaderElector b(api, options, clock.AsFunction());
  EXPECT_TRUE(a.TryAcquireOrRenew());
  EXPECT_FALSE(b.TryAcquireOrRenew());
  clock.Advance(10s);
  EXPECT_TRUE(a.TryAcquireOrRenew());  // renewed
  clock.Advance(14s);
  EXPECT_FALSE(b.TryAcquireOrRenew());  // 14 s since the renewal: not expired yet
  clock.Advance(2s);
  EXPECT_TRUE(b.TryAcquireOrRenew());  // a stopped renewing 16 s ago
  nlohmann::json lease = *api.Object("leases", "default", "cohort-operator");
  EXPECT_EQ(lease["spec"]["holderIdentity"], "b");
  EXPECT_EQ(lease["spec"]["leaseTransitions"], 1);
  EXPECT_EQ(lease["spec"]["leaseDurationSeconds"], 15);
  EXPECT_TRUE(ParseMicroTime(lease["spec"].value("acquireTime", "")).has_value());
  // a stopped acting at its renew deadline, 10 s after its last renewal, before b could take over;
  // trying again, it sees b holding the Lease.
  EXPECT_FALSE(a.IsLeader());
  EXPECT_FALSE(a.TryAcquireOrRenew());
  EXPECT_TRUE(b.IsLeader());
}

// An API server that stops answering the Lease's reads and writes.
class UnreachableLeaseApi : public FakeApi {
 public:
  std::atomic<bool> down{false};
  StatusOr<nlohmann::json> Get(const Resource& resource, const std::string& namespace_name,
                               const std::string& name) override {
    if (down.load()) return Status::Unavailable("get " + name + ": connection refused");
    return FakeApi::Get(resource, namespace_name, name);
  }
};

TEST(LeaderElectorTest, StopsLeadingOnceRenewalHasFailedForTheRenewDeadline) {
  UnreachableLeaseApi api;
  FakeClock clock;
  LeaderElectionOptions options;
  options.identity = "a";
  options.lease_duration = 15s;
  options.renew_deadline = 10s;
  LeaderElector a(api, options, clock.AsFunction());
  ASSERT_TRUE(a.TryAcquireOrRenew());
  api.down = true;
  clock.Advance(5s);
  EXPECT_TRUE(a.TryAcquireOrRenew());  // 5 s without renewal: still within the deadline
  clock.Advance(5s);
  // 10 s: it stops acting at the deadline itself, before its next attempt, and well before
  // anyone else may take the Lease at 15 s.
  EXPECT_FALSE(a.IsLeader());
  EXPECT_FALSE(a.TryAcquireOrRenew());
  api.down = false;
  EXPECT_TRUE(a.TryAcquireOrRenew());  // its own Lease, still on record: it leads again
}

TEST(LeaderElectorTest, MicroTimesReadBackExactly) {
  EXPECT_EQ(FormatMicroTime(*ParseMicroTime("2026-11-24T10:00:00.250000Z")),
            "2026-11-24T10:00:00.250000Z");
  EXPECT_EQ(FormatMicroTime(*ParseMicroTime("2026-11-24T10:00:00Z")),
            "2026-11-24T10:00:00.000000Z");
  EXPECT_FALSE(ParseMicroTime("yesterday").has_value());
}

}  // namespace
}  // namespace cohort::kube::testing
