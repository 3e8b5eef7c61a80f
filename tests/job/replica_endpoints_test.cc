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
  // One replica's host, as an operator names a single peer: the service's short name.
  EXPECT_EQ(endpoint.Host(testing::kNode, 1), "sh-node-1");
  EXPECT_EQ(endpoint.Port(testing::kNode, 1), 7100);
}

TEST(ReplicaEndpoints, AnEndpointFunctionsHostAndPortAreItsEndpointsParts) {
  const EndpointFunction local = [](const std::string&, int index) {
    return "localhost:" + std::to_string(41000 + index);
  };
  EXPECT_EQ(local("Worker", 2), "localhost:41002");
  EXPECT_EQ(local.Host("Worker", 2), "localhost");
  EXPECT_EQ(local.Port("Worker", 2), 41002);
  const EndpointFunction odd = [](const std::string& type, int) { return type; };
  EXPECT_EQ(odd.Host("no-port", 0), "no-port");
  EXPECT_EQ(odd.Port("no-port", 0), 0);
  EXPECT_EQ(odd.Port("host:99999999999", 0), 0) << "not a port";
}

}  // namespace
}  // namespace cohort::job
