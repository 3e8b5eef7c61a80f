#include "job/spec_parser.h"

#include <cstdint>
#include <limits>
#include <optional>
#include <set>
#include <utility>

#include "job/defaults.h"
#include "job/validation.h"
#include "job/yaml_document.h"

namespace cohort::job {
namespace {

using nlohmann::json;

constexpr int64_t kInt32Min = std::numeric_limits<int32_t>::min();
constexpr int64_t kInt32Max = std::numeric_limits<int32_t>::max();
constexpr int64_t kInt64Min = std::numeric_limits<int64_t>::min();
constexpr int64_t kInt64Max = std::numeric_limits<int64_t>::max();

// The run-policy fields that kubeflow.org/v1 manifests once wrote directly under spec.
const std::vector<std::string>& LegacyRunPolicyFields() {
  static const std::vector<std::string> fields = {"cleanPodPolicy", "ttlSecondsAfterFinished",
                                                  "activeDeadlineSeconds", "backoffLimit"};
  return fields;
}

// Metadata the API server sets; present in `get -o yaml` output and in saved specs, and
// meaningless to a new job, so it is ignored without a warning.
const std::set<std::string>& ServerSetMetadataFields() {
  static const std::set<std::string> fields = {
      "uid",        "resourceVersion", "generation",        "creationTimestamp",
      "selfLink",   "managedFields",   "deletionTimestamp", "deletionGracePeriodSeconds",
      "finalizers", "ownerReferences"};
  return fields;
}

// The fields of a Kubernetes core/v1 Container. A container keeps its Kubernetes fields in
// PodTemplate::raw, so these are not errors; anything else is most likely a typo ("comand") that
// would otherwise be dropped without a word.
const std::set<std::string>& ContainerFields() {
  static const std::set<std::string> fields = {"name",
                                               "image",
                                               "command",
                                               "args",
                                               "workingDir",
                                               "ports",
                                               "envFrom",
                                               "env",
                                               "resources",
                                               "resizePolicy",
                                               "restartPolicy",
                                               "volumeMounts",
                                               "volumeDevices",
                                               "livenessProbe",
                                               "readinessProbe",
                                               "startupProbe",
                                               "lifecycle",
                                               "terminationMessagePath",
                                               "terminationMessagePolicy",
                                               "imagePullPolicy",
                                               "securityContext",
                                               "stdin",
                                               "stdinOnce",
                                               "tty"};
  return fields;
}

// The value of `key`, or nullptr when it is absent or null: Kubernetes reads an explicit null
// as "not set".
const json* Field(const json& object, const std::string& key) {
  auto found = object.find(key);
  if (found == object.end() || found->is_null()) return nullptr;
  return &*found;
}

std::string JoinWithCommas(const std::vector<std::string>& items) {
  std::string text;
  for (const std::string& item : items) text += (text.empty() ? "" : ", ") + item;
  return text;
}

// Reads one job object of a kind in `kinds`. Problems are collected rather than returned at the
// first, so that a user fixes a manifest in one round.
class SpecDecoder {
 public:
  SpecDecoder(PositionMap positions, std::string file_name, const KindRegistry& kinds)
      : positions_(std::move(positions)), file_name_(std::move(file_name)), kinds_(kinds) {}

  void Decode(const json& document, Job& job) {
    job.source_file = file_name_;
    if (!document.is_object()) {
      TypeError("", "a mapping (a " + kinds_.Names(" or ") + " manifest)", document);
      return;
    }
    if (!DecodeTypeMeta(document, job)) return;
    WarnUnknownFields(document, "", {"apiVersion", "kind", "metadata", "spec", "status"});
    if (const json* metadata = Field(document, "metadata")) DecodeMetadata(*metadata, job.metadata);
    if (const json* spec = Field(document, "spec")) DecodeSpec(*spec, job);
  }

