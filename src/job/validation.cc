#include "job/validation.h"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>

#include "job/job_kind.h"
#include "job/log_policy.h"
#include "job/replica_endpoints.h"
#include "job/spec_parser.h"
#include "job/yaml_document.h"

namespace cohort::job {
namespace {

using nlohmann::json;

constexpr size_t kMaxLabelLength = 63;

// Text in double quotes, escaped as JSON would, for messages.
std::string Quote(const std::string& text) {
  return json(text).dump(-1, ' ', false, json::error_handler_t::replace);
}

bool IsLowerAlphanumeric(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); }

bool IsLabelText(const std::string& text) {
  for (char c : text) {
    if (!IsLowerAlphanumeric(c) && c != '-') return false;
  }
  return true;
}

// What is wrong with `name` as a Kubernetes DNS-1035 label (the rule for a job's name, since
// it becomes part of service names), in Kubernetes' own words; nullopt when nothing is.
std::optional<std::string> Dns1035LabelProblem(const std::string& name) {
  if (name.size() > kMaxLabelLength) return "must be no more than 63 characters";
  if (name.empty() || !IsLabelText(name) || !(name.front() >= 'a' && name.front() <= 'z') ||
      !IsLowerAlphanumeric(name.back())) {
    return "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start "
           "with an alphabetic character, and end with an alphanumeric character (e.g. "
           "'my-name', or 'abc-123')";
  }
  return std::nullopt;
}

// The same for a DNS-1123 label, the rule for a namespace.
std::optional<std::string> Dns1123LabelProblem(const std::string& name) {
  if (name.size() > kMaxLabelLength) return "must be no more than 63 characters";
  if (name.empty() || !IsLabelText(name) || !IsLowerAlphanumeric(name.front()) ||
      !IsLowerAlphanumeric(name.back())) {
    return "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or "
           "'-', and must start and end with an alphanumeric character (e.g. 'my-name', or "
           "'123-abc')";
  }
  return std::nullopt;
}

// The longest environment string ("NAME=value" and its NUL) that the kind gives any replica of a
// job, and whose it is.
struct LongestEnvironment {
  size_t bytes = 0;
  std::string replica_type;
  int index = 0;
  std::string variable;
  std::string endpoints;  // which endpoints gave it: "local ports" or "Kubernetes service names"
};

// The endpoint forms a replica may be given, each at its longest: a local run's "localhost:<port>"
// with a five-digit port, and the Kubernetes service names of the operator (replica_endpoints.h).
std::vector<std::pair<std::string, EndpointFunction>> WorstCaseEndpoints(const Job& job) {
  EndpointFunction local = [](const std::string&, int) { return std::string("localhost:65535"); };
  return {{"local ports", local}, {"Kubernetes service names", KubernetesEndpoints(job)}};
}

// The environment values grow with the replica count and with the index digits, so the last
// replica of each type has the longest one of its type.
LongestEnvironment FindLongestEnvironment(const Job& job) {
  LongestEnvironment longest;
  for (const auto& [endpoints, endpoint] : WorstCaseEndpoints(job)) {
    for (const auto& [type, spec] : job.replica_specs) {
      if (spec.replicas <= 0) continue;
      const int index = spec.replicas - 1;
      for (const EnvVar& variable : job.job_kind->ReplicaEnvironment(job, type, index, endpoint)) {
        const size_t bytes = variable.name.size() + 1 + variable.value.size() + 1;
        if (bytes > longest.bytes) {
          longest = LongestEnvironment{bytes, type, index, variable.name, endpoints};
        }
      }
    }
  }
  return longest;
}

class Validator {
 public:
  explicit Validator(const Job& job)
      : job_(job),
        kind_(*job.job_kind),
        replica_specs_path_(ChildPath("spec", kind_.facts().replica_specs_field)) {}

  std::vector<std::string> Run() {
    CheckTypeMeta();
    CheckMetadata();
    CheckRunPolicy();
    CheckKindSpecFields();
    CheckReplicaSpecs();
    CheckKindReplicaRules();
    // The kind's environment hook expects a job that is valid otherwise.
    if (errors_.empty()) CheckEnvironmentSize();
    return InDocumentOrder(std::move(errors_));
  }

