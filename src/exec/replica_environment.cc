#include "exec/replica_environment.h"

#include <optional>

#include "job/cluster_builder.h"
#include "job/reconciler.h"

extern char** environ;

namespace cohort::exec {

std::string ShortReplicaName(const std::string& replica_type, int index) {
  return job::LowerCase(replica_type) + "-" + std::to_string(index);
}

StatusOr<const job::Container*> ReplicaContainer(const job::TFJob& job,
                                                 const std::string& replica_type) {
  const job::Container* container =
      job::TensorflowContainer(job.replica_specs.at(replica_type).template_spec);
  if (container == nullptr) return Status::InvalidArgument("no container named tensorflow");
  return container;
}

std::map<std::string, std::string> ReplicaEnvironment(const job::TFJob& job,
                                                      const std::string& replica_type, int index,
                                                      const std::map<std::string, int>& ports,
                                                      const std::string& secret) {
  std::map<std::string, std::string> environment;
  for (char** entry = environ; *entry != nullptr; ++entry) {
    std::string text = *entry;
    size_t equals = text.find('=');
    if (equals != std::string::npos) environment[text.substr(0, equals)] = text.substr(equals + 1);
  }
  // A TF_CONFIG or job identity inherited from whoever started cohort must never leak in.
  for (const char* name : {"TF_CONFIG", "COHORT_JOB_NAME", "COHORT_REPLICA_TYPE",
                           "COHORT_REPLICA_INDEX", "COHORT_JOB_SECRET"}) {
    environment.erase(name);
  }
  if (StatusOr<const job::Container*> container = ReplicaContainer(job, replica_type);
      container.ok()) {
    for (const job::EnvVar& variable : (*container)->env) {
      if (variable.value_from.is_null()) environment[variable.name] = variable.value;
    }
  }
  auto endpoint = [&](const std::string& type, int task_index) {
    auto it = ports.find(ShortReplicaName(type, task_index));
    return "localhost:" + std::to_string(it == ports.end() ? 0 : it->second);
  };
  if (std::optional<std::string> tf_config =
          job::TfConfigForReplica(job, replica_type, index, endpoint)) {
    environment["TF_CONFIG"] = *tf_config;
  }
  environment["COHORT_JOB_NAME"] = job.metadata.name;
  environment["COHORT_REPLICA_TYPE"] = job::LowerCase(replica_type);
  environment["COHORT_REPLICA_INDEX"] = std::to_string(index);
  environment["COHORT_JOB_SECRET"] = secret;
  return environment;
}

}  // namespace cohort::exec