  // In document order: the decoder walks mappings in key order, not in the order written.
  std::vector<std::string> errors() const { return InDocumentOrder(errors_); }
  std::vector<std::string> warnings() const { return InDocumentOrder(warnings_); }
  PositionMap TakePositions() { return std::move(positions_); }

 private:
  // ---- Messages ----

  void Error(const std::string& path, const std::string& message) {
    SourcePosition position = NearestPosition(positions_, path);
    errors_.push_back(Diagnostic{position, LocatedMessage(file_name_, position, path, message)});
  }

  void Warning(const std::string& path, const std::string& message) {
    SourcePosition position = NearestPosition(positions_, path);
    warnings_.push_back(Diagnostic{position, LocatedMessage(file_name_, position, path, message)});
  }

  void TypeError(const std::string& path, const std::string& expected, const json& value) {
    Error(path, "expected " + expected + ", got " + DescribeValue(value));
  }

  // An unknown key that misspells a field the object lacks ("replica" for "replicas") is an error
  // with a "did you mean", as the job would silently run without the field; any other is warned
  // about and dropped, as an API server without strict validation drops it.
  // `what` names the API the fields belong to, e.g. "a Kubernetes container"; empty means the
  // job's kind, e.g. "the kubeflow.org/v1 TFJob API".
  void WarnUnknownFields(const json& object, const std::string& path,
                         const std::set<std::string>& known, const std::string& what = "") {
    const std::string api =
        what.empty() ? "the " + kind_->api_version() + " " + kind_->name() + " API" : what;
    for (const auto& [key, value] : object.items()) {
      if (known.count(key)) continue;
      if (std::string meant = MisspeltField(key, object, known); !meant.empty()) {
        Error(ChildPath(path, key), "not a field of " + api + "; did you mean \"" + meant +
                                        "\"? (as written, the job would run without it)");
        continue;
      }
      Warning(ChildPath(path, key),
              "not a field of " + api + "; ignored (a Kubernetes API server would drop it too)");
    }
  }

  // ---- Typed reads: each records an error and returns nothing when the type is wrong ----

  bool ExpectObject(const json& value, const std::string& path) {
    if (value.is_object()) return true;
    TypeError(path, "a mapping", value);
    return false;
  }

  std::optional<std::string> ReadString(const json& value, const std::string& path) {
    if (value.is_string()) return value.get<std::string>();
    std::string hint;
    if (value.is_number() || value.is_boolean()) {
      hint = " (quote it to mean text: \"" + value.dump() + "\")";
    }
    Error(path, "expected a string, got " + DescribeValue(value) + hint);
    return std::nullopt;
  }

  std::optional<int64_t> ReadInteger(const json& value, const std::string& path, int64_t minimum,
                                     int64_t maximum) {
    if (!value.is_number_integer()) {
      TypeError(path, "an integer", value);
      return std::nullopt;
    }
    bool in_range = value.is_number_unsigned()
                        ? value.get<uint64_t>() <= static_cast<uint64_t>(maximum)
                        : value.get<int64_t>() >= minimum && value.get<int64_t>() <= maximum;
    if (!in_range) {
      Error(path, "expected an integer from " + std::to_string(minimum) + " to " +
                      std::to_string(maximum) + ", got " + value.dump());
      return std::nullopt;
    }
    return value.get<int64_t>();
  }

  std::optional<int32_t> ReadInt32(const json& value, const std::string& path) {
    std::optional<int64_t> number = ReadInteger(value, path, kInt32Min, kInt32Max);
    if (!number) return std::nullopt;
    return static_cast<int32_t>(*number);
  }

  std::optional<bool> ReadBool(const json& value, const std::string& path) {
    if (value.is_boolean()) return value.get<bool>();
    TypeError(path, "true or false", value);
    return std::nullopt;
  }

  std::vector<std::string> ReadStringList(const json& value, const std::string& path) {
    std::vector<std::string> items;
    if (!value.is_array()) {
      TypeError(path, "a list of strings", value);
      return items;
    }
    for (size_t i = 0; i < value.size(); ++i) {
      if (std::optional<std::string> item = ReadString(value[i], IndexPath(path, i))) {
        items.push_back(std::move(*item));
      }
    }
    return items;
  }