 private:
  void Error(const std::string& path, const std::string& message) {
    errors_.push_back(Diagnostic{FindPosition(job_, path), FieldMessage(job_, path, message)});
  }

  void CheckTypeMeta() {
    if (job_.api_version != kind_.api_version()) {
      Error("apiVersion",
            Quote(job_.api_version) + " is not supported: must be " + kind_.api_version());
    }
    if (job_.kind != kind_.name()) {
      Error("kind", Quote(job_.kind) + " is not supported: must be " + kind_.name());
    }
  }

  void CheckMetadata() {
    const ObjectMeta& metadata = job_.metadata;
    if (metadata.name.empty()) {
      Error("metadata.name", "is required");
    } else if (std::optional<std::string> problem = Dns1035LabelProblem(metadata.name)) {
      Error("metadata.name", Quote(metadata.name) + " is not valid: " + *problem);
    }
    if (std::optional<std::string> problem = Dns1123LabelProblem(metadata.namespace_name)) {
      Error("metadata.namespace", Quote(metadata.namespace_name) + " is not valid: " + *problem);
    }
    // Cohort's own annotation: log policies (log_policy.h) that do not parse would be found only
    // when a replica fails.
    if (StatusOr<std::vector<LogPolicy>> policies = JobLogPolicies(job_); !policies.ok()) {
      const std::string path = ChildPath("metadata.annotations", kLogPoliciesAnnotation);
      std::string message = policies.status().message();
      // The message names the annotation itself; Error names it once, with its position.
      if (message.rfind(path, 0) == 0) message.erase(0, path.size());
      if (message.rfind(": ", 0) == 0) message.erase(0, 2);
      Error(path, message);
    }
  }

  void CheckRunPolicy() {
    const RunPolicy& policy = job_.run_policy;
    const std::string path = "spec.runPolicy";
    if (policy.active_deadline_seconds && *policy.active_deadline_seconds <= 0) {
      Error(path + ".activeDeadlineSeconds",
            "must be greater than 0, got " + std::to_string(*policy.active_deadline_seconds));
    }
    if (policy.backoff_limit && *policy.backoff_limit < 0) {
      Error(path + ".backoffLimit",
            "must be greater than or equal to 0, got " + std::to_string(*policy.backoff_limit));
    }
    if (policy.ttl_seconds_after_finished && *policy.ttl_seconds_after_finished < 0) {
      Error(path + ".ttlSecondsAfterFinished",
            "must be greater than or equal to 0, got " +
                std::to_string(*policy.ttl_seconds_after_finished));
    }
    if (policy.managed_by && *policy.managed_by != kManagedByTrainingOperator &&
        *policy.managed_by != kManagedByMultiKueue) {
      Error(path + ".managedBy", Quote(*policy.managed_by) + " is not supported: must be " +
                                     kManagedByTrainingOperator + " or " + kManagedByMultiKueue);
    }
  }

  void CheckKindSpecFields() {
    for (const FieldProblem& problem : kind_.ValidateSpecFields(job_)) {
      Error(problem.path, problem.message);
    }
  }

  // The rules only the kind's own webhook has (PyTorchJob: Master and Worker only, one Master).
  void CheckKindReplicaRules() {
    for (const FieldProblem& problem : kind_.ValidateReplicaSpecs(job_)) {
      Error(problem.path, problem.message);
    }
  }

  void CheckReplicaSpecs() {
    const KindFacts& facts = kind_.facts();
    if (job_.replica_specs.empty()) {
      Error(replica_specs_path_, "is required: a " + kind_.name() +
                                     " needs at least one replica type, e.g. " + facts.worker_type);
      return;
    }
    int chiefs = 0;
    for (const auto& [type, replica] : job_.replica_specs) {
      std::string path = ChildPath(replica_specs_path_, type);
      std::string canonical = kind_.CanonicalReplicaType(type);
      if (canonical != type && job_.replica_specs.count(canonical)) {
        Error(path, "names the same replica type as " + ChildPath(replica_specs_path_, canonical) +
                        " (replica types are case-insensitive)");
      }
      if (kind_.IsChiefType(type)) ++chiefs;
      CheckReplica(replica, path);
    }
    if (chiefs > 1) {
      std::string roles;
      for (size_t i = 0; i < facts.chief_types.size(); ++i) {
        roles += (i == 0 ? "" : " or ") + facts.chief_types[i];
      }
      Error(replica_specs_path_, "must not have more than 1 " + roles + " role");
    }
  }

