#include "kube/objects/objects.h"

#include <utility>

#include "cluster/peer_report.h"
#include "job/job_kind.h"
#include "job/job_secret.h"
#include "job/replica_endpoints.h"
#include "job/spec_writer.h"
#include "job/variable_references.h"
#include "kube/client/base64.h"
#include "kube/objects/quantity.h"

namespace cohort::kube {
namespace {

using nlohmann::json;

constexpr const char* kLabelPrefix = "training.kubeflow.org/";
constexpr const char* kVolcano = "volcano";
constexpr const char* kVolcanoGroupAnnotation = "scheduling.k8s.io/group-name";
constexpr const char* kVolcanoTaskAnnotation = "volcano.sh/task-spec";
constexpr const char* kSchedulerPluginsGroupLabel = "scheduling.x-k8s.io/pod-group";

std::string JobNameLabel(const std::string& name) {
  std::string label = name;
  for (char& c : label) {
    if (c == '/') c = '-';
  }
  return label;
}

// The operator's single controller reference, or nothing for a job not on a server. An owner
// without apiVersion or kind is the job's kind's.
void SetOwnerReference(const job::Job& job, const Owner& owner, json& metadata) {
  if (owner.uid.empty()) return;
  json reference = {
      {"apiVersion", owner.api_version.empty() ? job.job_kind->api_version() : owner.api_version},
      {"kind", owner.kind.empty() ? job.job_kind->name() : owner.kind},
      {"name", owner.name},
      {"uid", owner.uid},
      {"blockOwnerDeletion", true},
      {"controller", true}};
  metadata["ownerReferences"] = json::array({std::move(reference)});
}

StatusOr<const job::ReplicaSpec*> FindReplica(const job::Job& job, const std::string& replica_type,
                                              int index) {
  if (job.job_kind == nullptr) {
    return Status::InvalidArgument("job " + job.metadata.name + " has no kind");
  }
  auto found = job.replica_specs.find(replica_type);
  if (found == job.replica_specs.end()) {
    return Status::InvalidArgument("job " + job.metadata.name + " has no replica type " +
                                   replica_type);
  }
  if (index < 0 || index >= found->second.replicas) {
    return Status::InvalidArgument(job.metadata.name + " " + replica_type + " index " +
                                   std::to_string(index) + " is out of range 0-" +
                                   std::to_string(found->second.replicas - 1));
  }
  return &found->second;
}

// Whether the container's template env already names `variable`.
bool SetsVariable(const json& env, const std::string& variable) {
  if (!env.is_array()) return false;
  for (const json& item : env) {
    if (item.is_object() && item.value("name", json()) == variable) return true;
  }
  return false;
}

// The chief-like replica ("master role"): the chief-like types when the job has one, else
// worker 0. Parameter servers never are.
bool IsMasterRole(const job::Job& job, const std::string& replica_type, int index) {
  const job::KindFacts& facts = job.job_kind->facts();
  bool has_chief = false;
  for (const std::string& chief : facts.chief_types)
    has_chief |= job.replica_specs.count(chief) > 0;
  if (has_chief) return job.job_kind->IsChiefType(replica_type);
  return replica_type == facts.worker_type && index == 0;
}

// ExitCode is the operator's own policy; the pod gets Never and the operator reads the code.
std::string PodRestartPolicy(job::RestartPolicy policy) {
  return policy == job::RestartPolicy::kExitCode ? "Never" : job::ToString(policy);
}

bool IsVolcano(const ObjectOptions& options) { return options.gang_scheduler == kVolcano; }

// Requests of a container, or its limits when it has no requests, added to `total`.
Status AddContainerResources(const json& container, std::map<std::string, Quantity>& total,
                             const std::string& where) {
  if (!container.is_object()) return Status::OK();
  auto resources = container.find("resources");
  if (resources == container.end() || !resources->is_object()) return Status::OK();
  auto requests = resources->find("requests");
  const json* list = nullptr;
  if (requests != resources->end() && requests->is_object()) {
    list = &*requests;
  } else if (auto limits = resources->find("limits");
             limits != resources->end() && limits->is_object()) {
    list = &*limits;
  }
  if (list == nullptr) return Status::OK();
  for (const auto& [name, value] : list->items()) {
    std::string text = value.is_string() ? value.get<std::string>() : value.dump();
    StatusOr<Quantity> quantity = Quantity::Parse(text);
    if (!quantity.ok()) {
      return Status::InvalidArgument(where + ".resources." + name + ": " +
                                     quantity.status().message());
    }
    if (Status added = total[name].Add(*quantity); !added.ok()) return added;
  }
  return Status::OK();
}

// The resources of the first `min_member` pods (replica types in key order), as the operator's
// CalcPGMinResources adds them when schedulingPolicy.minResources is not given.
StatusOr<json> MinResources(const job::Job& job, int64_t min_member) {
  std::map<std::string, Quantity> total;
  int64_t pods = 0;
  for (const auto& [type, spec] : job.replica_specs) {
    json pod_template = job::PodTemplateToJson(spec.template_spec);
    const json containers = pod_template.value("spec", json::object()).value("containers", json());
    for (int index = 0; index < spec.replicas && pods < min_member; ++index, ++pods) {
      if (!containers.is_array()) continue;
      for (size_t i = 0; i < containers.size(); ++i) {
        std::string where =
            job::LowerCase(type) + " template containers[" + std::to_string(i) + "]";
        if (Status added = AddContainerResources(containers[i], total, where); !added.ok()) {
          return added;
        }
      }
    }
  }
  json out = json::object();
  for (const auto& [name, quantity] : total) out[name] = quantity.ToString();
  return out;
}

int64_t TotalReplicas(const job::Job& job) {
  int64_t total = 0;
  for (const auto& [type, spec] : job.replica_specs) total += spec.replicas;
  return total;
}

// Gang scheduling's pod decorations: the scheduler (unless the template names one) and how the
// scheduler finds the pod's group.
void DecorateForGang(const job::Job& job, const std::string& replica_type,
                     const ObjectOptions& options, json& pod) {
  json& spec = pod["spec"];
  if (!spec.contains("schedulerName") || spec["schedulerName"] == "" ||
      spec["schedulerName"].is_null()) {
    spec["schedulerName"] = options.gang_scheduler;
  }
  json& metadata = pod["metadata"];
  if (IsVolcano(options)) {
    if (!metadata.contains("annotations")) metadata["annotations"] = json::object();
    metadata["annotations"][kVolcanoGroupAnnotation] = job.metadata.name;
    metadata["annotations"][kVolcanoTaskAnnotation] = job::LowerCase(replica_type);
  } else {
    if (!metadata.contains("labels")) metadata["labels"] = json::object();
    metadata["labels"][kSchedulerPluginsGroupLabel] = job.metadata.name;
  }
}

}  // namespace

Resource JobResource(const job::JobKind& kind) {
  const job::KindFacts& facts = kind.facts();
  return {facts.group, facts.version, facts.plural, facts.kind, true};
}

std::map<std::string, std::string> ReplicaLabels(const job::Job& job,
                                                 const std::string& replica_type, int index) {
  const std::string prefix = kLabelPrefix;
  return {{prefix + "operator-name", job.job_kind->facts().controller_name},
          {prefix + "job-name", JobNameLabel(job.metadata.name)},
          {prefix + "replica-type", job::LowerCase(replica_type)},
          {prefix + "replica-index", std::to_string(index)}};
}

StatusOr<json> BuildPod(const job::Job& job, const Owner& owner, const std::string& replica_type,
                        int index, const ObjectOptions& options) {
  StatusOr<const job::ReplicaSpec*> replica = FindReplica(job, replica_type, index);
  if (!replica.ok()) return replica.status();
  const job::ReplicaSpec& spec = **replica;
  const json pod_template = job::PodTemplateToJson(spec.template_spec);

  // Metadata: only the template's labels, annotations and finalizers carry over.
  json metadata = json::object();
  metadata["name"] = job::ReplicaName(job.metadata.name, replica_type, index);
  const json template_metadata = pod_template.value("metadata", json::object());
  json labels = template_metadata.value("labels", json::object());
  if (!labels.is_object()) labels = json::object();
  for (const auto& [key, value] : ReplicaLabels(job, replica_type, index)) labels[key] = value;
  if (IsMasterRole(job, replica_type, index))
    labels[std::string(kLabelPrefix) + "job-role"] = "master";
  metadata["labels"] = std::move(labels);
  for (const char* field : {"annotations", "finalizers"}) {
    if (template_metadata.contains(field)) metadata[field] = template_metadata[field];
  }
  SetOwnerReference(job, owner, metadata);

  json pod_spec = pod_template.value("spec", json::object());
  pod_spec["restartPolicy"] = PodRestartPolicy(spec.restart_policy);
  // Cohort's termination-message variable, COHORT_JOB_NAME and the job secret, then the kind's
  // environment (TF_CONFIG) go last into the first container of the kind's name; a kind whose
  // environment goes into every container (PyTorchJob) appends it to the others' too.
  const job::KindFacts& facts = job.job_kind->facts();
  std::vector<job::EnvVar> environment = job.job_kind->ReplicaEnvironment(
      job, replica_type, index, job::KubernetesEndpoints(job, options.cluster_domain));
  if (pod_spec.contains("containers") && pod_spec["containers"].is_array()) {
    bool main_found = false;
    for (json& container : pod_spec["containers"]) {
      if (!container.is_object()) continue;
      const bool is_main =
          !main_found && container.contains("name") && container["name"] == facts.container_name;
      if (!is_main && !facts.environment_in_every_container) continue;
      json& env = container["env"];
      if (!env.is_array()) env = json::array();
      if (is_main) {
        main_found = true;
        const json path = container.value("terminationMessagePath", json());
        env.push_back({{"name", cluster::kTerminationMessagePathVariable},
                       {"value", path.is_string() && !path.get<std::string>().empty()
                                     ? path.get<std::string>()
                                     : std::string(kDefaultTerminationMessagePath)}});
        // The job's name, for $(COHORT_JOB_NAME) in args (a directory of the job's own), as a
        // local replica has it (job/variable_references.h).
        env.push_back({{"name", job::kJobNameVariable}, {"value", job.metadata.name}});
      }
      if (!SetsVariable(env, job::kJobSecretVariable)) {
        env.push_back(
            {{"name", job::kJobSecretVariable},
             {"valueFrom",
              {{"secretKeyRef", {{"name", JobSecretName(job)}, {"key", kJobSecretKey}}}}}});
      }
      for (const job::EnvVar& variable : environment) {
        env.push_back({{"name", variable.name}, {"value", variable.value}});
      }
      if (is_main && !facts.environment_in_every_container) break;
    }
  }
  // The kind's init containers (PyTorchJob's init-pytorch) after the template's own.
  std::vector<json> init_containers = job.job_kind->InitContainers(job, replica_type, index);
  if (!init_containers.empty()) {
    json& list = pod_spec["initContainers"];
    if (!list.is_array()) list = json::array();
    for (json& container : init_containers) list.push_back(std::move(container));
  }

  json pod = {{"apiVersion", "v1"},
              {"kind", "Pod"},
              {"metadata", std::move(metadata)},
              {"spec", std::move(pod_spec)}};
  if (!options.gang_scheduler.empty()) DecorateForGang(job, replica_type, options, pod);
  return pod;
}

StatusOr<json> BuildService(const job::Job& job, const Owner& owner,
                            const std::string& replica_type, int index,
                            const ObjectOptions& options) {
  (void)options;  // services are the same with or without gang scheduling or a cluster domain
  StatusOr<const job::ReplicaSpec*> replica = FindReplica(job, replica_type, index);
  if (!replica.ok()) return replica.status();
  const job::Container* container = job.job_kind->MainContainer((*replica)->template_spec);
  if (container == nullptr) {
    return Status::InvalidArgument(job.metadata.name + " " + replica_type +
                                   ": no container named " + job.job_kind->facts().container_name +
                                   " to take ports from");
  }
  const std::map<std::string, std::string> labels = ReplicaLabels(job, replica_type, index);
  json metadata = {{"name", job::ReplicaName(job.metadata.name, replica_type, index)},
                   {"labels", labels}};
  SetOwnerReference(job, owner, metadata);
  json ports = json::array();
  for (const job::ContainerPort& port : container->ports) {
    json service_port = json::object();
    if (!port.name.empty()) service_port["name"] = port.name;
    service_port["port"] = port.container_port;
    ports.push_back(std::move(service_port));
  }
  json spec = {{"clusterIP", "None"}, {"selector", labels}, {"ports", std::move(ports)}};
  return json{{"apiVersion", "v1"},
              {"kind", "Service"},
              {"metadata", std::move(metadata)},
              {"spec", std::move(spec)}};
}

std::string JobSecretName(const job::Job& job) {
  const std::string kind = job.job_kind != nullptr ? job.job_kind->name() : job.kind;
  return job.metadata.name + "-" + job::LowerCase(kind) + "-secret";
}

StatusOr<json> BuildJobSecret(const job::Job& job, const Owner& owner, const std::string& secret) {
  if (job.job_kind == nullptr) {
    return Status::InvalidArgument("job " + job.metadata.name + " has no kind");
  }
  if (secret.empty()) {
    return Status::InvalidArgument("job " + job.metadata.name + ": the job secret is empty");
  }
  const std::string prefix = kLabelPrefix;
  json metadata = {{"name", JobSecretName(job)},
                   {"labels",
                    {{prefix + "operator-name", job.job_kind->facts().controller_name},
                     {prefix + "job-name", JobNameLabel(job.metadata.name)}}}};
  SetOwnerReference(job, owner, metadata);
  return json{
      {"apiVersion", "v1"}, {"kind", "Secret"},  {"metadata", std::move(metadata)},
      {"type", "Opaque"},   {"immutable", true}, {"data", {{kJobSecretKey, EncodeBase64(secret)}}}};
}

StatusOr<std::optional<json>> BuildPodGroup(const job::Job& job, const Owner& owner,
                                            const ObjectOptions& options) {
  if (options.gang_scheduler.empty()) return std::optional<json>();
  if (job.job_kind == nullptr) {
    return Status::InvalidArgument("job " + job.metadata.name + " has no kind");
  }
  const json policy = job.run_policy.scheduling_policy.is_object()
                          ? job.run_policy.scheduling_policy
                          : json::object();
  const std::string where = job.metadata.name + ": spec.runPolicy.schedulingPolicy.";

  int64_t min_member = TotalReplicas(job);
  if (policy.contains("minAvailable") && !policy["minAvailable"].is_null()) {
    if (!policy["minAvailable"].is_number_integer()) {
      return Status::InvalidArgument(where + "minAvailable must be an integer, got " +
                                     policy["minAvailable"].dump());
    }
    min_member = policy["minAvailable"].get<int64_t>();
  }
  json min_resources;
  if (policy.contains("minResources") && policy["minResources"].is_object()) {
    min_resources = policy["minResources"];
  } else {
    StatusOr<json> computed = MinResources(job, min_member);
    if (!computed.ok())
      return Status::InvalidArgument(where + "minResources: " + computed.status().message());
    min_resources = std::move(*computed);
  }
  auto string_field = [&](const char* name) -> std::string {
    return policy.contains(name) && policy[name].is_string() ? policy[name].get<std::string>() : "";
  };

  json spec = json::object();
  spec["minMember"] = min_member;
  std::string api_version;
  if (IsVolcano(options)) {
    api_version = "scheduling.volcano.sh/v1beta1";
    const std::string queue = string_field("queue");
    spec["queue"] = queue.empty() ? "default" : queue;
    const std::string priority_class = string_field("priorityClass");
    if (!priority_class.empty()) spec["priorityClassName"] = priority_class;
  } else {
    api_version = "scheduling.x-k8s.io/v1alpha1";
    if (policy.contains("scheduleTimeoutSeconds") && !policy["scheduleTimeoutSeconds"].is_null()) {
      if (!policy["scheduleTimeoutSeconds"].is_number_integer()) {
        return Status::InvalidArgument(where + "scheduleTimeoutSeconds must be an integer, got " +
                                       policy["scheduleTimeoutSeconds"].dump());
      }
      spec["scheduleTimeoutSeconds"] = policy["scheduleTimeoutSeconds"];
    }
  }
  if (!min_resources.empty()) spec["minResources"] = std::move(min_resources);

  json metadata = {{"name", job.metadata.name}, {"namespace", job.metadata.namespace_name}};
  if (!job.metadata.annotations.empty()) metadata["annotations"] = job.metadata.annotations;
  SetOwnerReference(job, owner, metadata);
  return std::optional<json>(json{{"apiVersion", api_version},
                                  {"kind", "PodGroup"},
                                  {"metadata", std::move(metadata)},
                                  {"spec", std::move(spec)}});
}

StatusOr<std::vector<json>> BuildJobObjects(const job::Job& job, const Owner& owner,
                                            const ObjectOptions& options,
                                            const std::string& job_secret) {
  StatusOr<json> secret = BuildJobSecret(job, owner, job_secret);
  if (!secret.ok()) return secret.status();
  std::vector<json> pods, services;
  for (const auto& [type, spec] : job.replica_specs) {
    for (int index = 0; index < spec.replicas; ++index) {
      StatusOr<json> pod = BuildPod(job, owner, type, index, options);
      if (!pod.ok()) return pod.status();
      pods.push_back(std::move(*pod));
      StatusOr<json> service = BuildService(job, owner, type, index, options);
      if (!service.ok()) return service.status();
      services.push_back(std::move(*service));
    }
  }
  StatusOr<std::optional<json>> pod_group = BuildPodGroup(job, owner, options);
  if (!pod_group.ok()) return pod_group.status();
  std::vector<json> objects = {std::move(*secret)};
  for (json& pod : pods) objects.push_back(std::move(pod));
  for (json& service : services) objects.push_back(std::move(service));
  if (*pod_group) objects.push_back(std::move(**pod_group));
  return objects;
}

}  // namespace cohort::kube