  std::map<std::string, std::string> ReadStringMap(const json& value, const std::string& path) {
    std::map<std::string, std::string> entries;
    if (!ExpectObject(value, path)) return entries;
    for (const auto& [key, item] : value.items()) {
      if (item.is_null()) continue;
      if (std::optional<std::string> text = ReadString(item, ChildPath(path, key))) {
        entries[key] = std::move(*text);
      }
    }
    return entries;
  }

  // ---- The job ----

  // Finds the kind by kind and apiVersion. The apiVersion is checked against the kind named
  // (the first kind when none is), so that each is reported where it was written.
  bool DecodeTypeMeta(const json& document, Job& job) {
    bool supported = true;
    const JobKind* named = nullptr;
    const std::string kind_names = kinds_.Names(" or ");
    const json* kind = Field(document, "kind");
    if (kind == nullptr) {
      Error("kind",
            "is required: this must be a " + kind_names + " manifest (kind: " + kind_names + ")");
      supported = false;
    } else if (std::optional<std::string> text = ReadString(*kind, "kind")) {
      named = kinds_.FindByName(*text);
      if (named == nullptr) {
        Error("kind",
              DescribeValue(*kind) + " is not supported: Cohort runs kind " + kind_names + " only");
        supported = false;
      }
    } else {
      supported = false;
    }
    const JobKind& expected = named != nullptr ? *named : *kinds_.kinds().front();
    const json* api_version = Field(document, "apiVersion");
    if (api_version == nullptr) {
      Error("apiVersion", "is required: apiVersion: " + expected.api_version());
      supported = false;
    } else if (std::optional<std::string> text = ReadString(*api_version, "apiVersion")) {
      if (*text != expected.api_version()) {
        const KindFacts& facts = expected.facts();
        std::string advice = !facts.older_versions.empty() && text->rfind(facts.group + "/", 0) == 0
                                 ? "; a " + facts.older_versions + " " + expected.name() +
                                       " usually needs only its apiVersion changed"
                                 : "";
        Error("apiVersion", DescribeValue(*api_version) + " is not supported: Cohort reads " +
                                expected.api_version() + " " + expected.name() + "s" + advice);
        supported = false;
      }
    } else {
      supported = false;
    }
    if (!supported) return false;
    kind_ = named;
    job.job_kind = named;
    job.api_version = named->api_version();
    job.kind = named->name();
    return true;
  }

  void DecodeMetadata(const json& metadata, ObjectMeta& meta) {
    if (!ExpectObject(metadata, "metadata")) return;
    std::set<std::string> known = ServerSetMetadataFields();
    known.insert({"name", "namespace", "labels", "annotations", "generateName"});
    WarnUnknownFields(metadata, "metadata", known);
    if (const json* name = Field(metadata, "name")) {
      if (std::optional<std::string> text = ReadString(*name, "metadata.name")) meta.name = *text;
    }
    if (const json* namespace_value = Field(metadata, "namespace")) {
      if (std::optional<std::string> text = ReadString(*namespace_value, "metadata.namespace")) {
        meta.namespace_name = *text;
      }
    }
    if (const json* labels = Field(metadata, "labels")) {
      meta.labels = ReadStringMap(*labels, "metadata.labels");
    }
    if (const json* annotations = Field(metadata, "annotations")) {
      meta.annotations = ReadStringMap(*annotations, "metadata.annotations");
    }
    if (Field(metadata, "generateName") != nullptr) {
      Warning("metadata.generateName", "ignored: Cohort names a job by metadata.name only");
    }
  }

