// Ports and Kubernetes endpoints for a job of any kind: the kind's port name and default decide,
// never TFJob's.
#include "job/replica_endpoints.h"

#include <gtest/gtest.h>

#include "testing/test_kind.h"

namespace cohort::job {
namespace {

ReplicaSpec ShellReplicas(int count, const std::string& port_name = "", int port = 0) {
  ReplicaSpec spec;
  spec.replicas = count;
  Container container;
  container.name = "shell";
  container.image = "busybox";
  if (!port_name.empty()) container.ports.push_back({port_name, port, "TCP"});
  spec.template_spec.containers.push_back(container);
  return spec;
}

TEST(ReplicaEndpoints, TheKindsPortNameAndDefaultDecide) {
  const JobKind& shell = testing::ShellKind();
  EXPECT_EQ(ReplicaPort(shell, ShellReplicas(1, "peer-port", 7100)), 7100);
  EXPECT_EQ(ReplicaPort(shell, ShellReplicas(1)), 7000);
  // A TFJob's port name means nothing to another kind.
  EXPECT_EQ(ReplicaPort(shell, ShellReplicas(1, "tfjob-port", 5000)), 7000);
}

TEST(ReplicaEndpoints, KubernetesNamesUseTheJobsKind) {
  Job job = testing::ShellKind().NewJob();
  job.metadata.name = "sh";
  job.metadata.namespace_name = "lab";
  job.replica_specs = {{testing::kNode, ShellReplicas(2, "peer-port", 7100)},
                       {testing::kLeader, ShellReplicas(1)}};
  EndpointFunction endpoint = KubernetesEndpoints(job, "cluster.local");
  EXPECT_EQ(endpoint(testing::kNode, 1), "sh-node-1.lab.svc.cluster.local:7100");
  EXPECT_EQ(endpoint(testing::kLeader, 0), "sh-leader-0.lab.svc.cluster.local:7000");
  EXPECT_EQ(KubernetesEndpoints(job)("Other", 0), "sh-other-0.lab.svc:7000");
}

}  // namespace
}  // namespace cohort::job