  void CheckReplica(const ReplicaSpec& replica, const std::string& path) {
    if (replica.replicas < 0) {
      Error(path + ".replicas",
            "must be greater than or equal to 0, got " + std::to_string(replica.replicas));
    }
    const std::string containers_path = path + ".template.spec.containers";
    const std::vector<Container>& containers = replica.template_spec.containers;
    const std::string& main_name = kind_.facts().container_name;
    if (containers.empty()) {
      Error(containers_path, "must be specified: a replica needs a container named " + main_name);
      return;
    }
    bool has_main = false;
    std::map<std::string, size_t> index_of_name;
    for (size_t i = 0; i < containers.size(); ++i) {
      const Container& container = containers[i];
      std::string container_path = IndexPath(containers_path, i);
      if (container.name.empty()) {
        Error(container_path + ".name", "is required");
      } else if (auto [it, inserted] = index_of_name.emplace(container.name, i); !inserted) {
        Error(container_path + ".name", Quote(container.name) + " is also the name of " +
                                            IndexPath("containers", it->second));
      }
      if (container.name == main_name) has_main = true;
      if (container.image.empty()) Error(container_path + ".image", "is required");
      CheckEnvironment(container, container_path);
      CheckPorts(container, container_path);
    }
    if (!has_main) {
      Error(containers_path, "must have at least one container with name " + main_name);
    }
  }

  void CheckEnvironment(const Container& container, const std::string& container_path) {
    for (size_t k = 0; k < container.env.size(); ++k) {
      const EnvVar& variable = container.env[k];
      std::string path = IndexPath(container_path + ".env", k);
      if (variable.name.empty()) Error(path + ".name", "is required");
      if (!variable.value.empty() && !variable.value_from.is_null()) {
        Error(path + ".valueFrom", "may not be specified when value is not empty");
      }
    }
  }

  void CheckPorts(const Container& container, const std::string& container_path) {
    for (size_t k = 0; k < container.ports.size(); ++k) {
      int port = container.ports[k].container_port;
      if (port < 1 || port > 65535) {
        Error(IndexPath(container_path + ".ports", k) + ".containerPort",
              "must be between 1 and 65535, inclusive, got " + std::to_string(port));
      }
    }
  }

  // Whether every replica's environment fits in what Linux lets one process start with. A
  // replica count above kReplicaCap makes any environment that lists every replica too long
  // (each endpoint costs at least three bytes: two quotes and a comma), so counts are capped
  // there first: a sparse environment (one that does not list every replica) is measured
  // without building a huge one.
  void CheckEnvironmentSize() {
    constexpr int32_t kReplicaCap = static_cast<int32_t>(kMaxEnvironmentStringBytes / 3) + 1;
    Job capped = job_;
    bool any_capped = false;
    for (auto& [type, spec] : capped.replica_specs) {
      if (spec.replicas > kReplicaCap) {
        spec.replicas = kReplicaCap;
        any_capped = true;
      }
    }
    const LongestEnvironment longest = FindLongestEnvironment(capped);
    if (longest.bytes <= kMaxEnvironmentStringBytes) return;

    // The type with the most replicas, and how many of it fit with the others as they are.
    std::string largest_type;
    int32_t largest_count = -1;
    for (const auto& [type, spec] : capped.replica_specs) {
      if (spec.replicas > largest_count) largest_type = type, largest_count = spec.replicas;
    }
    int32_t fitting = -1;  // none fits
    for (int32_t low = 0, high = largest_count - 1; low <= high;) {
      const int32_t middle = low + (high - low) / 2;
      capped.replica_specs[largest_type].replicas = middle;
      if (FindLongestEnvironment(capped).bytes <= kMaxEnvironmentStringBytes) {
        fitting = middle;
        low = middle + 1;
      } else {
        high = middle - 1;
      }
    }
    const ReplicaSpec& original = job_.replica_specs.at(largest_type);
    std::string message = std::to_string(original.replicas) + " replicas make " + longest.variable +
                          " too long to start a process: " + longest.replica_type + " " +
                          std::to_string(longest.index) + " would get " +
                          (any_capped ? "more than " : "") + std::to_string(longest.bytes) +
                          " bytes with " + longest.endpoints + ", over the " +
                          std::to_string(kMaxEnvironmentStringBytes) +
                          " bytes Linux allows one environment string (MAX_ARG_STRLEN)";
    if (fitting >= 0) {
      message += "; at most " + std::to_string(fitting) + " " + largest_type +
                 " replicas fit with the others as they are";
    }
    Error(ChildPath(ChildPath(replica_specs_path_, largest_type), "replicas"), message);
  }

