#include "job/defaults.h"

#include <utility>
#include <vector>

#include "job/job_kind.h"
#include "job/yaml_document.h"

namespace cohort::job {
namespace {

// Re-keys every position under `from` (the path itself, its fields and its items) to `to`.
void RenamePositions(std::map<std::string, SourcePosition>& positions, const std::string& from,
                     const std::string& to) {
  std::vector<std::pair<std::string, SourcePosition>> moved;
  for (auto it = positions.lower_bound(from); it != positions.end();) {
    const std::string& path = it->first;
    if (path.compare(0, from.size(), from) != 0) break;
    bool under = path.size() == from.size() || path[from.size()] == '.' || path[from.size()] == '[';
    if (!under) {
      ++it;
      continue;
    }
    moved.emplace_back(to + path.substr(from.size()), it->second);
    it = positions.erase(it);
  }
  for (auto& [path, position] : moved) positions[path] = std::move(position);
}

void NormaliseReplicaTypes(Job& job) {
  const KindFacts& facts = job.job_kind->facts();
  const std::string replica_specs_path = ChildPath("spec", facts.replica_specs_field);
  std::vector<std::pair<std::string, std::string>> renames;
  for (const auto& [type, spec] : job.replica_specs) {
    std::string canonical = job.job_kind->CanonicalReplicaType(type);
    if (canonical != type) renames.emplace_back(type, canonical);
  }
  for (const auto& [from, to] : renames) {
    // Two spellings of one type ("ps" and "Ps") both want the same key; the first keeps it and
    // the other stays as written for validation to report.
    if (job.replica_specs.count(to)) continue;
    auto node = job.replica_specs.extract(from);
    node.key() = to;
    job.replica_specs.insert(std::move(node));
    RenamePositions(job.positions, ChildPath(replica_specs_path, from),
                    ChildPath(replica_specs_path, to));
  }
}

// The container the operator gives the default port: the one with the kind's container name
// (TFJob: tensorflow), else the first.
Container* PortContainer(const KindFacts& facts, PodTemplate& pod_template) {
  for (Container& container : pod_template.containers) {
    if (container.name == facts.container_name) return &container;
  }
  return pod_template.containers.empty() ? nullptr : &pod_template.containers.front();
}

void SetDefaultPort(const KindFacts& facts, PodTemplate& pod_template) {
  Container* container = PortContainer(facts, pod_template);
  if (container == nullptr) return;
  for (const ContainerPort& port : container->ports) {
    if (port.name == facts.port_name) return;
  }
  ContainerPort port;
  port.name = facts.port_name;
  port.container_port = facts.port;
  container->ports.push_back(port);
}

}  // namespace

void ApplyDefaults(Job& job) {
  if (job.metadata.namespace_name.empty()) job.metadata.namespace_name = kDefaultNamespace;
  NormaliseReplicaTypes(job);
  for (auto& [type, replica] : job.replica_specs) {
    SetDefaultPort(job.job_kind->facts(), replica.template_spec);
  }
  job.job_kind->ApplySpecFieldDefaults(job);
}

}  // namespace cohort::job