  void DecodeSpec(const json& spec, Job& job) {
    if (!ExpectObject(spec, "spec")) return;
    const KindFacts& facts = kind_->facts();
    std::set<std::string> known = {"runPolicy", facts.replica_specs_field};
    for (const SpecField& field : facts.spec_fields) known.insert(field.name);
    known.insert(LegacyRunPolicyFields().begin(), LegacyRunPolicyFields().end());
    WarnUnknownFields(spec, "spec", known);

    std::set<std::string> set_in_run_policy;
    if (const json* run_policy = Field(spec, "runPolicy")) {
      DecodeRunPolicy(*run_policy, job.run_policy, set_in_run_policy);
    }
    DecodeLegacyRunPolicy(spec, set_in_run_policy, job.run_policy);
    for (const SpecField& field : facts.spec_fields) DecodeKindSpecField(spec, field, job);
    const std::string replica_specs_path = ChildPath("spec", facts.replica_specs_field);
    if (const json* replica_specs = Field(spec, facts.replica_specs_field)) {
      if (!ExpectObject(*replica_specs, replica_specs_path)) return;
      for (const auto& [type, value] : replica_specs->items()) {
        job.replica_specs[type] = DecodeReplicaSpec(value, ChildPath(replica_specs_path, type));
      }
    }
  }

  // One of the kind's own spec fields, into Job::kind_spec when it has the declared type.
  void DecodeKindSpecField(const json& spec, const SpecField& field, Job& job) {
    const json* value = Field(spec, field.name);
    if (value == nullptr) return;
    if (std::optional<json> decoded = DecodeSpecFieldValue(*value, field, "spec")) {
      job.kind_spec[field.name] = std::move(*decoded);
    }
  }

  // The value of `field` (under `parent_path`) as JSON when it has the declared type, each nested
  // field checked in turn; nullopt after an error. Unknown keys of a mapping are warned about and
  // left out, as an API server prunes them.
  std::optional<json> DecodeSpecFieldValue(const json& value, const SpecField& field,
                                           const std::string& parent_path) {
    const std::string path = ChildPath(parent_path, field.name);
    if (!field.deprecation.empty()) Warning(path, "deprecated: " + field.deprecation);
    switch (field.type) {
      case SpecField::Type::kString:
        if (std::optional<std::string> text = ReadString(value, path)) return json(*text);
        return std::nullopt;
      case SpecField::Type::kBool:
        if (std::optional<bool> flag = ReadBool(value, path)) return json(*flag);
        return std::nullopt;
      case SpecField::Type::kInt32:
        if (std::optional<int32_t> number = ReadInt32(value, path)) return json(*number);
        return std::nullopt;
      case SpecField::Type::kObject:
        return DecodeSpecFieldObject(value, field, path);
      case SpecField::Type::kObjectList: {
        if (!value.is_array()) {
          TypeError(path, "a list of mappings", value);
          return std::nullopt;
        }
        json items = json::array();
        bool all_read = true;
        for (size_t i = 0; i < value.size(); ++i) {
          std::optional<json> item = DecodeSpecFieldObject(value[i], field, IndexPath(path, i));
          if (item) {
            items.push_back(std::move(*item));
          } else {
            all_read = false;
          }
        }
        if (!all_read) return std::nullopt;
        return items;
      }
    }
    return std::nullopt;
  }

  // A mapping of `field.fields` at `path` (kept whole when the field lists none).
  std::optional<json> DecodeSpecFieldObject(const json& value, const SpecField& field,
                                            const std::string& path) {
    if (!ExpectObject(value, path)) return std::nullopt;
    if (field.fields.empty()) return value;
    std::set<std::string> known;
    for (const SpecField& child : field.fields) known.insert(child.name);
    WarnUnknownFields(value, path, known);
    json object = json::object();
    bool all_read = true;
    for (const SpecField& child : field.fields) {
      const json* child_value = Field(value, child.name);
      if (child_value == nullptr) continue;
      if (std::optional<json> decoded = DecodeSpecFieldValue(*child_value, child, path)) {
        object[child.name] = std::move(*decoded);
      } else {
        all_read = false;
      }
    }
    if (!all_read) return std::nullopt;
    return object;
  }