  const Job& job_;
  const JobKind& kind_;
  const std::string replica_specs_path_;
  std::vector<Diagnostic> errors_;
};

// ---- Local run warnings ----

struct IgnoredField {
  const char* name;
  const char* message;
};

// Pod spec fields that only mean something to a Kubernetes node or scheduler.
constexpr IgnoredField kIgnoredPodFields[] = {
    {"volumes", "ignored by a local run: volumes are not created"},
    {"nodeSelector", "ignored by a local run: every replica runs on this machine"},
    {"tolerations", "ignored by a local run: every replica runs on this machine"},
    {"affinity", "ignored by a local run: every replica runs on this machine"},
    {"imagePullSecrets", "ignored by a local run: no image is pulled"},
    {"serviceAccountName", "ignored by a local run: replicas get no Kubernetes service account"},
    {"serviceAccount", "ignored by a local run: replicas get no Kubernetes service account"},
    {"initContainers", "ignored by a local run: init containers are not run"},
    {"securityContext",
     "ignored by a local run: replicas run as the user who runs cohort, with no other user, group "
     "or privileges"},
    {"hostNetwork", "ignored by a local run: replicas always use this machine's network"},
    {"schedulerName", "ignored by a local run: no scheduler places replicas"},
    {"priorityClassName", "ignored by a local run: replicas are neither scheduled nor preempted"},
    {"dnsPolicy", "ignored by a local run: replicas use this machine's DNS resolver"},
    {"dnsConfig", "ignored by a local run: replicas use this machine's DNS resolver"},
    {"hostAliases",
     "ignored by a local run: /etc/hosts is not changed (replicas reach each other as localhost)"},
    {"runtimeClassName", "ignored by a local run: replicas are processes, not containers"},
    {"topologySpreadConstraints", "ignored by a local run: every replica runs on this machine"},
};

// Container fields the same, for the kind's container (the only one a local run starts).
constexpr IgnoredField kIgnoredContainerFields[] = {
    {"resources", "ignored by a local run: requests and limits are not enforced"},
    {"envFrom",
     "ignored by a local run: variables from ConfigMaps and Secrets need the Kubernetes API"},
    {"volumeMounts",
     "ignored by a local run: nothing is mounted, so these paths must exist on this machine"},
    {"livenessProbe",
     "ignored by a local run: nothing probes the replica, so it is not restarted when unhealthy"},
    {"readinessProbe", "ignored by a local run: nothing probes the replica"},
    {"startupProbe", "ignored by a local run: nothing probes the replica"},
    {"lifecycle", "ignored by a local run: postStart and preStop hooks are not run"},
    {"securityContext",
     "ignored by a local run: replicas run as the user who runs cohort, with no other user, group "
     "or privileges"},
};

// The scheme of a URL in a command-line argument, "gs" for "gs://bucket/x" or
// "--saved_model_path=gs://bucket/x"; nullopt when there is none. A scheme is a letter followed
// by letters, digits, '+', '-' or '.' (RFC 3986), and here must be followed by "://". Network
// addresses are left alone: web addresses (http, https), which a program fetches rather than
// writes, and TensorFlow's server targets (grpc, "--master=grpc://host:2222").
std::optional<std::string> UrlScheme(const std::string& argument) {
  const size_t separator = argument.find("://");
  if (separator == std::string::npos) return std::nullopt;
  size_t begin = argument.rfind('=', separator);
  begin = begin == std::string::npos ? 0 : begin + 1;
  const std::string scheme = argument.substr(begin, separator - begin);
  if (scheme.empty() || !std::isalpha(static_cast<unsigned char>(scheme[0]))) return std::nullopt;
  for (char c : scheme) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '+' && c != '-' && c != '.') {
      return std::nullopt;
    }
  }
  const std::string lower = LowerCase(scheme);
  if (lower == "http" || lower == "https" || lower == "grpc") return std::nullopt;
  return lower;
}

