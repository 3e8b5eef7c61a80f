#include "view/command_line.h"

#include <algorithm>
#include <filesystem>
#include <map>

#include "base/spelling.h"
#include "job/ai_platform_job.h"
#include "job/spec_writer.h"
#include "view/jsonpath.h"

namespace cohort::view {
namespace {

// A resource type word: which resource, and for a job the kind it names.
struct TypeWord {
  Resource resource = Resource::kNone;
  const job::JobKind* kind = nullptr;
};

TypeWord ResourceOf(const std::string& type) {
  if (type == "pod" || type == "pods" || type == "po") return {Resource::kPod, nullptr};
  if (const job::JobKind* kind = job::KindRegistry::Default().FindByUserName(type)) {
    return {Resource::kJob, kind};
  }
  return {};
}

// Words that name a Kubernetes resource cohort does not have, so that `get deployments` says so
// instead of looking for a job called "deployments".
bool IsOtherResourceType(const std::string& word) {
  static const std::vector<std::string> kTypes = {
      "deployment", "deployments", "deploy",      "service",   "services",   "svc",
      "namespace",  "namespaces",  "ns",          "node",      "nodes",      "job",
      "jobs",       "mpijob",      "mpijobs",     "configmap", "configmaps", "secret",
      "secrets",    "xgboostjob",  "xgboostjobs", "mxjob",     "mxjobs"};
  return std::find(kTypes.begin(), kTypes.end(), word) != kTypes.end();
}

}  // namespace

std::vector<std::string> NormalizeArguments(const std::vector<std::string>& arguments) {
  std::vector<std::string> normalized;
  bool after_separator = false;
  for (const std::string& argument : arguments) {
    if (argument == "--") after_separator = true;
    if (!after_separator && argument.size() > 3 && argument[0] == '-' && argument[1] != '-' &&
        argument[2] == '=') {
      normalized.push_back(argument.substr(0, 2));
      normalized.push_back(argument.substr(3));
    } else {
      normalized.push_back(argument);
    }
  }
  return normalized;
}

std::string JobPlurals(const std::string& conjunction) {
  const std::vector<const job::JobKind*>& kinds = job::KindRegistry::Default().kinds();
  std::string text;
  for (size_t i = 0; i < kinds.size(); ++i) {
    if (i > 0) text += i + 1 == kinds.size() ? " " + conjunction + " " : ", ";
    text += kinds[i]->facts().plural;
  }
  return text;
}

std::string ContainerNames() {
  std::string text;
  for (const job::JobKind* kind : job::KindRegistry::Default().kinds()) {
    text += (text.empty() ? "" : ", ") + kind->facts().container_name;
  }
  return text;
}

std::string JobTypeChoices(const std::string& separator, bool plural) {
  std::string text;
  for (const job::JobKind* kind : job::KindRegistry::Default().kinds()) {
    text += (text.empty() ? "" : separator) +
            (plural ? kind->facts().plural : job::LowerCase(kind->name()));
  }
  return text;
}

StatusOr<ResourceArguments> SplitResource(const std::vector<std::string>& arguments) {
  ResourceArguments result;
  if (arguments.empty()) return result;
  const std::string& first = arguments.front();
  size_t slash = first.find('/');
  if (slash != std::string::npos) {
    TypeWord type = ResourceOf(first.substr(0, slash));
    result.resource = type.resource;
    result.kind = type.kind;
    if (result.resource == Resource::kNone) {
      return Status::InvalidArgument("the server doesn't have a resource type \"" +
                                     first.substr(0, slash) + "\"; cohort has " +
                                     JobPlurals("and") + " and pods");
    }
    for (const std::string& argument : arguments) {
      size_t at = argument.find('/');
      TypeWord of_argument =
          at == std::string::npos ? TypeWord{} : ResourceOf(argument.substr(0, at));
      if (of_argument.resource != result.resource || of_argument.kind != result.kind) {
        return Status::InvalidArgument(
            "there is no need to specify a resource type as a "
            "separate argument when passing arguments in "
            "resource/name form: " +
            argument);
      }
      result.names.push_back(argument.substr(at + 1));
    }
    return result;
  }
  TypeWord type = ResourceOf(first);
  result.resource = type.resource;
  result.kind = type.kind;
  if (result.resource == Resource::kNone) {
    if (IsOtherResourceType(first)) {
      return Status::InvalidArgument("cohort has no resource type \"" + first + "\": it runs " +
                                     JobPlurals("and") + ", whose replicas are shown as pods");
    }
    result.names = arguments;
    return result;
  }
  result.names.assign(arguments.begin() + 1, arguments.end());
  return result;
}

StatusOr<OutputFormat> ParseOutputFormat(const std::string& text) {
  using Kind = OutputFormat::Kind;
  static const std::map<std::string, Kind> kKinds = {{"", Kind::kTable},
                                                     {"wide", Kind::kWide},
                                                     {"name", Kind::kName},
                                                     {"json", Kind::kJson},
                                                     {"yaml", Kind::kYaml}};
  if (auto it = kKinds.find(text); it != kKinds.end()) return OutputFormat{it->second, ""};
  if (text.rfind("jsonpath=", 0) == 0) return OutputFormat{Kind::kJsonPath, text.substr(9)};
  return Status::InvalidArgument("unable to match a printer suitable for the output format \"" +
                                 text +
                                 "\", allowed formats are: json, jsonpath, name, wide, "
                                 "yaml (jsonpath as jsonpath=TEMPLATE)");
}

std::string ClosestCommand(const std::string& word, const std::vector<std::string>& commands) {
  static const std::map<std::string, std::string> kCounterparts = {
      {"list", "get"},         {"ls", "get"},           {"cancel", "suspend"},
      {"stream-logs", "logs"}, {"log", "logs"},         {"rm", "delete"},
      {"stop", "suspend"},     {"start", "submit"},     {"status", "get"},
      {"show", "describe"},    {"jobs", "ai-platform"}, {"training", "ai-platform"}};
  if (auto it = kCounterparts.find(word); it != kCounterparts.end()) {
    if (std::find(commands.begin(), commands.end(), it->second) != commands.end()) {
      return it->second;
    }
  }
  return ClosestWord(word, commands);
}

std::string UnknownCommandMessage(const std::string& word,
                                  const std::vector<std::string>& commands) {
  std::string message = "unknown command \"" + word + "\"";
  std::string closest = ClosestCommand(word, commands);
  if (!closest.empty()) message += "; did you mean \"" + closest + "\"?";
  return message + " (cohort --help lists the commands)";
}

StatusOr<std::string> JobNameFromFileName(const std::string& path) {
  std::string stem = std::filesystem::path(path).stem().string();
  if (path == "-" || stem.empty()) {
    return Status::InvalidArgument(
        "the job has no name: set jobId in the file, or give the name on the command line");
  }
  StatusOr<std::string> name = job::JobNameForJobId(stem);
  if (!name.ok()) {
    return Status::InvalidArgument("the file name " + stem + " does not make a job name (" +
                                   name.status().message() +
                                   "): give the name on the command line");
  }
  return name;
}

StatusOr<std::string> RenderObject(const OutputFormat& format, const nlohmann::json& object) {
  if (format.kind == OutputFormat::Kind::kJsonPath) {
    return EvaluateJsonPath(format.jsonpath, object);
  }
  const bool json = format.kind == OutputFormat::Kind::kJson;
  return (json ? object.dump(4) : job::ToYaml(object)) + "\n";
}

}  // namespace cohort::view
