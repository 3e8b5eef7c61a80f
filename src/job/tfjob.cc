#include "job/tfjob.h"

#include <algorithm>
#include <optional>
#include <utility>
#include <vector>

namespace cohort::job {
namespace {

KindFacts TFJobFacts() {
  KindFacts facts;
  facts.group = "kubeflow.org";
  facts.version = "v1";
  facts.kind = "TFJob";
  facts.plural = "tfjobs";
  facts.replica_specs_field = "tfReplicaSpecs";
  facts.container_name = "tensorflow";
  facts.port_name = "tfjob-port";
  facts.port = 2222;
  facts.replica_types = {kChief, kEvaluator, kMaster, kPS, kWorker};
  facts.chief_types = {kChief, kMaster};
  facts.worker_type = kWorker;
  facts.reason_prefix = "TFJob";
  facts.controller_name = "tfjob-controller";
  facts.cluster_variable = "TF_CONFIG";
  facts.older_versions = "v1alpha2, v1beta1 or v1beta2";
  facts.spec_fields = {
      SpecField{kSuccessPolicyField, SpecField::Type::kString, ""},
      SpecField{kEnableDynamicWorkerField, SpecField::Type::kBool, false},
  };
  return facts;
}

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

std::string Quote(const std::string& text) {
  return nlohmann::json(text).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

class TFJobKindImpl : public JobKind {
 public:
  TFJobKindImpl() : JobKind(TFJobFacts()) {}

  std::vector<FieldProblem> ValidateSpecFields(const Job& job) const override {
    const std::string policy = TFJobSuccessPolicy(job);
    if (policy.empty() || policy == kSuccessPolicyAllWorkers) return {};
    return {FieldProblem{std::string("spec.") + kSuccessPolicyField,
                         Quote(policy) + " is not one of \"\" (the default), AllWorkers"}};
  }

  bool FirstWorkerDecidesSuccess(const Job& job) const override {
    return TFJobSuccessPolicy(job) != kSuccessPolicyAllWorkers;
  }

  bool ToleratesFailure(const Job& job, const std::string& replica_type) const override {
    return DynamicWorkerEnabled(job) && replica_type == kWorker;
  }

  std::vector<EnvVar> ReplicaEnvironment(const Job& job, const std::string& replica_type, int index,
                                         const EndpointFunction& endpoint) const override {
    std::optional<std::string> tf_config = TfConfigForReplica(job, replica_type, index, endpoint);
    if (!tf_config) return {};
    return {EnvVar{facts().cluster_variable, *tf_config, {}}};
  }
};

}  // namespace

const JobKind& TFJobKind() {
  static const TFJobKindImpl kind;
  return kind;
}

Job NewTFJob() { return TFJobKind().NewJob(); }

std::string TFJobSuccessPolicy(const Job& job) {
  nlohmann::json value = TFJobKind().SpecFieldValue(job, kSuccessPolicyField);
  return value.is_string() ? value.get<std::string>() : "";
}

bool DynamicWorkerEnabled(const Job& job) {
  nlohmann::json value = TFJobKind().SpecFieldValue(job, kEnableDynamicWorkerField);
  return value.is_boolean() && value.get<bool>();
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
