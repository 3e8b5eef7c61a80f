// The command-line habits `cohort` accepts from kubectl and gcloud, decided apart from the
// command wiring so that they are tested on their own:
//
//   NormalizeArguments({"get", "-o=wide"})   -> {"get", "-o", "wide"}    (kubectl's -o=x)
//   SplitResource({"pytorchjobs", "mnist"})  -> {kJob, PyTorchJob, {"mnist"}}  (get pytorchjobs
//   mnist) UnknownCommandMessage("aply", commands)  -> unknown command "aply"; did you mean
//   "apply"? JobNameFromFileName("taxi_config.yaml")  -> "taxi-config"              (gcloud's
//   submit)
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "base/status.h"
#include "job/job_kind.h"

namespace cohort::view {

// Splits every short option written `-x=value` into `-x` `value`, as kubectl accepts both.
// Arguments after "--" are left alone.
std::vector<std::string> NormalizeArguments(const std::vector<std::string>& arguments);

enum class Resource { kNone, kJob, kPod };

struct ResourceArguments {
  Resource resource = Resource::kNone;  // kNone: the arguments name no resource type
  // With kJob, the kind the type names; null when no type was given (every kind).
  const job::JobKind* kind = nullptr;
  std::vector<std::string> names;
};

// Reads kubectl's `TYPE [NAME...]` and `TYPE/NAME` forms. The job types are every kind's of
// job::KindRegistry::Default(), each as kubectl spells a resource: the kind in lower case, its
// plural, and both with its group ("pytorchjob", "pytorchjobs", "pytorchjob.kubeflow.org",
// "pytorchjobs.kubeflow.org"); pod, pods, po are pods. InvalidArgument for a resource type cohort
// does not have (deployments, services...), naming the ones it has.
StatusOr<ResourceArguments> SplitResource(const std::vector<std::string>& arguments);

// The registry's plurals as a sentence: "tfjobs and pytorchjobs" (`conjunction` "and"), for
// messages and help texts.
std::string JobPlurals(const std::string& conjunction);
// The registry's kinds' containers: "tensorflow, pytorch".
std::string ContainerNames();
// The registry's kinds in lower case as alternatives: "tfjob|pytorchjob", for usage lines.
std::string JobTypeChoices(const std::string& separator, bool plural);

// kubectl's -o values cohort prints: name, wide, json, yaml, jsonpath=TEMPLATE.
struct OutputFormat {
  enum class Kind { kTable, kWide, kName, kJson, kYaml, kJsonPath } kind = Kind::kTable;
  std::string jsonpath;  // the template, for kJsonPath
};

// "" is the table. InvalidArgument naming the formats there are otherwise.
StatusOr<OutputFormat> ParseOutputFormat(const std::string& text);

// `object` (a job or pod, or a List of them) as -o json, yaml or jsonpath=TEMPLATE prints it, the
// JSON and YAML with a final newline. InvalidArgument for a template that does not evaluate.
StatusOr<std::string> RenderObject(const OutputFormat& format, const nlohmann::json& object);

// The known command closest to `word` by edit distance, or "" when none is close. Verbs of
// gcloud and kubectl that cohort spells differently map to their counterpart.
std::string ClosestCommand(const std::string& word, const std::vector<std::string>& commands);

// `unknown command "X"` with the closest command, for a first argument that is no command.
std::string UnknownCommandMessage(const std::string& word,
                                  const std::vector<std::string>& commands);

// The job name a file gives when nothing else does: its base name without extension, made a
// job name as jobId would be ("config_ps.yaml" -> "config-ps").
StatusOr<std::string> JobNameFromFileName(const std::string& path);

}  // namespace cohort::view
