#include "kube/objects/crd.h"

#include <iterator>
#include <string>
#include <utility>

namespace cohort::kube {
namespace {

using nlohmann::json;

json Typed(const char* type, const std::string& description = "") {
  json schema = {{"type", type}};
  if (!description.empty()) schema["description"] = description;
  return schema;
}

json Integer(const char* format, const std::string& description = "") {
  json schema = Typed("integer", description);
  schema["format"] = format;
  return schema;
}

json StringMap() { return {{"type", "object"}, {"additionalProperties", {{"type", "string"}}}}; }

json Timestamp() { return {{"type", "string"}, {"format", "date-time"}}; }

// A resource list (requests, minResources): names to quantities, as Kubernetes writes them.
json ResourceList() {
  json quantity = {
      {"anyOf", json::array({{{"type", "integer"}}, {{"type", "string"}}})},
      {"x-kubernetes-int-or-string", true},
      {"pattern",
       "^(\\+|-)?(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\\+|-)?(([0-9]+("
       "\\.[0-9]*)?)|(\\.[0-9]+))))?$"}};
  return {{"type", "object"}, {"additionalProperties", std::move(quantity)}};
}

const char* kCleanPodPolicyText =
    "Which pods to delete once the job has finished: All, Running or None (the default).";

// job::RunPolicy.
json RunPolicySchema() {
  json queue = Typed("string", "The scheduler queue of the job's PodGroup; immutable.");
  queue["x-kubernetes-validations"] =
      json::array({{{"rule", "self == oldSelf"}, {"message", "queue is immutable"}}});
  json scheduling = {
      {"type", "object"},
      {"description",
       "Gang scheduling of the job's pods, used when the operator runs with a gang scheduler."},
      {"properties",
       {{"minAvailable",
         Integer("int32", "Pods that must be schedulable together (default: all).")},
        {"minResources", ResourceList()},
        {"priorityClass", Typed("string")},
        {"queue", std::move(queue)},
        {"scheduleTimeoutSeconds", Integer("int32")}}}};
  json suspend = Typed("boolean", "While true, the job has no pods.");
  suspend["default"] = false;
  return {{"type", "object"},
          {"description", "Run-time policies shared by every Kubeflow job kind."},
          {"properties",
           {{"activeDeadlineSeconds",
             Integer("int64", "Seconds from the job's start after which it fails.")},
            {"backoffLimit", Integer("int32", "Restarts allowed before the job fails.")},
            {"cleanPodPolicy", Typed("string", kCleanPodPolicyText)},
            {"managedBy", Typed("string",
                                "The controller that runs this job, when not the "
                                "built-in one (kueue.x-k8s.io/multikueue).")},
            {"schedulingPolicy", std::move(scheduling)},
            {"suspend", std::move(suspend)},
            {"ttlSecondsAfterFinished",
             Integer("int32", "Seconds after the job finished when it is deleted.")}}}};
}

// "Always, OnFailure, Never (the default) or ExitCode", the kind's default marked.
std::string RestartPolicyText(const job::KindFacts& facts) {
  const job::RestartPolicy policies[] = {job::RestartPolicy::kAlways,
                                         job::RestartPolicy::kOnFailure, job::RestartPolicy::kNever,
                                         job::RestartPolicy::kExitCode};
  std::string text;
  for (size_t i = 0; i < std::size(policies); ++i) {
    text += i == 0 ? "" : (i + 1 == std::size(policies) ? " or " : ", ");
    text += job::ToString(policies[i]);
    if (policies[i] == facts.default_restart_policy) text += " (the default)";
  }
  return text + ".";
}

// job::ReplicaSpec, its template's spec kept whole.
json ReplicaSpecSchema(const job::KindFacts& facts) {
  json template_metadata = {{"type", "object"},
                            {"properties",
                             {{"annotations", StringMap()},
                              {"finalizers", {{"type", "array"}, {"items", {{"type", "string"}}}}},
                              {"labels", StringMap()},
                              {"name", Typed("string")},
                              {"namespace", Typed("string")}}}};
  json template_spec = {
      {"type", "object"},
      {"description", "A core/v1 PodSpec; it needs a container named " + facts.container_name +
                          ". The API server validates it when the pod is created."},
      {"x-kubernetes-preserve-unknown-fields", true}};
  json pod_template = {
      {"type", "object"},
      {"description", "The pod of each replica; its restartPolicy is replaced by the replica's."},
      {"properties",
       {{"metadata", std::move(template_metadata)}, {"spec", std::move(template_spec)}}}};
  return {{"type", "object"},
          {"description", "One replica type: how many, how they restart, and their pod."},
          {"properties",
           {{"replicas", Integer("int32", "How many replicas (default 1).")},
            {"restartPolicy", Typed("string", RestartPolicyText(facts))},
            {"template", std::move(pod_template)}}}};
}

// A kind's own spec field, its nested fields included.
json SpecFieldSchema(const job::SpecField& field) {
  using Type = job::SpecField::Type;
  switch (field.type) {
    case Type::kString:
      return Typed("string", field.description);
    case Type::kBool:
      return Typed("boolean", field.description);
    case Type::kInt32:
      return Integer("int32", field.description);
    case Type::kObject:
    case Type::kObjectList: {
      json object = {{"type", "object"}};
      if (field.fields.empty()) {
        object["x-kubernetes-preserve-unknown-fields"] = true;
      } else {
        json properties = json::object();
        for (const job::SpecField& child : field.fields) {
          properties[child.name] = SpecFieldSchema(child);
        }
        object["properties"] = std::move(properties);
      }
      if (field.type == Type::kObject) {
        if (!field.description.empty()) object["description"] = field.description;
        return object;
      }
      json list = Typed("array", field.description);
      list["items"] = std::move(object);
      return list;
    }
  }
  return Typed("string", field.description);
}

json StatusSchema() {
  json condition = {{"type", "object"},
                    {"required", json::array({"status", "type"})},
                    {"properties",
                     {{"lastTransitionTime", Timestamp()},
                      {"lastUpdateTime", Timestamp()},
                      {"message", Typed("string")},
                      {"reason", Typed("string")},
                      {"status", Typed("string")},
                      {"type", Typed("string")}}}};
  json label_selector = {{"type", "object"}, {"x-kubernetes-preserve-unknown-fields", true}};
  json replica_status = {{"type", "object"},
                         {"properties",
                          {{"active", Integer("int32")},
                           {"failed", Integer("int32")},
                           {"labelSelector", std::move(label_selector)},
                           {"selector", Typed("string")},
                           {"succeeded", Integer("int32")}}}};
  return {{"type", "object"},
          {"description", "What the operator observed: conditions (latest last) and counts."},
          {"properties",
           {{"completionTime", Timestamp()},
            {"conditions", {{"type", "array"}, {"items", std::move(condition)}}},
            {"lastReconcileTime", Timestamp()},
            {"replicaStatuses",
             {{"type", "object"}, {"additionalProperties", std::move(replica_status)}}},
            {"startTime", Timestamp()}}}};
}

}  // namespace

json CustomResourceDefinition(const job::JobKind& kind) {
  const job::KindFacts& facts = kind.facts();
  json spec_properties = {
      {"runPolicy", RunPolicySchema()},
      {facts.replica_specs_field,
       {{"type", "object"}, {"additionalProperties", ReplicaSpecSchema(facts)}}},
      // Where tf-operator v1.1 had it; kept so that older manifests are not pruned.
      {"cleanPodPolicy", Typed("string", std::string(kCleanPodPolicyText) +
                                             " The pre-runPolicy place; runPolicy's wins.")}};
  for (const job::SpecField& field : facts.spec_fields) {
    spec_properties[field.name] = SpecFieldSchema(field);
  }
  json schema = {{"type", "object"},
                 {"description", "A " + facts.kind + ": a distributed training job."},
                 {"properties",
                  {{"apiVersion", Typed("string")},
                   {"kind", Typed("string")},
                   {"metadata", {{"type", "object"}}},
                   {"spec",
                    {{"type", "object"},
                     {"required", json::array({facts.replica_specs_field})},
                     {"properties", std::move(spec_properties)}}},
                   {"status", StatusSchema()}}}};
  json version = {
      {"name", facts.version},
      {"served", true},
      {"storage", true},
      {"subresources", {{"status", json::object()}}},
      {"additionalPrinterColumns",
       json::array(
           {{{"name", "State"}, {"type", "string"}, {"jsonPath", ".status.conditions[-1:].type"}},
            {{"name", "Age"}, {"type", "date"}, {"jsonPath", ".metadata.creationTimestamp"}}})},
      {"schema", {{"openAPIV3Schema", std::move(schema)}}}};
  const std::string singular = job::LowerCase(facts.kind);
  return {{"apiVersion", "apiextensions.k8s.io/v1"},
          {"kind", "CustomResourceDefinition"},
          {"metadata", {{"name", facts.plural + "." + facts.group}}},
          {"spec",
           {{"group", facts.group},
            {"names",
             {{"kind", facts.kind},
              {"listKind", facts.kind + "List"},
              {"plural", facts.plural},
              {"singular", singular}}},
            {"scope", "Namespaced"},
            {"versions", json::array({std::move(version)})}}}};
}

}  // namespace cohort::kube