  // ---- Run policy ----

  // One of the fields that may be written under spec.runPolicy or, in old manifests, under spec.
  void ReadSharedRunPolicyField(const json& value, const std::string& path,
                                const std::string& field, RunPolicy& policy) {
    if (field == "cleanPodPolicy") {
      std::optional<std::string> text = ReadString(value, path);
      if (!text) return;
      if (std::optional<CleanPodPolicy> parsed = ParseCleanPodPolicy(*text)) {
        policy.clean_pod_policy = *parsed;
      } else {
        Error(path, DescribeValue(value) + " is not one of All, Running, None");
      }
    } else if (field == "ttlSecondsAfterFinished") {
      if (std::optional<int32_t> seconds = ReadInt32(value, path)) {
        policy.ttl_seconds_after_finished = *seconds;
      }
    } else if (field == "activeDeadlineSeconds") {
      if (std::optional<int64_t> seconds = ReadInteger(value, path, kInt64Min, kInt64Max)) {
        policy.active_deadline_seconds = *seconds;
      }
    } else if (field == "backoffLimit") {
      if (std::optional<int32_t> limit = ReadInt32(value, path)) policy.backoff_limit = *limit;
    }
  }

  void DecodeRunPolicy(const json& run_policy, RunPolicy& policy,
                       std::set<std::string>& set_fields) {
    const std::string path = "spec.runPolicy";
    if (!ExpectObject(run_policy, path)) return;
    std::set<std::string> known = {"suspend", "managedBy", "schedulingPolicy"};
    known.insert(LegacyRunPolicyFields().begin(), LegacyRunPolicyFields().end());
    WarnUnknownFields(run_policy, path, known);
    for (const std::string& field : LegacyRunPolicyFields()) {
      if (const json* value = Field(run_policy, field)) {
        ReadSharedRunPolicyField(*value, ChildPath(path, field), field, policy);
        set_fields.insert(field);
      }
    }
    if (const json* suspend = Field(run_policy, "suspend")) {
      if (std::optional<bool> value = ReadBool(*suspend, ChildPath(path, "suspend"))) {
        policy.suspend = *value;
      }
    }
    if (const json* managed_by = Field(run_policy, "managedBy")) {
      policy.managed_by = ReadString(*managed_by, ChildPath(path, "managedBy"));
    }
    if (const json* scheduling = Field(run_policy, "schedulingPolicy")) {
      if (ExpectObject(*scheduling, ChildPath(path, "schedulingPolicy"))) {
        policy.scheduling_policy = *scheduling;
      }
    }
  }

  void DecodeLegacyRunPolicy(const json& spec, const std::set<std::string>& set_in_run_policy,
                             RunPolicy& policy) {
    for (const std::string& field : LegacyRunPolicyFields()) {
      const json* value = Field(spec, field);
      if (value == nullptr) continue;
      std::string legacy_path = ChildPath("spec", field);
      std::string current_path = ChildPath("spec.runPolicy", field);
      if (set_in_run_policy.count(field)) {
        Warning(legacy_path, "ignored: " + current_path + " is also set and takes precedence");
        continue;
      }
      ReadSharedRunPolicyField(*value, legacy_path, field, policy);
      auto written = positions_.find(legacy_path);
      if (written != positions_.end()) positions_[current_path] = written->second;
      Warning(legacy_path, "read as " + current_path +
                               ": this is where kubeflow.org/v1 manifests put it before runPolicy "
                               "existed, and the current Kubeflow operator ignores it here");
    }
  }

  // ---- Replicas ----

