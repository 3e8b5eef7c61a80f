#include "job/cluster_builder.h"

#include <algorithm>
#include <map>
#include <utility>

#include "job/tfjob.h"

namespace cohort::job {
namespace {

// The port TF_CONFIG advertises when a replica names none: the kind's tfjob-port default.
int DefaultPort() { return TFJobKind().facts().port; }

int ReplicaCount(const ReplicaSpec& spec) { return std::max(0, static_cast<int>(spec.replicas)); }

// The sparse cluster the operator gives `task` (see tf_config.h), from the full cluster.
void MakeSparse(const cluster::ClusterSpec& full, cluster::TfConfig* config) {
  config->sparse = true;
  const cluster::TaskId& task = config->task;
  if (task.type == "ps") {
    config->sparse_ps.push_back(full.Endpoint(task));
  } else if (task.type == "worker") {
    auto ps = full.jobs.find("ps");
    if (ps != full.jobs.end()) config->sparse_ps = ps->second;
    config->sparse_workers.emplace(task.index, full.Endpoint(task));
  }
}

}  // namespace

int ReplicaPort(const ReplicaSpec& spec) {
  const Container* container = TFJobKind().MainContainer(spec.template_spec);
  if (container == nullptr) return DefaultPort();
  for (const ContainerPort& port : container->ports) {
    if (port.name == TFJobKind().facts().port_name) return port.container_port;
  }
  return DefaultPort();
}

EndpointFunction KubernetesEndpoints(const Job& job, const std::string& cluster_domain) {
  std::string suffix = "." + job.metadata.namespace_name + ".svc";
  if (!cluster_domain.empty()) suffix += "." + cluster_domain;
  std::map<std::string, int> ports;  // by lower-cased type, so either spelling finds it
  for (const auto& [type, spec] : job.replica_specs) ports[LowerCase(type)] = ReplicaPort(spec);
  return [name = job.metadata.name, suffix = std::move(suffix), ports = std::move(ports)](
             const std::string& replica_type, int index) {
    auto port = ports.find(LowerCase(replica_type));
    const int number = port == ports.end() ? DefaultPort() : port->second;
    return ReplicaName(name, replica_type, index) + suffix + ":" + std::to_string(number);
  };
}

bool IsDistributed(const Job& job) {
  int total = 0;
  for (const std::string& type : TFJobKind().facts().replica_types) {
    auto spec = job.replica_specs.find(type);
    if (spec != job.replica_specs.end()) total += ReplicaCount(spec->second);
  }
  return total != 1;
}

bool EvaluatorInCluster(const Job& job) {
  auto annotation = job.metadata.annotations.find(kEvaluatorInClusterAnnotation);
  return annotation == job.metadata.annotations.end() || annotation->second != "false";
}

cluster::ClusterSpec BuildClusterSpec(const Job& job, const EndpointFunction& endpoint) {
  const bool evaluator_in_cluster = EvaluatorInCluster(job);
  cluster::ClusterSpec spec;
  for (const auto& [type, replica] : job.replica_specs) {
    const std::string task_type = LowerCase(type);
    if (task_type == "evaluator" && !evaluator_in_cluster) continue;
    std::vector<std::string> endpoints;
    for (int index = 0; index < ReplicaCount(replica); ++index) {
      endpoints.push_back(endpoint(type, index));
    }
    // Two keys that differ only in case share a task type; like the operator, the last one wins.
    spec.jobs[task_type] = std::move(endpoints);
  }
  return spec;
}

cluster::TfConfig BuildTfConfig(const Job& job, const std::string& replica_type, int index,
                                const EndpointFunction& endpoint) {
  cluster::TfConfig config;
  config.task = cluster::TaskId{LowerCase(replica_type), index};
  cluster::ClusterSpec full = BuildClusterSpec(job, endpoint);
  if (DynamicWorkerEnabled(job)) {
    MakeSparse(full, &config);
    return config;
  }
  config.cluster = std::move(full);
  // The operator always writes it: tf.contrib.learn <= 1.3 otherwise assumed a local run.
  config.environment = "cloud";
  return config;
}

std::optional<std::string> TfConfigForReplica(const Job& job, const std::string& replica_type,
                                              int index, const EndpointFunction& endpoint) {
  if (!IsDistributed(job)) return std::nullopt;
  return cluster::FormatTfConfig(BuildTfConfig(job, replica_type, index, endpoint));
}

}  // namespace cohort::job
