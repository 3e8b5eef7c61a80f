#include <gtest/gtest.h>

#include <string>

#include "job/replica_endpoints.h"
#include "job/tfjob.h"

namespace cohort::job {
namespace {

ReplicaSpec Replicas(int count, int port = 0) {
  ReplicaSpec spec;
  spec.replicas = count;
  Container container;
  container.name = "tensorflow";
  container.image = "tensorflow/tensorflow:2.15.0";
  if (port != 0) container.ports.push_back({"tfjob-port", port, "TCP"});
  spec.template_spec.containers.push_back(container);
  return spec;
}

Job MakeJob(const std::string& name, const std::string& namespace_name,
            std::map<std::string, ReplicaSpec> replica_specs) {
  Job job = NewTFJob();
  job.metadata.name = name;
  job.metadata.namespace_name = namespace_name;
  job.replica_specs = std::move(replica_specs);
  return job;
}

// docs/behaviour.md §2.3: job mnist in namespace kubeflow with 1 chief, 2 ps and 2 workers.
Job Mnist() {
  return MakeJob(
      "mnist", "kubeflow",
      {{kChief, Replicas(1, 2222)}, {kPS, Replicas(2, 2222)}, {kWorker, Replicas(2, 2222)}});
}

std::string ConfigOf(const Job& job, const std::string& type, int index,
                     const std::string& cluster_domain = "") {
  std::optional<std::string> config =
      TfConfigForReplica(job, type, index, KubernetesEndpoints(job, cluster_domain));
  EXPECT_TRUE(config.has_value()) << type << " " << index;
  return config.value_or("");
}

TEST(TfConfigForReplica, MatchesTheReferenceExample) {
  EXPECT_EQ(
      ConfigOf(Mnist(), kWorker, 1),
      R"({"cluster":{"chief":["mnist-chief-0.kubeflow.svc:2222"],"ps":["mnist-ps-0.kubeflow.svc:2222","mnist-ps-1.kubeflow.svc:2222"],"worker":["mnist-worker-0.kubeflow.svc:2222","mnist-worker-1.kubeflow.svc:2222"]},"task":{"type":"worker","index":1},"environment":"cloud"})");
}

TEST(TfConfigForReplica, EveryReplicaSharesTheClusterAndHasItsOwnTask) {
  const std::string cluster =
      R"({"cluster":{"chief":["mnist-chief-0.kubeflow.svc:2222"],"ps":["mnist-ps-0.kubeflow.svc:2222","mnist-ps-1.kubeflow.svc:2222"],"worker":["mnist-worker-0.kubeflow.svc:2222","mnist-worker-1.kubeflow.svc:2222"]},)";
  EXPECT_EQ(ConfigOf(Mnist(), kChief, 0),
            cluster + R"("task":{"type":"chief","index":0},"environment":"cloud"})");
  EXPECT_EQ(ConfigOf(Mnist(), kPS, 1),
            cluster + R"("task":{"type":"ps","index":1},"environment":"cloud"})");
  // The task type is lower-cased whatever case it is asked for in.
  EXPECT_EQ(ConfigOf(Mnist(), "worker", 0),
            cluster + R"("task":{"type":"worker","index":0},"environment":"cloud"})");
}

TEST(TfConfigForReplica, UsesEachReplicasOwnPortAndNamespace) {
  Job job = MakeJob("dist", "team-a", {{kPS, Replicas(1, 3333)}, {kWorker, Replicas(2)}});
  EXPECT_EQ(
      ConfigOf(job, kPS, 0),
      R"({"cluster":{"ps":["dist-ps-0.team-a.svc:3333"],"worker":["dist-worker-0.team-a.svc:2222","dist-worker-1.team-a.svc:2222"]},"task":{"type":"ps","index":0},"environment":"cloud"})");
}

TEST(TfConfigForReplica, AppendsTheClusterDomain) {
  Job job = MakeJob("j", "default", {{kWorker, Replicas(2)}});
  EXPECT_EQ(
      ConfigOf(job, kWorker, 1, "cluster.local"),
      R"({"cluster":{"worker":["j-worker-0.default.svc.cluster.local:2222","j-worker-1.default.svc.cluster.local:2222"]},"task":{"type":"worker","index":1},"environment":"cloud"})");
}

TEST(TfConfigForReplica, EvaluatorIsInTheClusterByDefault) {
  Job job = MakeJob("e", "ns",
                    {{kChief, Replicas(1)}, {kEvaluator, Replicas(1)}, {kWorker, Replicas(1)}});
  EXPECT_EQ(
      ConfigOf(job, kEvaluator, 0),
      R"({"cluster":{"chief":["e-chief-0.ns.svc:2222"],"evaluator":["e-evaluator-0.ns.svc:2222"],"worker":["e-worker-0.ns.svc:2222"]},"task":{"type":"evaluator","index":0},"environment":"cloud"})");
}

TEST(TfConfigForReplica, AnnotationLeavesTheEvaluatorOut) {
  Job job = MakeJob("e", "ns",
                    {{kChief, Replicas(1)}, {kEvaluator, Replicas(1)}, {kWorker, Replicas(1)}});
  job.metadata.annotations[kEvaluatorInClusterAnnotation] = "false";
  const std::string cluster =
      R"({"cluster":{"chief":["e-chief-0.ns.svc:2222"],"worker":["e-worker-0.ns.svc:2222"]},)";
  EXPECT_EQ(ConfigOf(job, kEvaluator, 0),
            cluster + R"("task":{"type":"evaluator","index":0},"environment":"cloud"})");
  EXPECT_EQ(ConfigOf(job, kChief, 0),
            cluster + R"("task":{"type":"chief","index":0},"environment":"cloud"})");
  job.metadata.annotations[kEvaluatorInClusterAnnotation] = "true";
  EXPECT_TRUE(EvaluatorInCluster(job));
}

TEST(TfConfigForReplica, TheEvaluatorsConfigParsesWhenItIsOutOfTheCluster) {
  Job job = MakeJob("e", "ns",
                    {{kChief, Replicas(1)}, {kEvaluator, Replicas(1)}, {kWorker, Replicas(1)}});
  job.metadata.annotations[kEvaluatorInClusterAnnotation] = "false";
  StatusOr<cluster::TfConfig> parsed = cluster::ParseTfConfig(ConfigOf(job, kEvaluator, 0));
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  EXPECT_EQ(parsed->task, (cluster::TaskId{"evaluator", 0}));
}

TEST(TfConfigForReplica, UnknownReplicaTypesAreIncludedLowerCased) {
  Job job = MakeJob("u", "ns", {{"Sidecar", Replicas(1, 4444)}, {kWorker, Replicas(2)}});
  EXPECT_EQ(
      ConfigOf(job, "Sidecar", 0),
      R"({"cluster":{"sidecar":["u-sidecar-0.ns.svc:4444"],"worker":["u-worker-0.ns.svc:2222","u-worker-1.ns.svc:2222"]},"task":{"type":"sidecar","index":0},"environment":"cloud"})");
}

TEST(TfConfigForReplica, MasterIsWrittenAsMaster) {
  Job job = MakeJob("m", "ns", {{kMaster, Replicas(1)}, {kWorker, Replicas(1)}});
  EXPECT_EQ(
      ConfigOf(job, kMaster, 0),
      R"({"cluster":{"master":["m-master-0.ns.svc:2222"],"worker":["m-worker-0.ns.svc:2222"]},"task":{"type":"master","index":0},"environment":"cloud"})");
}

TEST(TfConfigForReplica, ASingleReplicaGetsNone) {
  Job job = MakeJob("one", "ns", {{kWorker, Replicas(1)}});
  EXPECT_FALSE(IsDistributed(job));
  EXPECT_EQ(TfConfigForReplica(job, kWorker, 0, KubernetesEndpoints(job)), std::nullopt);
  job = MakeJob("one", "ns", {{kChief, Replicas(1)}, {kWorker, Replicas(0)}});
  EXPECT_EQ(TfConfigForReplica(job, kChief, 0, KubernetesEndpoints(job)), std::nullopt);
}

TEST(TfConfigForReplica, UnknownTypesDoNotCountTowardsDistributed) {
  // The operator counts only Chief, Evaluator, Master, PS and Worker.
  Job job = MakeJob("one", "ns", {{kWorker, Replicas(1)}, {"Sidecar", Replicas(3)}});
  EXPECT_FALSE(IsDistributed(job));
  EXPECT_TRUE(IsDistributed(MakeJob("two", "ns", {{kWorker, Replicas(2)}})));
}

Job DynamicMnist() {
  Job job = Mnist();
  job.kind_spec[kEnableDynamicWorkerField] = true;
  return job;
}

TEST(TfConfigForReplica, SparseWorkerSeesItselfAndEveryPs) {
  EXPECT_EQ(
      ConfigOf(DynamicMnist(), kWorker, 1),
      R"({"sparseCluster":{"worker":{"1":"mnist-worker-1.kubeflow.svc:2222"},"ps":["mnist-ps-0.kubeflow.svc:2222","mnist-ps-1.kubeflow.svc:2222"]},"task":{"type":"worker","index":1}})");
}

TEST(TfConfigForReplica, SparsePsSeesOnlyItself) {
  EXPECT_EQ(
      ConfigOf(DynamicMnist(), kPS, 1),
      R"({"sparseCluster":{"worker":{},"ps":["mnist-ps-1.kubeflow.svc:2222"]},"task":{"type":"ps","index":1}})");
}

TEST(TfConfigForReplica, SparseChiefSeesNobody) {
  EXPECT_EQ(ConfigOf(DynamicMnist(), kChief, 0),
            R"({"sparseCluster":{"worker":{},"ps":[]},"task":{"type":"chief","index":0}})");
}

TEST(TfConfigForReplica, SparseWorkerOfAJobWithoutPsGetsNull) {
  Job job = MakeJob("d", "ns", {{kWorker, Replicas(3)}});
  job.kind_spec[kEnableDynamicWorkerField] = true;
  EXPECT_EQ(
      ConfigOf(job, kWorker, 2),
      R"({"sparseCluster":{"worker":{"2":"d-worker-2.ns.svc:2222"},"ps":null},"task":{"type":"worker","index":2}})");
}

TEST(TfConfigForReplica, EveryConfigParsesBackToWhatWasBuilt) {
  for (const Job& job : {Mnist(), DynamicMnist()}) {
    const EndpointFunction endpoints = KubernetesEndpoints(job);
    for (const auto& [type, spec] : job.replica_specs) {
      for (int index = 0; index < spec.replicas; ++index) {
        const cluster::TfConfig built = BuildTfConfig(job, type, index, endpoints);
        StatusOr<cluster::TfConfig> parsed = cluster::ParseTfConfig(cluster::FormatTfConfig(built));
        ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
        EXPECT_EQ(*parsed, built);
      }
    }
  }
}

TEST(BuildClusterSpec, UsesTheGivenEndpoints) {
  Job job = MakeJob("local", "ns", {{kChief, Replicas(1)}, {kWorker, Replicas(2)}});
  cluster::ClusterSpec cluster = BuildClusterSpec(job, [](const std::string& type, int index) {
    return "127.0.0.1:" + std::to_string((type == kChief ? 20000 : 21000) + index);
  });
  EXPECT_EQ(cluster.jobs.at("chief"), (std::vector<std::string>{"127.0.0.1:20000"}));
  EXPECT_EQ(cluster.jobs.at("worker"),
            (std::vector<std::string>{"127.0.0.1:21000", "127.0.0.1:21001"}));
}

TEST(ReplicaPort, TfjobPortOfTheTensorflowContainerElse2222) {
  EXPECT_EQ(ReplicaPort(TFJobKind(), Replicas(1, 5000)), 5000);
  EXPECT_EQ(ReplicaPort(TFJobKind(), Replicas(1)), 2222);
  ReplicaSpec other_container;
  Container sidecar;
  sidecar.name = "sidecar";
  sidecar.ports.push_back({"tfjob-port", 9999, "TCP"});
  other_container.template_spec.containers.push_back(sidecar);
  EXPECT_EQ(ReplicaPort(TFJobKind(), other_container), 2222);
}

}  // namespace
}  // namespace cohort::job