  ReplicaSpec DecodeReplicaSpec(const json& value, const std::string& path) {
    ReplicaSpec replica;
    // What an unset or empty restartPolicy means: the typed field cannot tell unset from set, so
    // the kind's default is applied here rather than in ApplyDefaults.
    replica.restart_policy = kind_->facts().default_restart_policy;
    replica.position = NearestPosition(positions_, path);
    // "Worker:" with nothing under it: a replica without containers, which validation reports.
    if (value.is_null() || !ExpectObject(value, path)) return replica;
    WarnUnknownFields(value, path, {"replicas", "restartPolicy", "template"});
    if (const json* replicas = Field(value, "replicas")) {
      if (std::optional<int32_t> count = ReadInt32(*replicas, ChildPath(path, "replicas"))) {
        replica.replicas = *count;
      }
    }
    if (const json* restart_policy = Field(value, "restartPolicy")) {
      std::string policy_path = ChildPath(path, "restartPolicy");
      std::optional<std::string> text = ReadString(*restart_policy, policy_path);
      if (text && !text->empty()) {  // empty means the default, as the operator reads it
        if (std::optional<RestartPolicy> parsed = ParseRestartPolicy(*text)) {
          replica.restart_policy = *parsed;
        } else {
          Error(policy_path, DescribeValue(*restart_policy) +
                                 " is not one of Always, OnFailure, Never, ExitCode");
        }
      }
    }
    if (const json* pod_template = Field(value, "template")) {
      DecodePodTemplate(*pod_template, ChildPath(path, "template"), replica.template_spec);
    }
    return replica;
  }

  void DecodePodTemplate(const json& value, const std::string& path, PodTemplate& pod_template) {
    if (!ExpectObject(value, path)) return;
    pod_template.raw = value;
    if (const json* metadata = Field(value, "metadata")) {
      std::string metadata_path = ChildPath(path, "metadata");
      if (ExpectObject(*metadata, metadata_path)) {
        if (const json* labels = Field(*metadata, "labels")) {
          pod_template.labels = ReadStringMap(*labels, ChildPath(metadata_path, "labels"));
        }
        if (const json* annotations = Field(*metadata, "annotations")) {
          pod_template.annotations =
              ReadStringMap(*annotations, ChildPath(metadata_path, "annotations"));
        }
      }
    }
    const json* spec = Field(value, "spec");
    std::string spec_path = ChildPath(path, "spec");
    if (spec == nullptr || !ExpectObject(*spec, spec_path)) return;
    if (const json* restart_policy = Field(*spec, "restartPolicy")) {
      if (std::optional<std::string> text =
              ReadString(*restart_policy, ChildPath(spec_path, "restartPolicy"))) {
        pod_template.restart_policy = *text;
      }
    }
    if (const json* containers = Field(*spec, "containers")) {
      std::string containers_path = ChildPath(spec_path, "containers");
      if (!containers->is_array()) {
        TypeError(containers_path, "a list of containers", *containers);
        return;
      }
      for (size_t i = 0; i < containers->size(); ++i) {
        pod_template.containers.push_back(
            DecodeContainer((*containers)[i], IndexPath(containers_path, i)));
      }
    }
  }

  Container DecodeContainer(const json& value, const std::string& path) {
    Container container;
    container.position = NearestPosition(positions_, path);
    if (!ExpectObject(value, path)) return container;
    WarnUnknownFields(value, path, ContainerFields(), "a Kubernetes container");
    auto read_string = [&](const char* key, std::string& out) {
      if (const json* field = Field(value, key)) {
        if (std::optional<std::string> text = ReadString(*field, ChildPath(path, key))) out = *text;
      }
    };
    read_string("name", container.name);
    read_string("image", container.image);
    read_string("workingDir", container.working_dir);
    if (const json* command = Field(value, "command")) {
      container.command = ReadStringList(*command, ChildPath(path, "command"));
    }
    if (const json* args = Field(value, "args")) {
      container.args = ReadStringList(*args, ChildPath(path, "args"));
    }
    if (const json* env = Field(value, "env")) {
      std::string env_path = ChildPath(path, "env");
      if (!env->is_array()) {
        TypeError(env_path, "a list of name/value pairs", *env);
      } else {
        for (size_t i = 0; i < env->size(); ++i) {
          container.env.push_back(DecodeEnvVar((*env)[i], IndexPath(env_path, i)));
        }
      }
    }
    if (const json* ports = Field(value, "ports")) {
      std::string ports_path = ChildPath(path, "ports");
      if (!ports->is_array()) {
        TypeError(ports_path, "a list of ports", *ports);
      } else {
        for (size_t i = 0; i < ports->size(); ++i) {
          container.ports.push_back(DecodePort((*ports)[i], IndexPath(ports_path, i)));
        }
      }
    }
    return container;
  }

