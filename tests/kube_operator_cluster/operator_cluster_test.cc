// `cohort operator`'s Operator against a real Kubernetes API server
// (tests/testing/kube_test_cluster.h), through HttpApi: the objects it writes (pods, services,
// /status, Events, the Lease) are accepted as they are, and a job runs from creation to success
// and through an ExitCode re-creation, with the test as kubelet (pod /status patches). Each test
// works in a namespace of its own.
#include <gtest/gtest.h>

#include <chrono>
#include <nlohmann/json.hpp>
#include <string>

#include "base/file.h"
#include "kube/api/http_api.h"
#include "kube/api/kubeconfig.h"
#include "kube/operator/operator.h"
#include "kube/operator/replica_objects.h"
#include "testing/kube_test_cluster.h"
#include "testing/wait.h"

namespace cohort::kube {
namespace {

using namespace std::chrono_literals;
using cohort::testing::KubeClusterTest;
using cohort::testing::KubectlResult;
using cohort::testing::WaitUntil;

constexpr auto kWait = std::chrono::milliseconds(60000);

std::string NamespaceOfThisTest() {
  std::string name = ::testing::UnitTest::GetInstance()->current_test_info()->name();
  for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return "operator-" + name;
}

class OperatorClusterTest : public KubeClusterTest {
 protected:
  void SetUp() override {
    KubeClusterTest::SetUp();
    if (IsSkipped() || HasFailure()) return;
    namespace_ = NamespaceOfThisTest();
    Status created = cluster().CreateNamespace(namespace_);
    ASSERT_TRUE(created.ok()) << created.ToString();
    StatusOr<std::string> crd =
        ReadWholeFile(std::string(COHORT_TEST_DATA_DIR) + "/kube/tfjob-crd-minimal.yaml");
    ASSERT_TRUE(crd.ok()) << crd.status().ToString();
    KubectlResult applied = cluster().Kubectl("apply -f -", *crd);
    ASSERT_TRUE(applied.ok()) << applied.Describe();
    KubectlResult established =
        cluster().Kubectl("wait --for=condition=Established --timeout=60s crd/tfjobs.kubeflow.org");
    ASSERT_TRUE(established.ok()) << established.Describe();
    StatusOr<ConnectionConfig> config = LoadKubeconfig({cluster().admin_kubeconfig()}, "");
    ASSERT_TRUE(config.ok()) << config.status().ToString();
    api_ = std::make_unique<HttpApi>(*config, HttpApiOptions{});
  }

  void TearDown() override {
    if (operator_) operator_->Stop();
  }

  std::unique_ptr<Operator> NewOperator(const std::string& identity) {
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
    return std::make_unique<Operator>(*api_, KubeObjectBuilders(), options);
  }

  void StartOperator() {
    OperatorOptions options;
    options.namespace_name = namespace_;
    options.identity = "operator-under-test";
    options.informer.watch_timeout = 2s;
    options.informer.retry_delay = 200ms;
    options.queue_poll = 50ms;
    LeaderElectionOptions lease;
    lease.lease_namespace = namespace_;
    lease.identity = options.identity;
    lease.retry_period = 1s;
    options.leader_election = lease;
    operator_ = std::make_unique<Operator>(*api_, KubeObjectBuilders(), options);
    operator_->Start();
  }

  void CreateJob(const std::string& name, const std::string& restart_policy) {
    const std::string manifest =
        "apiVersion: kubeflow.org/v1\nkind: TFJob\nmetadata:\n  name: " + name +
        "\nspec:\n  tfReplicaSpecs:\n    Worker:\n      replicas: 1\n      restartPolicy: " +
        restart_policy +
        "\n      template:\n        spec:\n          automountServiceAccountToken: false\n"
        "          containers:\n          - name: tensorflow\n            image: "
        "cohort-test/none\n";
    KubectlResult created = cluster().Kubectl("-n " + namespace_ + " create -f -", manifest);
    ASSERT_TRUE(created.ok()) << created.Describe();
  }

  std::optional<nlohmann::json> Get(const Resource& resource, const std::string& name) {
    StatusOr<nlohmann::json> object = api_->Get(resource, namespace_, name);
    if (!object.ok()) return std::nullopt;
    return *object;
  }

  std::string Condition(const std::string& job, const std::string& type) {
    std::optional<nlohmann::json> tfjob = Get(TFJobResource(), job);
    if (!tfjob || !(*tfjob)["status"].is_object()) return "";
    for (const nlohmann::json& condition :
         (*tfjob)["status"].value("conditions", nlohmann::json::array())) {
      if (condition.value("type", "") == type) return condition.value("status", "");
    }
    return "";
  }

  // The kubelet's part: the pod's tensorflow container runs, or ends with `exit_code`.
  void SetPodPhase(const std::string& pod, const std::string& phase, int exit_code = 0) {
    const std::string now = FormatTime(Clock::now());
    nlohmann::json state =
        phase == "Running"
            ? nlohmann::json{{"running", {{"startedAt", now}}}}
            : nlohmann::json{{"terminated",
                              {{"exitCode", exit_code}, {"startedAt", now}, {"finishedAt", now}}}};
    nlohmann::json status = {{"status",
                              {{"phase", phase},
                               {"startTime", now},
                               {"containerStatuses",
                                {{{"name", "tensorflow"},
                                  {"image", "cohort-test/none"},
                                  {"imageID", ""},
                                  {"ready", phase == "Running"},
                                  {"restartCount", 0},
                                  {"state", state}}}}}}};
    StatusOr<nlohmann::json> patched = api_->Patch(PodResource(), namespace_, pod, status, true);
    ASSERT_TRUE(patched.ok()) << patched.status().ToString();
  }