// Collects warnings, one per kind of field: the first place it is written gets the message and
// the count of the other places.
class LocalRunReport {
 public:
  void Add(const std::string& kind, const std::string& path, const std::string& message) {
    auto [it, inserted] = group_of_kind_.emplace(kind, groups_.size());
    if (inserted) {
      groups_.push_back(Group{path, message, 0});
    } else {
      ++groups_[it->second].other_places;
    }
  }

  std::vector<std::string> Messages(const Job& job) const {
    std::vector<std::string> messages;
    for (const Group& group : groups_) {
      std::string message = group.message;
      if (group.other_places > 0) {
        message += " (also in " + std::to_string(group.other_places) +
                   (group.other_places == 1 ? " other place)" : " other places)");
      }
      messages.push_back(FieldMessage(job, group.path, message));
    }
    return messages;
  }

 private:
  struct Group {
    std::string path;
    std::string message;
    size_t other_places = 0;
  };
  std::vector<Group> groups_;
  std::map<std::string, size_t> group_of_kind_;
};

void ReportRunPolicy(const RunPolicy& policy, LocalRunReport& report) {
  if (!policy.scheduling_policy.is_null()) {
    report.Add("schedulingPolicy", "spec.runPolicy.schedulingPolicy",
               "ignored by a local run: gang scheduling needs a Kubernetes batch scheduler");
  }
  if (policy.managed_by && *policy.managed_by != kManagedByTrainingOperator) {
    report.Add("managedBy", "spec.runPolicy.managedBy",
               "the Kubeflow operator would leave this job to " + Quote(*policy.managed_by) +
                   "; a local run runs it itself");
  }
}

void ReportContainer(const KindFacts& facts, const Container& container, const json& raw_container,
                     const std::string& path, LocalRunReport& report) {
  if (container.name != facts.container_name) {
    report.Add("container:" + container.name, path,
               "container " + Quote(container.name) + " is not run locally: a local run starts " +
                   "only the " + facts.container_name + " container");
    return;
  }
  if (raw_container.is_object()) {
    for (const IgnoredField& field : kIgnoredContainerFields) {
      auto value = raw_container.find(field.name);
      if (value != raw_container.end() && !value->is_null()) {
        // Kinds are per level: a pod's securityContext and a container's are separate warnings.
        report.Add(std::string("container.") + field.name, ChildPath(path, field.name),
                   field.message);
      }
    }
    auto ports = raw_container.find("ports");
    if (ports != raw_container.end() && ports->is_array()) {
      for (size_t k = 0; k < ports->size(); ++k) {
        const json& port = (*ports)[k];
        if (port.is_object() && port.contains("hostPort") && !port["hostPort"].is_null()) {
          report.Add("container.ports.hostPort", IndexPath(path + ".ports", k) + ".hostPort",
                     "ignored by a local run: no host port is mapped; the replica listens on the "
                     "local port in its " +
                         facts.cluster_variable);
        }
      }
    }
  }
  for (const auto& [field, arguments] :
       {std::pair{"command", &container.command}, std::pair{"args", &container.args}}) {
    for (size_t k = 0; k < arguments->size(); ++k) {
      const std::optional<std::string> scheme = UrlScheme((*arguments)[k]);
      if (!scheme) continue;
      report.Add("url:" + *scheme, IndexPath(ChildPath(path, field), k),
                 "a URL: a local run has no " + *scheme + ":// storage; the program gets the " +
                     "text as it is, and one that takes it for a file name writes under ./" +
                     *scheme + ":/ in its working directory; use a path mounted on this " +
                     "machine instead");
    }
  }
  for (size_t k = 0; k < container.env.size(); ++k) {
    const EnvVar& variable = container.env[k];
    if (variable.value_from.is_null()) continue;
    report.Add("env:" + variable.name, IndexPath(path + ".env", k) + ".valueFrom",
               "ignored by a local run: " + variable.name +
                   " is left unset (valueFrom needs the Kubernetes API)");
  }
}