  EnvVar DecodeEnvVar(const json& value, const std::string& path) {
    EnvVar variable;
    if (!ExpectObject(value, path)) return variable;
    WarnUnknownFields(value, path, {"name", "value", "valueFrom"},
                      "a Kubernetes environment variable");
    if (const json* name = Field(value, "name")) {
      if (std::optional<std::string> text = ReadString(*name, ChildPath(path, "name"))) {
        variable.name = *text;
      }
    }
    if (const json* text_value = Field(value, "value")) {
      if (std::optional<std::string> text = ReadString(*text_value, ChildPath(path, "value"))) {
        variable.value = *text;
      }
    }
    if (const json* value_from = Field(value, "valueFrom")) {
      if (ExpectObject(*value_from, ChildPath(path, "valueFrom")))
        variable.value_from = *value_from;
    }
    return variable;
  }

  ContainerPort DecodePort(const json& value, const std::string& path) {
    ContainerPort port;
    if (!ExpectObject(value, path)) return port;
    WarnUnknownFields(value, path, {"name", "containerPort", "protocol", "hostPort", "hostIP"},
                      "a Kubernetes container port");
    if (const json* name = Field(value, "name")) {
      if (std::optional<std::string> text = ReadString(*name, ChildPath(path, "name"))) {
        port.name = *text;
      }
    }
    if (const json* number = Field(value, "containerPort")) {
      if (std::optional<int32_t> parsed = ReadInt32(*number, ChildPath(path, "containerPort"))) {
        port.container_port = *parsed;
      }
    }
    if (const json* protocol = Field(value, "protocol")) {
      if (std::optional<std::string> text = ReadString(*protocol, ChildPath(path, "protocol"))) {
        port.protocol = *text;
      }
    }
    return port;
  }

