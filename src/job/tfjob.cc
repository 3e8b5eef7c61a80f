#include "job/tfjob.h"

#include <optional>
#include <vector>

#include "job/cluster_builder.h"

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

}  // namespace cohort::job
