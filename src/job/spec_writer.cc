#include "job/spec_writer.h"

#include <yaml-cpp/yaml.h>

#include <cctype>
#include <utility>

#include "job/spec_parser.h"
#include "job/yaml_document.h"

namespace cohort::job {
namespace {

using nlohmann::json;

// object[key] = value when `present`, otherwise no key at all: Kubernetes leaves unset fields out.
void SetOrErase(json& object, const char* key, bool present, json value) {
  if (present) {
    object[key] = std::move(value);
  } else {
    object.erase(key);
  }
}

// `object[key]` when it is of the wanted kind, else an empty one: the raw base a typed field is
// laid over.
json ObjectField(const json& object, const char* key) {
  auto found = object.find(key);
  return found != object.end() && found->is_object() ? *found : json::object();
}

json ArrayField(const json& object, const char* key) {
  auto found = object.find(key);
  return found != object.end() && found->is_array() ? *found : json::array();
}

json EnvVarToJson(const EnvVar& variable) {
  json out = json::object();
  out["name"] = variable.name;
  if (!variable.value.empty()) out["value"] = variable.value;
  if (!variable.value_from.is_null()) out["valueFrom"] = variable.value_from;
  return out;
}

// Laid over the raw port so that hostPort and hostIP survive.
json PortToJson(const ContainerPort& port, json base) {
  if (!base.is_object()) base = json::object();
  SetOrErase(base, "name", !port.name.empty(), port.name);
  base["containerPort"] = port.container_port;
  base["protocol"] = port.protocol;
  return base;
}

// Laid over the raw container so that resources, volumeMounts and the like survive.
json ContainerToJson(const Container& container, json base) {
  if (!base.is_object()) base = json::object();
  SetOrErase(base, "name", !container.name.empty(), container.name);
  SetOrErase(base, "image", !container.image.empty(), container.image);
  SetOrErase(base, "command", !container.command.empty(), container.command);
  SetOrErase(base, "args", !container.args.empty(), container.args);
  SetOrErase(base, "workingDir", !container.working_dir.empty(), container.working_dir);
  json env = json::array();
  for (const EnvVar& variable : container.env) env.push_back(EnvVarToJson(variable));
  SetOrErase(base, "env", !env.empty(), env);
  json raw_ports = ArrayField(base, "ports");
  json ports = json::array();
  for (size_t i = 0; i < container.ports.size(); ++i) {
    ports.push_back(PortToJson(container.ports[i], i < raw_ports.size() ? raw_ports[i] : json()));
  }
  SetOrErase(base, "ports", !ports.empty(), ports);
  return base;
}

json RunPolicyToJson(const RunPolicy& policy) {
  json out = json::object();
  out["cleanPodPolicy"] = ToString(policy.clean_pod_policy);
  if (policy.ttl_seconds_after_finished) {
    out["ttlSecondsAfterFinished"] = *policy.ttl_seconds_after_finished;
  }
  if (policy.active_deadline_seconds) {
    out["activeDeadlineSeconds"] = *policy.active_deadline_seconds;
  }
  if (policy.backoff_limit) out["backoffLimit"] = *policy.backoff_limit;
  if (policy.suspend) out["suspend"] = true;
  if (policy.managed_by) out["managedBy"] = *policy.managed_by;
  if (!policy.scheduling_policy.is_null()) out["schedulingPolicy"] = policy.scheduling_policy;
  return out;
}

json MetadataToJson(const ObjectMeta& metadata) {
  json out = json::object();
  out["name"] = metadata.name;
  out["namespace"] = metadata.namespace_name;
  if (!metadata.labels.empty()) out["labels"] = metadata.labels;
  if (!metadata.annotations.empty()) out["annotations"] = metadata.annotations;
  return out;
}

// ---- YAML ----

bool IsYaml11Word(const std::string& text) {
  static const char* const kWords[] = {"y",  "Y",  "yes", "Yes", "YES", "n",   "N",   "no",
                                       "No", "NO", "on",  "On",  "ON",  "off", "Off", "OFF"};
  for (const char* word : kWords) {
    if (text == word) return true;
  }
  return false;
}

// Whether text must be quoted to read back as text. Besides what the core schema would resolve
// to another type, this quotes YAML 1.1's yes/no/on/off and anything that starts like a number
// (1_000, 0123, 1:20), so that older YAML readers such as kubectl's read it as text too. Quoting
// more than needed is harmless.
bool NeedsQuotes(const std::string& text) {
  if (text.empty() || !ResolvePlainScalar(text).is_string() || IsYaml11Word(text)) return true;
  size_t i = (text[0] == '-' || text[0] == '+' || text[0] == '.') ? 1 : 0;
  return i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]));
}

