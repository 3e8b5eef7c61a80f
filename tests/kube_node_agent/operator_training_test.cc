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
#include "kube/api/http_api.h"
#include "kube/api/kubeconfig.h"
#include "kube/operator/operator.h"
#include "testing/files.h"
#include "testing/host.h"
#include "testing/kube_test_cluster.h"
#include "testing/node_agent.h"
#include "testing/scratch_directory.h"
#include "testing/wait.h"

namespace cohort::testing {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;

class OperatorTrainingTest : public KubeClusterTest {};

TEST_F(OperatorTrainingTest, MnistJobSucceedsThroughAWorkerRecreatedByTheOperator) {
#ifndef COHORT_NODE_AGENT_TRAINS
  GTEST_SKIP() << "this build has no cohort-train (COHORT_WITH_TORCH is off)";
#else
  if (Status supported = CheckNodeAgentSupported(); !supported.ok()) {
    if (RunningInCi()) FAIL() << supported.ToString();
    GTEST_SKIP() << supported.ToString();
  }
  const std::string ns = "operator-mnist";
  ASSERT_TRUE(cluster().CreateNamespace(ns).ok());
  StatusOr<std::string> crd =
      ReadWholeFile(std::string(COHORT_TEST_DATA_DIR) + "/kube/tfjob-crd-minimal.yaml");
  ASSERT_TRUE(crd.ok()) << crd.status().ToString();
  KubectlResult applied = cluster().Kubectl("apply -f -", *crd);
  ASSERT_TRUE(applied.ok()) << applied.Describe();
  KubectlResult established =
      cluster().Kubectl("wait --for=condition=Established --timeout=60s crd/tfjobs.kubeflow.org");
  ASSERT_TRUE(established.ok()) << established.Describe();
  StatusOr<kube::ConnectionConfig> config =
      kube::LoadKubeconfig({cluster().admin_kubeconfig()}, "");
  ASSERT_TRUE(config.ok()) << config.status().ToString();
  kube::HttpApi api(*config, kube::HttpApiOptions{});

  ScratchDirectory scratch;
  NodeAgentOptions agent_options;
  agent_options.node_name = "operator-node";
  ASSERT_TRUE(agent_options.images
                  .AddFlag("cohort/mnist-train=" + std::string(COHORT_BINARY_DIR) +
                           "/apps/cohort-train/cohort-train")
                  .ok());
  agent_options.work_dir = scratch.path() / "node";
  agent_options.schedule_namespace = ns;
  StatusOr<std::unique_ptr<NodeAgent> > agent = NodeAgent::Start(api, std::move(agent_options));
  ASSERT_TRUE(agent.ok()) << agent.status().ToString();

  kube::OperatorOptions options;
  options.namespace_name = ns;
  options.identity = "operator-under-test";
  options.informer.watch_timeout = 2s;
  options.informer.retry_delay = 200ms;
  options.queue_poll = 50ms;
  kube::Operator op(api, kube::KubeObjectBuilders(), options);
  op.Start();

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
      "            - name: tensorflow\n              image: cohort/mnist-train\n"
      "              args:\n" +
      args;
  KubectlResult created = cluster().Kubectl("apply -n " + ns + " -f -", manifest);
  ASSERT_TRUE(created.ok()) << created.Describe();

  auto log = [&](const std::string& pod) {
    return ReadText((*agent)->LogPath(ns, pod, "tensorflow", 0));
  };
  const std::filesystem::path state = out / "backup" / "chief" / "checkpoint";
  ASSERT_TRUE(
      WaitUntil([&] { return ReadText(state).find("ckpt-2") != std::string::npos; }, 240s, 100ms))
      << "no second backup; the chief's log:\n"
      << log("mnist-worker-0");
  StatusOr<json> victim = api.Get(kube::PodResource(), ns, "mnist-worker-1");
  ASSERT_TRUE(victim.ok()) << victim.status().ToString();
  const std::string victim_uid = (*victim)["metadata"].value("uid", "");
  ASSERT_TRUE((*agent)->Kill(ns, "mnist-worker-1").ok());

  // The operator replaces the failed pod with a new one (a new uid) that runs again.
  EXPECT_TRUE(WaitUntil(
      [&] {
        StatusOr<json> pod = api.Get(kube::PodResource(), ns, "mnist-worker-1");
        return pod.ok() && (*pod)["metadata"].value("uid", "") != victim_uid;
      },
      120s, 200ms))
      << "mnist-worker-1 was never recreated";
  auto succeeded = [&] {
    StatusOr<json> job = api.Get(kube::TFJobResource(), ns, "mnist");
    if (!job.ok() || !(*job)["status"].is_object()) return false;
    for (const json& condition : (*job)["status"].value("conditions", json::array())) {
      if (condition.value("type", "") == "Succeeded" && condition.value("status", "") == "True") {
        return true;
      }
    }
    return false;
  };
  EXPECT_TRUE(WaitUntil(succeeded, 300s, 200ms)) << "the job never succeeded; worker 0's log:\n"
                                                 << log("mnist-worker-0") << "\nworker 1's log:\n"
                                                 << log("mnist-worker-1");
  op.Stop();
  EXPECT_TRUE(std::filesystem::exists(out / "model" / "manifest.json"));
  // The recreated worker resumed from the backup.
  std::string resumed = log("mnist-worker-1");
  EXPECT_NE(resumed.find("resuming from epoch 1"), std::string::npos) << resumed;
#endif
}

}  // namespace
}  // namespace cohort::testing
