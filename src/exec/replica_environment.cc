#include "exec/replica_environment.h"

#include "cluster/peer_report.h"
#include "cluster/summary_location.h"
#include "job/job_kind.h"
#include "job/reconciler.h"
#include "job/variable_references.h"

extern char** environ;

namespace cohort::exec {

std::string ShortReplicaName(const std::string& replica_type, int index) {
  return job::LowerCase(replica_type) + "-" + std::to_string(index);
}

StatusOr<const job::Container*> ReplicaContainer(const job::Job& job,
                                                 const std::string& replica_type) {
  const job::JobKind& kind = *job.job_kind;
  const job::Container* container =
      kind.MainContainer(job.replica_specs.at(replica_type).template_spec);
  if (container == nullptr) {
    return Status::InvalidArgument("no container named " + kind.facts().container_name);
  }
  return container;
}

std::map<std::string, std::string> ReplicaEnvironment(const job::Job& job,
                                                      const std::string& replica_type, int index,
                                                      const std::map<std::string, int>& ports,
                                                      const std::string& secret) {
  std::map<std::string, std::string> environment;
  for (char** entry = environ; *entry != nullptr; ++entry) {
    std::string text = *entry;
    size_t equals = text.find('=');
    if (equals != std::string::npos) environment[text.substr(0, equals)] = text.substr(equals + 1);
  }
  // The kind's cluster variable (TF_CONFIG) or a job identity inherited from whoever started
  // cohort must never leak in.
  const job::JobKind& kind = *job.job_kind;
  for (const std::string& name : kind.EnvironmentNames()) environment.erase(name);
  for (const char* name :
       {"COHORT_JOB_NAME", "COHORT_REPLICA_TYPE", "COHORT_REPLICA_INDEX", "COHORT_JOB_SECRET",
        cluster::kTerminationMessagePathVariable, cluster::kSummaryDirectoryVariable}) {
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
  for (const job::EnvVar& variable : kind.ReplicaEnvironment(job, replica_type, index, endpoint)) {
    environment[variable.name] = variable.value;
  }
  environment[job::kJobNameVariable] = job.metadata.name;
  environment["COHORT_REPLICA_TYPE"] = job::LowerCase(replica_type);
  environment["COHORT_REPLICA_INDEX"] = std::to_string(index);
  environment["COHORT_JOB_SECRET"] = secret;
  return environment;
}

std::map<std::string, std::string> ArgumentVariables(const job::Job& job,
                                                     const std::string& replica_type, int index,
                                                     const std::map<std::string, int>& ports) {
  std::map<std::string, std::string> variables;
  if (StatusOr<const job::Container*> container = ReplicaContainer(job, replica_type);
      container.ok()) {
    for (const job::EnvVar& variable : (*container)->env) {
      if (variable.value_from.is_null()) variables[variable.name] = variable.value;
    }
  }
  auto endpoint = [&](const std::string& type, int task_index) {
    auto it = ports.find(ShortReplicaName(type, task_index));
    return "localhost:" + std::to_string(it == ports.end() ? 0 : it->second);
  };
  for (const job::EnvVar& variable :
       job.job_kind->ReplicaEnvironment(job, replica_type, index, endpoint)) {
    variables[variable.name] = variable.value;
  }
  variables[job::kJobNameVariable] = job.metadata.name;
  return variables;
}

}  // namespace cohort::exec