  int Events(const std::string& reason) {
    StatusOr<ObjectList> events = api_->List(EventResource(), namespace_);
    if (!events.ok()) return 0;
    int count = 0;
    for (const nlohmann::json& event : events->items) {
      if (event.value("reason", "") == reason) count += event.value("count", 1);
    }
    return count;
  }

  std::string namespace_;
  std::unique_ptr<HttpApi> api_;
  std::unique_ptr<Operator> operator_;
};

TEST_F(OperatorClusterTest, RunsAJobToSuccess) {
  StartOperator();
  CreateJob("mnist", "Never");
  ASSERT_TRUE(WaitUntil([&] { return Get(PodResource(), "mnist-worker-0").has_value(); }, kWait));
  EXPECT_TRUE(Get(ServiceResource(), "mnist-worker-0").has_value());
  ASSERT_TRUE(WaitUntil([&] { return Condition("mnist", "Created") == "True"; }, kWait));
  SetPodPhase("mnist-worker-0", "Running");
  ASSERT_TRUE(WaitUntil([&] { return Condition("mnist", "Running") == "True"; }, kWait));
  SetPodPhase("mnist-worker-0", "Succeeded", 0);
  ASSERT_TRUE(WaitUntil([&] { return Condition("mnist", "Succeeded") == "True"; }, kWait));
  ASSERT_TRUE(WaitUntil([&] { return Events("TFJobSucceeded") == 1; }, kWait));
  EXPECT_EQ(Events("SuccessfulCreatePod"), 1);
  std::optional<nlohmann::json> lease = Get(LeaseResource(), "cohort-operator");
  ASSERT_TRUE(lease);
  EXPECT_EQ((*lease)["spec"]["holderIdentity"], "operator-under-test");
}

TEST_F(OperatorClusterTest, RecreatesARetryableExitWithItsRestartCount) {
  StartOperator();
  CreateJob("retry", "ExitCode");
  ASSERT_TRUE(WaitUntil([&] { return Get(PodResource(), "retry-worker-0").has_value(); }, kWait));
  const std::string first_uid = (*Get(PodResource(), "retry-worker-0"))["metadata"]["uid"];
  SetPodPhase("retry-worker-0", "Running");
  SetPodPhase("retry-worker-0", "Failed", 137);
  ASSERT_TRUE(WaitUntil(
      [&] {
        std::optional<nlohmann::json> pod = Get(PodResource(), "retry-worker-0");
        return pod && (*pod)["metadata"]["uid"] != first_uid;
      },
      kWait));
  EXPECT_EQ(Annotation(*Get(PodResource(), "retry-worker-0"), kRestartsAnnotation), "1");
  ASSERT_TRUE(WaitUntil([&] { return Events("TFJobRestarting") == 1; }, kWait));
  SetPodPhase("retry-worker-0", "Running");
  ASSERT_TRUE(WaitUntil([&] { return Condition("retry", "Running") == "True"; }, kWait));
}

// Two operators, one Lease: only the holder creates anything; when it stops (releasing the
// Lease) the other takes over and carries the job on from what is on the server.
TEST_F(OperatorClusterTest, TheSecondOperatorTakesOverWhenTheLeaderStops) {
  std::unique_ptr<Operator> first = NewOperator("operator-one");
  first->Start();
  ASSERT_TRUE(WaitUntil([&] { return first->Acting(); }, kWait));
  std::unique_ptr<Operator> second = NewOperator("operator-two");
  second->Start();
  CreateJob("handover", "Never");
  ASSERT_TRUE(
      WaitUntil([&] { return Get(PodResource(), "handover-worker-0").has_value(); }, kWait));
  ASSERT_TRUE(WaitUntil([&] { return Condition("handover", "Created") == "True"; }, kWait));
  EXPECT_FALSE(second->Acting());
  EXPECT_EQ(second->Syncs(), 0);
  first->Stop();
  ASSERT_TRUE(WaitUntil([&] { return second->Acting(); }, kWait));
  std::optional<nlohmann::json> lease = Get(LeaseResource(), "cohort-operator");
  ASSERT_TRUE(lease);
  EXPECT_EQ((*lease)["spec"]["holderIdentity"], "operator-two");
  EXPECT_EQ((*lease)["spec"]["leaseTransitions"], 1);
  SetPodPhase("handover-worker-0", "Running");
  SetPodPhase("handover-worker-0", "Succeeded", 0);
  ASSERT_TRUE(WaitUntil([&] { return Condition("handover", "Succeeded") == "True"; }, kWait));
  EXPECT_EQ(Events("SuccessfulCreatePod"), 1);
  second->Stop();
}

}  // namespace
}  // namespace cohort::kube
