// kube/view: what a pod's STATUS reads as kubectl prints it, which replica it runs, and a TFJob
// whose spec or status cannot be read.
#include "kube/view/kube_job_store.h"

#include <gtest/gtest.h>

namespace cohort::kube {
namespace {

using json = nlohmann::json;

json PodWith(const json& container_status, const std::string& phase = "Running") {
  return {{"metadata", {{"name", "mnist-worker-0"}}},
          {"status", {{"phase", phase}, {"containerStatuses", {container_status}}}}};
}

TEST(PodStatusTextTest, ReadsAsKubectlsStatusColumn) {
  EXPECT_EQ(
      PodStatusText(PodWith({{"name", "tensorflow"}, {"state", {{"running", json::object()}}}})),
      "Running");
  EXPECT_EQ(PodStatusText(PodWith({{"name", "tensorflow"},
                                   {"state", {{"waiting", {{"reason", "CrashLoopBackOff"}}}}}})),
            "CrashLoopBackOff");
  EXPECT_EQ(PodStatusText(PodWith({{"name", "tensorflow"},
                                   {"state", {{"waiting", {{"reason", "ContainerCreating"}}}}}},
                                  "Pending")),
            "ContainerCreating");
  EXPECT_EQ(
      PodStatusText(PodWith(
          {{"name", "tensorflow"}, {"state", {{"terminated", {{"exitCode", 137}}}}}}, "Failed")),
      "Error");
  EXPECT_EQ(
      PodStatusText(PodWith(
          {{"name", "tensorflow"}, {"state", {{"terminated", {{"exitCode", 0}}}}}}, "Succeeded")),
      "Completed");
  EXPECT_EQ(PodStatusText(
                PodWith({{"name", "tensorflow"},
                         {"state", {{"terminated", {{"exitCode", 137}, {"reason", "OOMKilled"}}}}}},
                        "Failed")),
            "OOMKilled");
  json terminating = PodWith({{"name", "tensorflow"}, {"state", {{"running", json::object()}}}});
  terminating["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z";
  EXPECT_EQ(PodStatusText(terminating), "Terminating");
  EXPECT_EQ(PodStatusText({{"metadata", {{"name", "p"}}}}), "Pending");
}

TEST(PodStatusTextTest, TheMainContainerIsTensorflowEvenWhenASidecarIsFirst) {
  json pod = {{"status",
               {{"phase", "Running"},
                {"containerStatuses",
                 {{{"name", "istio-proxy"}, {"restartCount", 0}},
                  {{"name", "tensorflow"}, {"restartCount", 4}}}}}}};
  ASSERT_NE(MainContainerStatus(pod), nullptr);
  EXPECT_EQ((*MainContainerStatus(pod))["restartCount"], 4);
}

TEST(ReplicaOfPodTest, ComesFromTheOperatorsLabels) {
  json pod = {{"metadata",
               {{"labels",
                 {{"training.kubeflow.org/replica-type", "worker"},
                  {"training.kubeflow.org/replica-index", "3"}}}}}};
  EXPECT_EQ(ReplicaOfPod(pod), "worker-3");
  EXPECT_EQ(ReplicaOfPod({{"metadata", {{"name", "unlabelled"}}}}), "");
  EXPECT_EQ(JobPodSelector("mnist"), "training.kubeflow.org/job-name=mnist");
}

TEST(ClusterJobStoreTest, ABadStatusIsNamedWithItsTFJob) {
  KubeJobStore store;
  json tfjob = {
      {"apiVersion", "kubeflow.org/v1"},
      {"kind", "TFJob"},
      {"metadata", {{"name", "mnist"}, {"namespace", "team"}}},
      {"spec",
       {{"tfReplicaSpecs",
         {{"Worker",
           {{"replicas", 1},
            {"template",
             {{"spec", {{"containers", {{{"name", "tensorflow"}, {"image", "m"}}}}}}}}}}}}}},
      {"status", {{"conditions", "not a list"}}}};
  Status added = store.Add({tfjob, {}, {}});
  EXPECT_EQ(added.code(), Status::Code::kInvalidArgument);
  EXPECT_NE(added.message().find("TFJob team/mnist: status"), std::string::npos)
      << added.ToString();
  tfjob["status"] = json::object();
  KubeJobStore fresh;
  EXPECT_TRUE(fresh.Add({tfjob, {}, {}}).ok());
  EXPECT_EQ(fresh.LogLocation({"team", "mnist"}, "worker-0"), "pod/mnist-worker-0");
}

}  // namespace
}  // namespace cohort::kube