void ReportReplica(const JobKind& kind, const std::string& type, const ReplicaSpec& replica,
                   LocalRunReport& report) {
  const KindFacts& facts = kind.facts();
  std::string path = ChildPath(ChildPath("spec", facts.replica_specs_field), type);
  if (!kind.IsReplicaType(type)) {
    std::string known;
    for (const std::string& known_type : facts.replica_types) {
      known += (known.empty() ? "" : ", ") + known_type;
    }
    report.Add("type:" + type, path,
               Quote(type) + " is not a " + kind.name() + " replica type (" + known +
                   "): it is still run and listed in " + facts.cluster_variable +
                   ", but the job's status ignores it");
  }
  const PodTemplate& pod_template = replica.template_spec;
  std::string spec_path = path + ".template.spec";
  if (!pod_template.restart_policy.empty()) {
    report.Add("template restartPolicy", spec_path + ".restartPolicy",
               "overwritten by the replica's restartPolicy (" + ToString(replica.restart_policy) +
                   "), as the Kubeflow operator does");
  }
  const json* raw_spec = nullptr;
  if (pod_template.raw.is_object()) {
    auto spec = pod_template.raw.find("spec");
    if (spec != pod_template.raw.end() && spec->is_object()) raw_spec = &*spec;
  }
  if (raw_spec != nullptr) {
    for (const IgnoredField& field : kIgnoredPodFields) {
      auto value = raw_spec->find(field.name);
      if (value != raw_spec->end() && !value->is_null()) {
        report.Add(std::string("pod.") + field.name, ChildPath(spec_path, field.name),
                   field.message);
      }
    }
  }
  const json* raw_containers = nullptr;
  if (raw_spec != nullptr) {
    auto containers = raw_spec->find("containers");
    if (containers != raw_spec->end() && containers->is_array()) raw_containers = &*containers;
  }
  for (size_t i = 0; i < pod_template.containers.size(); ++i) {
    json none;
    const json& raw_container =
        raw_containers != nullptr && i < raw_containers->size() ? (*raw_containers)[i] : none;
    ReportContainer(facts, pod_template.containers[i], raw_container,
                    IndexPath(spec_path + ".containers", i), report);
  }
}

}  // namespace

std::vector<std::string> ValidationErrors(const Job& job) { return Validator(job).Run(); }

Status ValidateJob(const Job& job) {
  std::vector<std::string> errors = ValidationErrors(job);
  if (errors.empty()) return Status::OK();
  return Status::InvalidArgument(JoinMessages(errors));
}

std::vector<std::string> LocalRunWarnings(const Job& job) {
  LocalRunReport report;
  ReportRunPolicy(job.run_policy, report);
  for (const auto& [type, replica] : job.replica_specs) {
    ReportReplica(*job.job_kind, type, replica, report);
  }
  return report.Messages(job);
}

namespace {

// Whether `arguments` pass --checkpoint_path, as "--checkpoint_path=DIR" or "--checkpoint_path
// DIR".
bool PassesCheckpointPath(const std::vector<std::string>& arguments) {
  for (const std::string& argument : arguments) {
    if (argument == "--checkpoint_path" || argument.rfind("--checkpoint_path=", 0) == 0) {
      return true;
    }
  }
  return false;
}

}  // namespace

std::vector<std::string> UnrestoredBackupWarnings(const Job& job) {
  const JobKind& kind = *job.job_kind;
  std::vector<std::string> types;
  std::string first_path;
  for (const auto& [type, replica] : job.replica_specs) {
    if (replica.restart_policy != RestartPolicy::kNever) continue;
    const Container* container = kind.MainContainer(replica.template_spec);
    if (container == nullptr ||
        !(PassesCheckpointPath(container->command) || PassesCheckpointPath(container->args))) {
      continue;
    }
    if (types.empty()) {
      first_path = ChildPath(ChildPath(ChildPath("spec", kind.facts().replica_specs_field), type),
                             "restartPolicy");
    }
    types.push_back(type);
  }
  if (types.empty()) return {};
  std::string named;
  for (size_t i = 0; i < types.size(); ++i) {
    named += (i == 0 ? "" : i + 1 == types.size() ? " and " : ", ") + types[i];
  }
  return {FieldMessage(job, first_path,
                       "Never: a failed " + named +
                           " replica is not restarted, so the backups its program writes "
                           "(--checkpoint_path) are never restored and the job fails instead; "
                           "restartPolicy OnFailure or ExitCode would resume from them")};
}

}  // namespace cohort::job