void EmitText(YAML::Emitter& out, const std::string& text) {
  if (NeedsQuotes(text)) out << YAML::DoubleQuoted;
  out << text;
}

void Emit(YAML::Emitter& out, const json& value) {
  switch (value.type()) {
    case json::value_t::object:
      if (value.empty()) out << YAML::Flow;
      out << YAML::BeginMap;
      for (const auto& [key, item] : value.items()) {
        out << YAML::Key;
        EmitText(out, key);
        out << YAML::Value;
        Emit(out, item);
      }
      out << YAML::EndMap;
      return;
    case json::value_t::array:
      if (value.empty()) out << YAML::Flow;
      out << YAML::BeginSeq;
      for (const json& item : value) Emit(out, item);
      out << YAML::EndSeq;
      return;
    case json::value_t::string:
      EmitText(out, value.get<std::string>());
      return;
    case json::value_t::boolean:
      out << value.get<bool>();
      return;
    case json::value_t::number_integer:
      out << value.get<int64_t>();
      return;
    case json::value_t::number_unsigned:
      out << value.get<uint64_t>();
      return;
    case json::value_t::number_float:
      // nlohmann writes the shortest text that reads back to the same double ("0.1", "1e+20"),
      // which the core schema reads as a float again.
      out << value.dump();
      return;
    default:
      out << YAML::Null;
      return;
  }
}

}  // namespace

json PodTemplateToJson(const PodTemplate& pod_template) {
  json out = pod_template.raw.is_object() ? pod_template.raw : json::object();

  json metadata = ObjectField(out, "metadata");
  SetOrErase(metadata, "labels", !pod_template.labels.empty(), pod_template.labels);
  SetOrErase(metadata, "annotations", !pod_template.annotations.empty(), pod_template.annotations);
  SetOrErase(out, "metadata", !metadata.empty(), metadata);

  json spec = ObjectField(out, "spec");
  json raw_containers = ArrayField(spec, "containers");
  json containers = json::array();
  for (size_t i = 0; i < pod_template.containers.size(); ++i) {
    containers.push_back(ContainerToJson(pod_template.containers[i],
                                         i < raw_containers.size() ? raw_containers[i] : json()));
  }
  SetOrErase(spec, "containers", !containers.empty(), containers);
  SetOrErase(spec, "restartPolicy", !pod_template.restart_policy.empty(),
             pod_template.restart_policy);
  SetOrErase(out, "spec", !spec.empty(), spec);
  return out;
}

json ToJson(const Job& job) {
  const KindFacts& facts = job.job_kind->facts();
  json replica_specs = json::object();
  for (const auto& [type, replica] : job.replica_specs) {
    json out = json::object();
    out["replicas"] = replica.replicas;
    out["restartPolicy"] = ToString(replica.restart_policy);
    out["template"] = PodTemplateToJson(replica.template_spec);
    replica_specs[type] = std::move(out);
  }
  json spec = json::object();
  spec["runPolicy"] = RunPolicyToJson(job.run_policy);
  for (const SpecField& field : facts.spec_fields) {
    json value = job.job_kind->SpecFieldValue(job, field.name);
    if (value != field.default_value) spec[field.name] = value;
  }
  spec[facts.replica_specs_field] = std::move(replica_specs);

  json object = json::object();
  object["apiVersion"] = job.api_version;
  object["kind"] = job.kind;
  object["metadata"] = MetadataToJson(job.metadata);
  object["spec"] = std::move(spec);
  return object;
}

StatusOr<Job> JobFromJson(const json& object, std::vector<std::string>* warnings,
                          const KindRegistry& kinds) {
  return DecodeJob(object, {}, "", warnings, kinds);
}

std::string ToYaml(const json& value) {
  YAML::Emitter out;
  out.SetNullFormat(YAML::LowerNull);
  Emit(out, value);
  // The emitter reports failure through good() rather than by throwing. JSON is YAML, so the
  // JSON text is a correct, if less readable, fallback.
  std::string text = out.good() ? std::string(out.c_str())
                                : value.dump(2, ' ', false, json::error_handler_t::replace);
  if (text.empty() || text.back() != '\n') text += '\n';
  return text;
}

}  // namespace cohort::job