  PositionMap positions_;
  std::string file_name_;
  const KindRegistry& kinds_;
  const JobKind* kind_ = nullptr;  // once DecodeTypeMeta has found it
  std::vector<Diagnostic> errors_;
  std::vector<Diagnostic> warnings_;
};

std::string KindOf(const json& document) {
  if (!document.is_object()) return "";
  auto kind = document.find("kind");
  return kind != document.end() && kind->is_string() ? kind->get<std::string>() : "";
}

// Which document of a multi-document file holds the job: the one whose kind is in `kinds`.
StatusOr<size_t> ChooseJobDocument(const std::vector<YamlDocument>& documents,
                                   const std::string& file_name, const KindRegistry& kinds) {
  std::vector<size_t> non_empty;
  std::vector<size_t> jobs;
  for (size_t i = 0; i < documents.size(); ++i) {
    if (documents[i].root.is_null()) continue;
    non_empty.push_back(i);
    if (kinds.FindByName(KindOf(documents[i].root)) != nullptr) jobs.push_back(i);
  }
  if (jobs.size() == 1) return jobs[0];
  if (jobs.size() > 1) {
    SourcePosition first = NearestPosition(documents[jobs[0]].positions, "kind");
    SourcePosition second = NearestPosition(documents[jobs[1]].positions, "kind");
    const std::string kind = KindOf(documents[jobs[1]].root);
    return Status::InvalidArgument(LocatedMessage(
        file_name, second, "kind",
        "a second " + kind + " in this file (the first is at line " + std::to_string(first.line) +
            "); put each " + kind + " in its own file"));
  }
  if (non_empty.empty()) {
    return Status::InvalidArgument(file_name + ": the file holds no " + kinds.Names(" or "));
  }
  // A single document of another kind is decoded anyway: the decoder explains what is wrong
  // with its apiVersion and kind, at their positions.
  if (non_empty.size() == 1) return non_empty[0];
  std::vector<std::string> found;
  for (size_t i : non_empty) {
    std::string kind = KindOf(documents[i].root);
    found.push_back(kind.empty() ? "(no kind)" : kind);
  }
  return Status::InvalidArgument(file_name + ": none of the " + std::to_string(non_empty.size()) +
                                 " documents has kind: " + kinds.Names(" or ") + " (found " +
                                 JoinWithCommas(found) + ")");
}

StatusOr<Job> Decode(const json& object, PositionMap positions, const std::string& file_name,
                     std::vector<std::string>* warnings, const KindRegistry& kinds) {
  SpecDecoder decoder(std::move(positions), file_name, kinds);
  Job job;
  decoder.Decode(object, job);
  if (warnings != nullptr) {
    std::vector<std::string> found = decoder.warnings();
    warnings->insert(warnings->end(), found.begin(), found.end());
  }
  std::vector<std::string> errors = decoder.errors();
  if (!errors.empty()) return Status::InvalidArgument(JoinMessages(errors));
  job.positions = decoder.TakePositions();
  return job;
}

}  // namespace

StatusOr<Job> DefaultAndValidate(StatusOr<Job> parsed) {
  if (!parsed.ok()) return parsed.status();
  Job job = std::move(parsed).value();
  ApplyDefaults(job);
  COHORT_RETURN_IF_ERROR(ValidateJob(job));
  return job;
}

StatusOr<Job> DecodeJob(const json& object, const std::map<std::string, SourcePosition>& positions,
                        const std::string& file_name_for_messages,
                        std::vector<std::string>* warnings, const KindRegistry& kinds) {
  return Decode(object, positions, file_name_for_messages, warnings, kinds);
}

StatusOr<Job> ParseJob(const std::string& yaml_text, const std::string& file_name_for_messages,
                       std::vector<std::string>* warnings, const KindRegistry& kinds) {
  StatusOr<std::vector<YamlDocument>> documents =
      ReadYamlDocuments(yaml_text, file_name_for_messages);
  if (!documents.ok()) return documents.status();
  StatusOr<size_t> chosen = ChooseJobDocument(*documents, file_name_for_messages, kinds);
  if (!chosen.ok()) return chosen.status();
  YamlDocument& document = (*documents)[*chosen];
  return Decode(document.root, std::move(document.positions), file_name_for_messages, warnings,
                kinds);
}

StatusOr<Job> ParseJobFile(const std::string& path, std::vector<std::string>* warnings,
                           const KindRegistry& kinds) {
  StatusOr<std::string> contents = ReadYamlFile(path);
  if (!contents.ok()) return contents.status();
  return ParseJob(*contents, path, warnings, kinds);
}

StatusOr<Job> LoadJob(const std::string& yaml_text, const std::string& file_name_for_messages,
                      std::vector<std::string>* warnings, const KindRegistry& kinds) {
  return DefaultAndValidate(ParseJob(yaml_text, file_name_for_messages, warnings, kinds));
}

StatusOr<Job> LoadJobFile(const std::string& path, std::vector<std::string>* warnings,
                          const KindRegistry& kinds) {
  return DefaultAndValidate(ParseJobFile(path, warnings, kinds));
}

SourcePosition FindPosition(const Job& job, const std::string& field_path) {
  return NearestPosition(job.positions, field_path);
}

std::string FieldMessage(const Job& job, const std::string& field_path,
                         const std::string& message) {
  return LocatedMessage(job.source_file, FindPosition(job, field_path), field_path, message);
}

}  // namespace cohort::job
