#include "job/job_kind.h"

#include "job/pytorchjob.h"
#include "job/tfjob.h"

namespace cohort::job {

std::string EndpointFunction::Host(const std::string& replica_type, int index) const {
  if (host_) return host_(replica_type, index);
  const std::string endpoint = endpoint_(replica_type, index);
  return endpoint.substr(0, endpoint.rfind(':'));
}

int EndpointFunction::Port(const std::string& replica_type, int index) const {
  const std::string endpoint = endpoint_(replica_type, index);
  const size_t colon = endpoint.rfind(':');
  if (colon == std::string::npos) return 0;
  if (colon + 1 == endpoint.size()) return 0;
  int port = 0;
  for (size_t i = colon + 1; i < endpoint.size(); ++i) {
    if (endpoint[i] < '0' || endpoint[i] > '9') return 0;
    port = port * 10 + (endpoint[i] - '0');
    if (port > 65535) return 0;
  }
  return port;
}

Job JobKind::NewJob() const {
  Job job;
  job.job_kind = this;
  job.api_version = api_version();
  job.kind = name();
  return job;
}

std::string JobKind::CanonicalReplicaType(const std::string& type) const {
  for (const std::string& known : facts_.replica_types) {
    if (LowerCase(known) == LowerCase(type)) return known;
  }
  return type;
}

bool JobKind::IsReplicaType(const std::string& type) const {
  for (const std::string& known : facts_.replica_types) {
    if (known == type) return true;
  }
  return false;
}

bool JobKind::IsChiefType(const std::string& type) const {
  for (const std::string& chief : facts_.chief_types) {
    if (chief == type) return true;
  }
  return false;
}

const Container* JobKind::MainContainer(const PodTemplate& pod_template) const {
  for (const Container& container : pod_template.containers) {
    if (container.name == facts_.container_name) return &container;
  }
  return nullptr;
}

const SpecField* JobKind::FindSpecField(const std::string& name) const {
  for (const SpecField& field : facts_.spec_fields) {
    if (field.name == name) return &field;
  }
  return nullptr;
}

nlohmann::json JobKind::SpecFieldValue(const Job& job, const std::string& name) const {
  auto written = job.kind_spec.find(name);
  if (written != job.kind_spec.end()) return written->second;
  const SpecField* field = FindSpecField(name);
  return field == nullptr ? nlohmann::json() : field->default_value;
}

std::vector<FieldProblem> JobKind::ValidateSpecFields(const Job&) const { return {}; }

std::vector<FieldProblem> JobKind::ValidateReplicaSpecs(const Job&) const { return {}; }

void JobKind::ApplySpecFieldDefaults(Job&) const {}

std::optional<std::pair<std::string, int>> JobKind::ReplicaOfTask(const Job& job,
                                                                  const std::string& task_type,
                                                                  int task_index) const {
  for (const auto& [type, spec] : job.replica_specs) {
    if (LowerCase(type) == task_type && task_index >= 0 && task_index < spec.replicas) {
      return std::make_pair(type, task_index);
    }
  }
  return std::nullopt;
}

std::vector<std::string> JobKind::EnvironmentNames() const { return {facts_.cluster_variable}; }

std::vector<nlohmann::json> JobKind::InitContainers(const Job&, const std::string&, int) const {
  return {};
}

std::string JobKind::RunningMessage(const Job& job) const {
  return name() + " " + job.metadata.namespace_name + "/" + job.metadata.name + " is running.";
}

std::string JobKind::SucceededMessage(const Job& job) const {
  return name() + " " + job.metadata.namespace_name + "/" + job.metadata.name +
         " successfully completed.";
}

std::string JobKind::ReplicasFailedMessage(const Job& job, int failed,
                                           const std::string& replica_type) const {
  return name() + " " + job.metadata.namespace_name + "/" + job.metadata.name +
         " has failed because " + std::to_string(failed) + " " + replica_type +
         " replica(s) failed.";
}

const KindRegistry& KindRegistry::Default() {
  static const KindRegistry registry({&TFJobKind(), &PyTorchJobKind()});
  return registry;
}

const JobKind* KindRegistry::Find(const std::string& api_version, const std::string& kind) const {
  for (const JobKind* candidate : kinds_) {
    if (candidate->api_version() == api_version && candidate->name() == kind) return candidate;
  }
  return nullptr;
}

const JobKind* KindRegistry::FindByName(const std::string& kind) const {
  for (const JobKind* candidate : kinds_) {
    if (candidate->name() == kind) return candidate;
  }
  return nullptr;
}

const JobKind* KindRegistry::FindByUserName(const std::string& name) const {
  const std::string lower = LowerCase(name);
  for (const JobKind* candidate : kinds_) {
    const std::string singular = LowerCase(candidate->name());
    const std::string& plural = candidate->facts().plural;
    const std::string group = "." + candidate->facts().group;
    if (lower == singular || lower == plural || lower == singular + group ||
        lower == plural + group) {
      return candidate;
    }
  }
  return nullptr;
}

std::string KindRegistry::Names(const std::string& separator) const {
  std::string names;
  for (const JobKind* kind : kinds_) names += (names.empty() ? "" : separator) + kind->name();
  return names;
}

}  // namespace cohort::job
