#include "job/replica_endpoints.h"

#include <cassert>
#include <map>
#include <utility>

namespace cohort::job {

int ReplicaPort(const JobKind& kind, const ReplicaSpec& spec) {
  const Container* container = kind.MainContainer(spec.template_spec);
  if (container != nullptr) {
    for (const ContainerPort& port : container->ports) {
      if (port.name == kind.facts().port_name) return port.container_port;
    }
  }
  return kind.facts().port;
}

EndpointFunction KubernetesEndpoints(const Job& job, const std::string& cluster_domain) {
  assert(job.job_kind != nullptr);
  std::string suffix = "." + job.metadata.namespace_name + ".svc";
  if (!cluster_domain.empty()) suffix += "." + cluster_domain;
  std::map<std::string, int> ports;  // by lower-cased type, so either spelling finds it
  for (const auto& [type, spec] : job.replica_specs) {
    ports[LowerCase(type)] = ReplicaPort(*job.job_kind, spec);
  }
  return [name = job.metadata.name, suffix = std::move(suffix), ports = std::move(ports),
          default_port = job.job_kind->facts().port](const std::string& replica_type, int index) {
    auto port = ports.find(LowerCase(replica_type));
    const int number = port == ports.end() ? default_port : port->second;
    return ReplicaName(name, replica_type, index) + suffix + ":" + std::to_string(number);
  };
}

}  // namespace cohort::job
