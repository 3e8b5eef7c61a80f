// The end to end of `cohort operator` with pods that train for real: the mnist example's TFJob
// (2 workers, few steps) applied with kubectl to a real API server, the Operator creating its pods
// and services, the test node agent running them with cohort-train. A worker SIGKILLed mid-run
// fails its pod (restartPolicy ExitCode: 137 is retryable), the operator recreates it, the
// workers resume from the chief's backup and the job ends Succeeded with a saved model.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "base/file.h"
#include "job/tfjob.h"
#include "kube/client/http_api.h"
#include "kube/client/kubeconfig.h"
#include "kube/objects/objects.h"
#include "kube/operator/operator.h"
#include "kube/operator/replica_objects.h"
#include "testing/files.h"
#include "testing/host.h"
#include "testing/kube_test_cluster.h"
#include "testing/node_agent.h"
#include "testing/scratch_directory.h"
#include "testing/wait.h"

// Only in a build with cohort-train (COHORT_WITH_TORCH): without it these tests do not exist,
// rather than skip.
#ifdef COHORT_NODE_AGENT_TRAINS
namespace cohort::testing {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;

// The operator and a node agent for namespace `ns`, on the shared API server with the TFJob CRD.
struct Cluster {
  explicit Cluster(const kube::ConnectionConfig& config) : api(config, kube::HttpApiOptions{}) {}
  kube::HttpApi api;
  std::unique_ptr<NodeAgent> agent;
  std::unique_ptr<kube::Operator> op;
};

StatusOr<std::unique_ptr<Cluster>> StartOperatorAndAgent(const std::string& ns,
                                                         const std::filesystem::path& work_dir) {
  StatusOr<KubeTestCluster*> shared = SharedKubeTestCluster();
  if (!shared.ok()) return shared.status();
  KubeTestCluster& server = **shared;
  COHORT_RETURN_IF_ERROR(server.CreateNamespace(ns));
  StatusOr<std::string> crd =
      ReadWholeFile(std::string(COHORT_TEST_DATA_DIR) + "/kube/tfjob-crd-minimal.yaml");
  if (!crd.ok()) return crd.status();
  KubectlResult applied = server.Kubectl("apply -f -", *crd);
  if (!applied.ok()) return Status::Internal(applied.Describe());
  KubectlResult established =
      server.Kubectl("wait --for=condition=Established --timeout=60s crd/tfjobs.kubeflow.org");
  if (!established.ok()) return Status::Internal(established.Describe());
  StatusOr<kube::ConnectionConfig> config = kube::LoadKubeconfig({server.admin_kubeconfig()}, "");
  if (!config.ok()) return config.status();
  auto cluster = std::make_unique<Cluster>(*config);

  NodeAgentOptions agent_options;
  agent_options.node_name = ns + "-node";
  COHORT_RETURN_IF_ERROR(
      agent_options.images.AddFlag("localhost/mnist-train=" + std::string(COHORT_BINARY_DIR) +
                                   "/apps/cohort-train/cohort-train"));
  agent_options.work_dir = work_dir / "node";
  agent_options.schedule_namespace = ns;
  StatusOr<std::unique_ptr<NodeAgent>> agent =
      NodeAgent::Start(cluster->api, std::move(agent_options));
  if (!agent.ok()) return agent.status();
  cluster->agent = std::move(*agent);

  kube::OperatorOptions options;
  options.namespace_name = ns;
  options.identity = "operator-under-test";
  options.informer.watch_timeout = 2s;
  options.informer.retry_delay = 200ms;
  options.queue_poll = 50ms;
  cluster->op = std::make_unique<kube::Operator>(cluster->api, kube::KubeObjectBuilders(), options);
  cluster->op->Start();
  return cluster;
}

bool JobSucceeded(kube::Api& api, const std::string& ns, const std::string& name) {
  StatusOr<json> job = api.Get(kube::JobResource(job::TFJobKind()), ns, name);
  if (!job.ok() || !(*job)["status"].is_object()) return false;
  for (const json& condition : (*job)["status"].value("conditions", json::array())) {
    if (condition.value("type", "") == "Succeeded" && condition.value("status", "") == "True") {
      return true;
    }
  }
  return false;
}

class OperatorTrainingTest : public KubeClusterTest {};

TEST_F(OperatorTrainingTest, MnistJobSucceedsThroughAWorkerRecreatedByTheOperator) {
  if (Status supported = CheckNodeAgentSupported(); !supported.ok()) {
    COHORT_SKIP_OR_FAIL_IN_CI(supported.ToString());
  }
  const std::string ns = "operator-mnist";
  ScratchDirectory scratch;
  StatusOr<std::unique_ptr<Cluster>> started = StartOperatorAndAgent(ns, scratch.path());
  ASSERT_TRUE(started.ok()) << started.status().ToString();
  kube::HttpApi& api = (*started)->api;
  NodeAgent& agent = *(*started)->agent;
  kube::Operator& op = *(*started)->op;

  // The example's manifest with 2 workers, few steps, files in the scratch directory and
  // restartPolicy ExitCode, so that a killed worker's pod is recreated by the operator.
  const std::filesystem::path out = scratch.path() / "mnist";
  std::string args;
  for (const std::string& flag :
       {std::string("--epochs=2"), std::string("--steps_per_epoch=40"),
        std::string("--per_worker_batch=32"), std::string("--seed=7"), std::string("--threads=1"),
        std::string("--backup_every_steps=10"), "--checkpoint_path=" + (out / "backup").string(),
        "--saved_model_path=" + (out / "model").string(),
        "--tensorboard_dir=" + (out / "logs").string()}) {
    args += "                - \"" + flag + "\"\n";
  }
  const std::string manifest =
      "apiVersion: kubeflow.org/v1\nkind: TFJob\nmetadata:\n  name: mnist\nspec:\n"
      "  runPolicy:\n    backoffLimit: 6\n  tfReplicaSpecs:\n    Worker:\n      replicas: 2\n"
      "      restartPolicy: ExitCode\n      template:\n        spec:\n          containers:\n"
      "            - name: tensorflow\n              image: localhost/mnist-train\n"
      "              args:\n" +
      args;
  KubectlResult created = cluster().Kubectl("apply -n " + ns + " -f -", manifest);
  ASSERT_TRUE(created.ok()) << created.Describe();

  auto log = [&](const std::string& pod) {
    return ReadText(agent.LogPath(ns, pod, "tensorflow", 0));
  };
  const std::filesystem::path state = out / "backup" / "chief" / "checkpoint";
  ASSERT_TRUE(
      WaitUntil([&] { return ReadText(state).find("ckpt-2") != std::string::npos; }, 240s, 100ms))
      << "no second backup; the chief's log:\n"
      << log("mnist-worker-0");
  StatusOr<json> victim = api.Get(kube::PodResource(), ns, "mnist-worker-1");
  ASSERT_TRUE(victim.ok()) << victim.status().ToString();
  const std::string victim_uid = (*victim)["metadata"].value("uid", "");
  ASSERT_TRUE(agent.Kill(ns, "mnist-worker-1").ok());

  // The operator replaces the failed pod with a new one (a new uid) that runs again.
  EXPECT_TRUE(WaitUntil(
      [&] {
        StatusOr<json> pod = api.Get(kube::PodResource(), ns, "mnist-worker-1");
        return pod.ok() && (*pod)["metadata"].value("uid", "") != victim_uid;
      },
      120s, 200ms))
      << "mnist-worker-1 was never recreated";
  auto succeeded = [&] { return JobSucceeded(api, ns, "mnist"); };
  EXPECT_TRUE(WaitUntil(succeeded, 300s, 200ms)) << "the job never succeeded; worker 0's log:\n"
                                                 << log("mnist-worker-0") << "\nworker 1's log:\n"
                                                 << log("mnist-worker-1");
  op.Stop();
  EXPECT_TRUE(std::filesystem::exists(out / "model" / "manifest.json"));
  // The recreated worker resumed from the backup.
  std::string resumed = log("mnist-worker-1");
  EXPECT_NE(resumed.find("resuming from epoch 1"), std::string::npos) << resumed;
  // Every run, the recreated worker's too, authenticated its peers with the job secret from the
  // job's Secret, which the operator made: none ran in open mode.
  StatusOr<json> secret = api.Get(kube::SecretResource(), ns, "mnist-tfjob-secret");
  ASSERT_TRUE(secret.ok()) << secret.status().ToString();
  StatusOr<json> tfjob = api.Get(kube::JobResource(job::TFJobKind()), ns, "mnist");
  ASSERT_TRUE(tfjob.ok()) << tfjob.status().ToString();
  EXPECT_EQ(kube::ControllerUid(*secret, "TFJob"), (*tfjob)["metadata"].value("uid", ""));
  for (const std::string pod : {"mnist-worker-0", "mnist-worker-1"}) {
    EXPECT_EQ(log(pod).find("runs in open mode"), std::string::npos) << pod << ": " << log(pod);
  }
}

// As a new user would: the flagship's manifest exactly as written (3 workers, 3 epochs, files in
// /tmp/cohort-mnist), applied with kubectl; kubectl shows the operator's status and events.
TEST_F(OperatorTrainingTest, TheFlagshipManifestTrainsAsWritten) {
  if (Status supported = CheckNodeAgentSupported(); !supported.ok()) {
    COHORT_SKIP_OR_FAIL_IN_CI(supported.ToString());
  }
  const std::string ns = "flagship";
  ScratchDirectory scratch;
  StatusOr<std::unique_ptr<Cluster>> started = StartOperatorAndAgent(ns, scratch.path());
  ASSERT_TRUE(started.ok()) << started.status().ToString();
  const std::filesystem::path out = "/tmp/cohort-mnist";  // where the manifest writes
  std::filesystem::remove_all(out);
  // The CRD Cohort ships, for kubectl's STATE column (--validate=false: this 1.20 server does
  // not know its CEL rule).
  const std::string source = std::string(COHORT_TEST_DATA_DIR) + "/../..";
  KubectlResult crd =
      cluster().Kubectl("apply --validate=false -f " + source + "/deploy/kubernetes/crd.yaml");
  ASSERT_TRUE(crd.ok()) << crd.Describe();
  const std::string manifest = source + "/examples/mnist/tfjob.yaml";
  KubectlResult created = cluster().Kubectl("apply -n " + ns + " -f " + manifest);
  ASSERT_TRUE(created.ok()) << created.Describe();
  EXPECT_TRUE(WaitUntil([&] { return JobSucceeded((*started)->api, ns, "mnist"); }, 900s, 500ms))
      << "the flagship never succeeded; worker 0's log:\n"
      << ReadText((*started)->agent->LogPath(ns, "mnist-worker-0", "tensorflow", 0));
  (*started)->op->Stop();
  EXPECT_TRUE(std::filesystem::exists(out / "mnist" / "saved_model" / "manifest.json"))
      << "the kubelet expands $(COHORT_JOB_NAME) in args";
  KubectlResult listed = cluster().Kubectl("get tfjobs -n " + ns);
  EXPECT_NE(listed.out.find("Succeeded"), std::string::npos) << listed.Describe() << listed.out;
  KubectlResult described = cluster().Kubectl("describe tfjob mnist -n " + ns);
  EXPECT_NE(described.out.find("TFJobSucceeded"), std::string::npos) << described.out;
  EXPECT_NE(described.out.find("SuccessfulCreatePod"), std::string::npos) << described.out;
  std::filesystem::remove_all(out);
}

}  // namespace
}  // namespace cohort::testing
#endif  // COHORT_NODE_AGENT_TRAINS
