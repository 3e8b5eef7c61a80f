#include "job/ai_platform_job.h"

#include <cctype>
#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <utility>

#include "job/spec_parser.h"
#include "job/tfjob.h"

namespace cohort::job {
namespace {

using nlohmann::json;

constexpr const char* kTrainingInput = "trainingInput";
constexpr int64_t kMaxReplicas = std::numeric_limits<int32_t>::max();
// AI Platform's maxRunningTime when a job does not set one: seven days.
constexpr int64_t kDefaultMaxRunningSeconds = 7 * 24 * 60 * 60;
constexpr size_t kMaxDurationDigits = 12;  // about 31,000 years of seconds

// One of AI Platform's four roles: its fields are <prefix>Type, <prefix>Config and (all but the
// master's) <prefix>Count.
struct Role {
  std::string prefix;
  std::string replica_type;  // the TFJob replica type it becomes
  bool is_master = false;
};

std::vector<Role> Roles(bool use_chief) {
  return {{"master", use_chief ? kChief : kMaster, true},
          {"worker", kWorker},
          {"parameterServer", kPS},
          {"evaluator", kEvaluator}};
}

// The workers and parameter servers of a predefined scale tier; nullopt for CUSTOM and for a
// name that is no tier. See the header for where the counts come from.
struct TierSize {
  int32_t workers = 0;
  int32_t parameter_servers = 0;
};
std::optional<TierSize> PredefinedTierSize(const std::string& tier) {
  static const std::map<std::string, TierSize> sizes = {{"BASIC", {0, 0}},
                                                        {"BASIC_GPU", {0, 0}},
                                                        {"BASIC_TPU", {0, 0}},
                                                        {"STANDARD_1", {4, 3}},
                                                        {"PREMIUM_1", {19, 11}}};
  auto found = sizes.find(tier);
  if (found == sizes.end()) return std::nullopt;
  return found->second;
}

constexpr const char* kScaleTierNames =
    "BASIC, STANDARD_1, PREMIUM_1, BASIC_GPU, BASIC_TPU, CUSTOM";

// Fields of a fetched Job that AI Platform sets; meaningless to a new job.
const std::set<std::string>& OutputOnlyJobFields() {
  static const std::set<std::string> fields = {"createTime",     "startTime",    "endTime",
                                               "state",          "errorMessage", "etag",
                                               "trainingOutput", "jobPosition"};
  return fields;
}

const std::set<std::string>& TrainingInputFields() {
  static const std::set<std::string> fields = {"scaleTier",
                                               "masterType",
                                               "masterConfig",
                                               "workerType",
                                               "workerConfig",
                                               "workerCount",
                                               "parameterServerType",
                                               "parameterServerConfig",
                                               "parameterServerCount",
                                               "evaluatorType",
                                               "evaluatorConfig",
                                               "evaluatorCount",
                                               "packageUris",
                                               "pythonModule",
                                               "args",
                                               "hyperparameters",
                                               "region",
                                               "jobDir",
                                               "runtimeVersion",
                                               "pythonVersion",
                                               "encryptionConfig",
                                               "scheduling",
                                               "network",
                                               "serviceAccount",
                                               "useChiefInTfConfig",
                                               "enableWebAccess"};
  return fields;
}

// TrainingInput fields that only mean something to Google's machines, and why a local run
// ignores each.
const std::map<std::string, std::string>& CloudOnlyTrainingInputFields() {
  static const std::map<std::string, std::string> fields = {
      {"region", "every replica runs on this machine"},
      {"runtimeVersion", "the container image decides the TensorFlow version"},
      {"pythonVersion", "the container image decides the Python version"},
      {"network", "replicas talk over loopback"},
      {"serviceAccount", "there are no Google Cloud credentials to act as"},
      {"encryptionConfig", "nothing is written to Google Cloud"},
      {"enableWebAccess", "there is no interactive shell; use cohort logs"}};
  return fields;
}

const std::map<std::string, std::string>& CloudOnlyReplicaConfigFields() {
  static const std::map<std::string, std::string> fields = {
      {"acceleratorConfig", "accelerators are not attached; the replica sees this machine's"},
      {"diskConfig", "replicas share this machine's disks"},
      {"tpuTfVersion", "there are no Cloud TPUs"}};
  return fields;
}

const json* Field(const json& object, const std::string& key) {
  auto found = object.find(key);
  if (found == object.end() || found->is_null()) return nullptr;
  return &*found;
}

bool IsDns1035Character(char c) {
  return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-';
}

// Reads one AI Platform job and writes the TFJob it amounts to, as JSON in the Kubernetes shape,
// together with where each TFJob field came from. Problems are collected, not returned at the
// first, so that a user fixes a spec in one round.
class AiPlatformConverter {
 public:
  AiPlatformConverter(const YamlDocument& document, std::string file_name,
                      AiPlatformOptions options)
      : document_(document), file_name_(std::move(file_name)), options_(std::move(options)) {}

  void Convert() {
    const json& root = document_.root;
    CheckJobFields(root);
    metadata_ = json{{"name", JobName(root)}};
    if (!job_id_.empty() && job_id_ != metadata_["name"].get<std::string>()) {
      metadata_["annotations"][kAiPlatformJobIdAnnotation] = job_id_;
    }
    if (const json* labels = Field(root, "labels")) ReadLabels(*labels);
    const json* training_input = Field(root, kTrainingInput);
    if (training_input == nullptr || !ExpectObject(*training_input, kTrainingInput)) return;
    ConvertTrainingInput(*training_input);
  }

  std::vector<std::string> errors() const { return InDocumentOrder(errors_); }
  std::vector<std::string> warnings() const { return InDocumentOrder(warnings_); }

  json TFJobObject() const {
    json spec = {{"tfReplicaSpecs", replica_specs_}};
    if (!run_policy_.empty()) spec["runPolicy"] = run_policy_;
    return json{{"apiVersion", TFJobKind().api_version()},
                {"kind", TFJobKind().name()},
                {"metadata", metadata_},
                {"spec", spec}};
  }

  // TFJob field path -> where the AI Platform field it came from was written.
  PositionMap TFJobPositions() const { return tfjob_positions_; }

 private:
  // ---- Messages ----

  void Error(const std::string& path, const std::string& message) {
    errors_.push_back(Located(path, message));
  }

  void Warning(const std::string& path, const std::string& message) {
    warnings_.push_back(Located(path, message));
  }

  // "file:line:column: path: message", or "--flag VALUE: message" for a field that a flag of
  // the command line set.
  Diagnostic Located(const std::string& path, const std::string& message) const {
    if (std::optional<std::string> flag = FlagThatSet(path)) {
      return Diagnostic{SourcePosition{}, *flag + ": " + message};
    }
    SourcePosition position = NearestPosition(document_.positions, path);
    return Diagnostic{position, LocatedMessage(file_name_, position, path, message)};
  }

  // The flag (with its value, as typed) that set `path` or a field enclosing it, if one did.
  std::optional<std::string> FlagThatSet(const std::string& path) const {
    for (std::string at = path; !at.empty(); at = ParentPath(at)) {
      auto found = options_.command_line.flag_of_field.find(at);
      if (found == options_.command_line.flag_of_field.end()) continue;
      return found->second;
    }
    return std::nullopt;
  }

  void WarnNotHonoured(const std::string& path, const std::string& reason) {
    Warning(path, "ignored by a local run: " + reason);
  }

  // As for a Kubernetes manifest (spec_parser.cc): a misspelt field the object lacks is an error
  // with a "did you mean", any other unknown key a warning.
  void WarnUnknownFields(const json& object, const std::string& path,
                         const std::set<std::string>& known, const std::string& what) {
    for (const auto& [key, value] : object.items()) {
      if (known.count(key)) continue;
      if (std::string meant = MisspeltField(key, object, known); !meant.empty()) {
        Error(ChildPath(path, key), "not a field of " + what + "; did you mean \"" + meant +
                                        "\"? (as written, the job would run without it)");
        continue;
      }
      Warning(ChildPath(path, key), "not a field of " + what + "; ignored");
    }
  }

  // ---- Typed reads: each records an error and returns nothing when the type is wrong ----

  bool ExpectObject(const json& value, const std::string& path) {
    if (value.is_object()) return true;
    Error(path, "expected a mapping, got " + DescribeValue(value));
    return false;
  }

  std::optional<std::string> ReadString(const json& value, const std::string& path) {
    if (value.is_string()) return value.get<std::string>();
    Error(path, "expected a string, got " + DescribeValue(value));
    return std::nullopt;
  }

  std::optional<bool> ReadBool(const json& value, const std::string& path) {
    if (value.is_boolean()) return value.get<bool>();
    Error(path, "expected true or false, got " + DescribeValue(value));
    return std::nullopt;
  }

  std::optional<std::vector<std::string>> ReadStringList(const json& value,
                                                         const std::string& path) {
    if (!value.is_array()) {
      Error(path, "expected a list of strings, got " + DescribeValue(value));
      return std::nullopt;
    }
    std::vector<std::string> items;
    bool all_strings = true;
    for (size_t i = 0; i < value.size(); ++i) {
      std::optional<std::string> item = ReadString(value[i], IndexPath(path, i));
      if (item) items.push_back(std::move(*item));
      all_strings = all_strings && item.has_value();
    }
    if (!all_strings) return std::nullopt;
    return items;
  }

  // A count is an int64 in the REST API, which proto3's JSON mapping writes as a string ("3");
  // a YAML config usually writes a plain 3. Both are read.
  std::optional<int32_t> ReadCount(const json& value, const std::string& path) {
    std::optional<int64_t> number = CountValue(value);
    if (!number || *number < 0) {
      Error(path, DescribeValue(value) + " must be a non-negative integer");
      return std::nullopt;
    }
    if (*number > kMaxReplicas) {
      Error(path, DescribeValue(value) + " is more than the " + std::to_string(kMaxReplicas) +
                      " replicas a TFJob can have");
      return std::nullopt;
    }
    return static_cast<int32_t>(*number);
  }

  static std::optional<int64_t> CountValue(const json& value) {
    if (value.is_number_unsigned()) {
      uint64_t number = value.get<uint64_t>();
      return number > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())
                 ? std::numeric_limits<int64_t>::max()
                 : static_cast<int64_t>(number);
    }
    if (value.is_number_integer()) return value.get<int64_t>();
    if (!value.is_string()) return std::nullopt;
    const std::string text = value.get<std::string>();
    bool negative = !text.empty() && text[0] == '-';
    std::string digits = negative ? text.substr(1) : text;
    if (digits.empty() || digits.size() > 18) return std::nullopt;
    for (char c : digits) {
      if (!std::isdigit(static_cast<unsigned char>(c))) return std::nullopt;
    }
    int64_t number = std::stoll(digits);
    return negative ? -number : number;
  }

  // A google.protobuf.Duration in its JSON form, "7200s" or "1.5s", rounded up to whole seconds.
  std::optional<int64_t> ReadDurationSeconds(const json& value, const std::string& path) {
    std::optional<std::string> text = ReadString(value, path);
    if (!text) return std::nullopt;
    std::optional<int64_t> seconds = DurationSeconds(*text);
    if (!seconds) {
      Error(path, DescribeValue(value) + " is not a duration in seconds such as \"7200s\"");
    }
    return seconds;
  }

  static std::optional<int64_t> DurationSeconds(const std::string& text) {
    if (text.size() < 2 || text.back() != 's') return std::nullopt;
    std::string number = text.substr(0, text.size() - 1);
    size_t point = number.find('.');
    std::string whole = number.substr(0, point);
    std::string fraction = point == std::string::npos ? "" : number.substr(point + 1);
    if (whole.empty() || whole.size() > kMaxDurationDigits) return std::nullopt;
    if (point != std::string::npos && (fraction.empty() || fraction.size() > 9)) {
      return std::nullopt;
    }
    for (char c : whole + fraction) {
      if (!std::isdigit(static_cast<unsigned char>(c))) return std::nullopt;
    }
    bool has_fraction = fraction.find_first_not_of('0') != std::string::npos;
    return std::stoll(whole) + (has_fraction ? 1 : 0);
  }

  // ---- Positions of the TFJob's fields ----

  void MapPosition(const std::string& tfjob_path, const std::string& source_path) {
    auto found = document_.positions.find(source_path);
    if (found != document_.positions.end()) tfjob_positions_[tfjob_path] = found->second;
  }

  // ---- The Job ----

  void CheckJobFields(const json& root) {
    for (const auto& [key, value] : root.items()) {
      if (key == "jobId" || key == "labels" || key == kTrainingInput) continue;
      if (OutputOnlyJobFields().count(key)) continue;
      if (key == "predictionInput") {
        Error(key, "a batch prediction job; cohort runs training jobs (trainingInput) only");
        continue;
      }
      Warning(key, "not a field of an AI Platform Job; ignored");
    }
  }

  // The TFJob's name; keeps the job ID it came from in job_id_.
  std::string JobName(const json& root) {
    if (!options_.job_name.empty()) {
      job_id_ = options_.job_id;
      return options_.job_name;
    }
    const json* job_id = Field(root, "jobId");
    if (job_id == nullptr && !options_.name_without_job_id.empty()) {
      return options_.name_without_job_id;
    }
    if (job_id == nullptr) {
      Error("", "the job has no name: set jobId, or pass --name NAME");
      return "";
    }
    std::optional<std::string> text = ReadString(*job_id, "jobId");
    if (!text) return "";
    job_id_ = *text;
    StatusOr<std::string> name = JobNameForJobId(*text);
    if (!name.ok()) {
      Error("jobId", DescribeValue(*job_id) + " cannot be a TFJob's name: " +
                         name.status().message() + "; pass --name NAME");
      return "";
    }
    MapPosition("metadata.name", "jobId");
    return *name;
  }

  void ReadLabels(const json& labels) {
    if (!ExpectObject(labels, "labels")) return;
    json converted = json::object();
    for (const auto& [key, value] : labels.items()) {
      if (std::optional<std::string> text = ReadString(value, ChildPath("labels", key))) {
        converted[key] = *text;
        MapPosition(ChildPath("metadata.labels", key), ChildPath("labels", key));
      }
    }
    metadata_["labels"] = converted;
    MapPosition("metadata.labels", "labels");
  }

  // ---- TrainingInput ----

  void ConvertTrainingInput(const json& input) {
    const std::string path = kTrainingInput;
    WarnUnknownFields(input, path, TrainingInputFields(), "AI Platform's TrainingInput");
    WarnCloudOnlyFields(input);
    RefuseWhatCannotRunLocally(input);
    bool use_chief = false;
    if (const json* flag = Field(input, "useChiefInTfConfig")) {
      use_chief = ReadBool(*flag, ChildPath(path, "useChiefInTfConfig")).value_or(false);
    }
    std::map<std::string, int32_t> counts = ReplicaCounts(input);
    std::vector<std::string> args = TrainingArgs(input);
    std::string master_image = MasterImage(input);
    MapPosition("spec", path);
    MapPosition("spec.tfReplicaSpecs", ChildPath(path, "scaleTier"));
    for (const Role& role : Roles(use_chief)) {
      int32_t count = role.is_master ? 1 : counts[role.prefix];
      if (count == 0) continue;
      replica_specs_[role.replica_type] = ReplicaSpecObject(input, role, count, master_image, args);
    }
    if (counts["evaluator"] > 0) {
      // AI Platform's TF_CONFIG cluster never lists the evaluator.
      metadata_["annotations"][kEvaluatorInClusterAnnotation] = "false";
    }
    ConvertScheduling(input);
  }

  void WarnCloudOnlyFields(const json& input) {
    for (const auto& [field, reason] : CloudOnlyTrainingInputFields()) {
      if (Field(input, field) != nullptr) WarnNotHonoured(ChildPath(kTrainingInput, field), reason);
    }
    for (const Role& role : Roles(false)) {
      std::string type_field = role.prefix + "Type";
      if (Field(input, type_field) != nullptr) {
        WarnNotHonoured(ChildPath(kTrainingInput, type_field),
                        "machine types are not emulated; every replica is a process on this "
                        "machine");
      }
    }
  }

  void RefuseWhatCannotRunLocally(const json& input) {
    if (Field(input, "hyperparameters") != nullptr) {
      Error(ChildPath(kTrainingInput, "hyperparameters"),
            "hyperparameter tuning runs many trials of a job; a local run runs one job: remove "
            "it, or run one trial's values as args");
    }
  }

  // Replicas per role other than the master, from the scale tier or, with CUSTOM, the *Count
  // fields.
  std::map<std::string, int32_t> ReplicaCounts(const json& input) {
    const std::string tier_path = ChildPath(kTrainingInput, "scaleTier");
    std::string tier = "BASIC";
    if (const json* value = Field(input, "scaleTier")) {
      tier = ReadString(*value, tier_path).value_or(tier);
    }
    std::optional<TierSize> predefined = PredefinedTierSize(tier);
    if (!predefined && tier != "CUSTOM") {
      Error(tier_path,
            DescribeValue(json(tier)) + " is not one of " + std::string(kScaleTierNames));
      return {};
    }
    if (predefined) {
      RefuseCountsWithPredefinedTier(input, tier);
      if (tier == "BASIC_GPU" || tier == "BASIC_TPU") {
        WarnNotHonoured(tier_path,
                        "its accelerator is not attached; the master runs as one "
                        "process with this machine's devices");
      }
      return {{"worker", predefined->workers},
              {"parameterServer", predefined->parameter_servers},
              {"evaluator", 0}};
    }
    return CustomCounts(input);
  }

  void RefuseCountsWithPredefinedTier(const json& input, const std::string& tier) {
    for (const Role& role : Roles(false)) {
      if (role.is_master) continue;
      std::string count_field = role.prefix + "Count";
      if (Field(input, count_field) == nullptr) continue;
      Error(ChildPath(kTrainingInput, count_field),
            "only scaleTier CUSTOM takes counts; scaleTier " + tier +
                " decides the cluster by itself");
    }
  }

  std::map<std::string, int32_t> CustomCounts(const json& input) {
    if (Field(input, "masterType") == nullptr) {
      Error(ChildPath(kTrainingInput, "masterType"),
            "is required with scaleTier CUSTOM, as AI Platform requires it (a local run does "
            "not use its value)");
    }
    std::map<std::string, int32_t> counts;
    for (const Role& role : Roles(false)) {
      if (role.is_master) continue;
      std::string count_path = ChildPath(kTrainingInput, role.prefix + "Count");
      const json* value = Field(input, role.prefix + "Count");
      counts[role.prefix] = value == nullptr ? 0 : ReadCount(*value, count_path).value_or(0);
      if (counts[role.prefix] > 0 && Field(input, role.prefix + "Type") == nullptr) {
        Error(ChildPath(kTrainingInput, role.prefix + "Type"),
              "is required when " + role.prefix +
                  "Count is above 0, as AI Platform requires "
                  "it (a local run does not use its value)");
      }
    }
    return counts;
  }

  // trainingInput.args, then --job-dir=<jobDir> as AI Platform passes it. Records where each
  // was written (training_arg_paths_), so that a message about an argument points at it. A
  // Cloud Storage jobDir gets the local run's warning about storage URLs (validation.h).
  std::vector<std::string> TrainingArgs(const json& input) {
    std::vector<std::string> args;
    const std::string args_path = ChildPath(kTrainingInput, "args");
    if (const json* value = Field(input, "args")) {
      args = ReadStringList(*value, args_path).value_or(args);
    }
    for (size_t k = 0; k < args.size(); ++k) training_arg_paths_.push_back(IndexPath(args_path, k));
    for (const std::string& user_arg : options_.command_line.user_args) {
      args.push_back(user_arg);
      training_arg_paths_.push_back(args_path);
    }
    if (const json* job_dir = Field(input, "jobDir")) {
      std::string path = ChildPath(kTrainingInput, "jobDir");
      if (std::optional<std::string> directory = ReadString(*job_dir, path)) {
        args.push_back("--job-dir=" + *directory);
        training_arg_paths_.push_back(path);
      }
    }
    return args;
  }

  // For pythonModule: the image mapping that runs the module where the code is.
  static std::string ModuleMappingHint(const json& input, const std::string& field) {
    const json* module = Field(input, "pythonModule");
    if (field != "pythonModule" || module == nullptr || !module->is_string()) return "";
    return "; e.g. imageUri: trainer, run with --image 'trainer=python3 -m " +
           module->get<std::string>() + "' from the directory holding the package";
  }

  // gcloud's --module-name and --package-path without --master-image-uri: a Python package for
  // AI Platform's runtime, which is not here. One message says what would run it instead; false
  // when the package did not come from those flags.
  bool PackageFromCommandLine(const json& input) {
    const std::string module_path = ChildPath(kTrainingInput, "pythonModule");
    const std::string package_path = ChildPath(kTrainingInput, "packageUris");
    const bool module_flag = FlagThatSet(module_path).has_value();
    const bool package_flag = FlagThatSet(package_path).has_value();
    if (!module_flag && !package_flag) return false;
    const json* module = Field(input, "pythonModule");
    const json* packages = Field(input, "packageUris");
    std::string module_name =
        module != nullptr && module->is_string() ? module->get<std::string>() : "MODULE";
    std::string runtime;
    for (const auto& [field, words] :
         {std::pair{"runtimeVersion", "runtime version "}, std::pair{"pythonVersion", "Python "}}) {
      const json* value = Field(input, field);
      if (value == nullptr || !value->is_string()) continue;
      runtime += (runtime.empty() ? " (" : ", ") + std::string(words) + value->get<std::string>();
    }
    if (!runtime.empty()) runtime += ")";
    std::string directory = "the directory that holds the package";
    if (packages != nullptr && packages->is_array() && packages->size() == 1 &&
        (*packages)[0].is_string()) {
      directory = "the directory above " + (*packages)[0].get<std::string>();
    }
    Error(module_flag ? module_path : package_path,
          "a Python package runs on AI Platform's runtime" + runtime +
              ", and this machine has no such runtime to run it: name an image for the trainer "
              "with --master-image-uri and map it to a command with --image, e.g. "
              "--master-image-uri trainer --image 'trainer=python3 -m " +
              module_name + "' run from " + directory);
    return true;
  }

  // The master's container image; the other roles fall back to it. A Python package for AI
  // Platform's runtime images cannot stand in for one.
  std::string MasterImage(const json& input) {
    const std::string image_path = ChildPath(ChildPath(kTrainingInput, "masterConfig"), "imageUri");
    const json* image = nullptr;
    if (const json* config = Field(input, "masterConfig");
        config != nullptr && config->is_object()) {
      image = Field(*config, "imageUri");
    }
    bool has_package = false;
    if (image == nullptr && PackageFromCommandLine(input)) return "";
    for (const char* field : {"packageUris", "pythonModule"}) {
      if (Field(input, field) == nullptr) continue;
      has_package = true;
      std::string path = ChildPath(kTrainingInput, field);
      if (image == nullptr) {
        Error(path,
              "runs Python code on AI Platform's runtime images, which a local run does not "
              "have: build a container image with the code and set " +
                  image_path + " (then map it with --image)" + ModuleMappingHint(input, field));
      } else {
        Warning(path, "ignored: the container image " + image_path + " runs instead");
      }
    }
    if (image == nullptr && !has_package) {
      Error(image_path,
            "is required: a local run runs a container image (mapped to a command "
            "with --image)");
    }
    // A wrong type is reported where masterConfig is read (ReadReplicaConfig).
    return image != nullptr && image->is_string() ? image->get<std::string>() : "";
  }

  json ReplicaSpecObject(const json& input, const Role& role, int32_t count,
                         const std::string& master_image, const std::vector<std::string>& args) {
    const std::string config_path = ChildPath(kTrainingInput, role.prefix + "Config");
    const std::string tfjob_path = ChildPath("spec.tfReplicaSpecs", role.replica_type);
    const std::string container_path = tfjob_path + ".template.spec.containers[0]";
    json container = {{"name", TFJobKind().facts().container_name}, {"image", master_image}};
    if (!args.empty()) container["args"] = args;
    MapPosition(container_path + ".image",
                ChildPath(ChildPath(kTrainingInput, "masterConfig"), "imageUri"));
    MapPosition(container_path + ".args", ChildPath(kTrainingInput, "args"));
    for (size_t k = 0; k < training_arg_paths_.size(); ++k) {
      MapPosition(IndexPath(container_path + ".args", k), training_arg_paths_[k]);
    }
    if (const json* config = Field(input, role.prefix + "Config")) {
      ReadReplicaConfig(*config, config_path, container, container_path);
    }
    std::string count_path = ChildPath(kTrainingInput, role.prefix + "Count");
    MapPosition(tfjob_path, role.is_master ? config_path : count_path);
    MapPosition(tfjob_path + ".replicas", count_path);
    return json{{"replicas", count},
                {"restartPolicy", "ExitCode"},
                {"template", {{"spec", {{"containers", json::array({container})}}}}}};
  }

  // <role>Config: the image, command and args of the role's container; the rest is Google's.
  void ReadReplicaConfig(const json& config, const std::string& path, json& container,
                         const std::string& container_path) {
    if (!ExpectObject(config, path)) return;
    std::set<std::string> known = {"imageUri", "containerCommand", "containerArgs"};
    for (const auto& [field, reason] : CloudOnlyReplicaConfigFields()) known.insert(field);
    WarnUnknownFields(config, path, known, "AI Platform's ReplicaConfig");
    for (const auto& [field, reason] : CloudOnlyReplicaConfigFields()) {
      if (Field(config, field) != nullptr) WarnNotHonoured(ChildPath(path, field), reason);
    }
    MapPosition(container_path, path);
    if (const json* image = Field(config, "imageUri")) {
      if (std::optional<std::string> text = ReadString(*image, ChildPath(path, "imageUri"))) {
        container["image"] = *text;
        MapPosition(container_path + ".image", ChildPath(path, "imageUri"));
      }
    }
    if (const json* command = Field(config, "containerCommand")) {
      std::string command_path = ChildPath(path, "containerCommand");
      if (std::optional<std::vector<std::string>> list = ReadStringList(*command, command_path)) {
        container["command"] = *list;
        MapPosition(container_path + ".command", command_path);
        for (size_t k = 0; k < list->size(); ++k) {
          MapPosition(IndexPath(container_path + ".command", k), IndexPath(command_path, k));
        }
      }
    }
    if (const json* args = Field(config, "containerArgs")) {
      std::string args_path = ChildPath(path, "containerArgs");
      if (std::optional<std::vector<std::string>> list = ReadStringList(*args, args_path)) {
        container["args"] = *list;
        // These replace trainingInput.args, and so do their positions.
        for (size_t k = 0; k < training_arg_paths_.size(); ++k) {
          tfjob_positions_.erase(IndexPath(container_path + ".args", k));
        }
        MapPosition(container_path + ".args", args_path);
        for (size_t k = 0; k < list->size(); ++k) {
          MapPosition(IndexPath(container_path + ".args", k), IndexPath(args_path, k));
        }
      }
    }
  }

  // scheduling.maxRunningTime -> runPolicy.activeDeadlineSeconds (seven days when unset, as on
  // AI Platform); the queueing fields mean nothing locally.
  void ConvertScheduling(const json& input) {
    const std::string path = ChildPath(kTrainingInput, "scheduling");
    int64_t deadline = kDefaultMaxRunningSeconds;
    const json* scheduling = Field(input, "scheduling");
    if (scheduling != nullptr && ExpectObject(*scheduling, path)) {
      WarnUnknownFields(*scheduling, path, {"maxRunningTime", "maxWaitTime", "priority"},
                        "AI Platform's Scheduling");
      if (Field(*scheduling, "maxWaitTime") != nullptr) {
        WarnNotHonoured(ChildPath(path, "maxWaitTime"),
                        "there is no queue; the job starts at once");
      }
      if (Field(*scheduling, "priority") != nullptr) {
        WarnNotHonoured(ChildPath(path, "priority"), "there is no queue; the job starts at once");
      }
      if (const json* limit = Field(*scheduling, "maxRunningTime")) {
        std::string limit_path = ChildPath(path, "maxRunningTime");
        deadline = ReadDurationSeconds(*limit, limit_path).value_or(deadline);
        MapPosition("spec.runPolicy.activeDeadlineSeconds", limit_path);
      }
    }
    run_policy_["activeDeadlineSeconds"] = deadline;
    run_policy_["backoffLimit"] = kAiPlatformBackoffLimit;
    MapPosition("spec.runPolicy", path);
  }

  const YamlDocument& document_;
  std::string file_name_;
  AiPlatformOptions options_;
  std::vector<Diagnostic> errors_;
  std::vector<Diagnostic> warnings_;
  json metadata_ = json::object();
  json replica_specs_ = json::object();
  json run_policy_ = json::object();
  PositionMap tfjob_positions_;
  std::vector<std::string> training_arg_paths_;  // where each of TrainingArgs was written
  std::string job_id_;                           // the AI Platform ID the name came from
};

// `document` with the command line's trainingInput fields in place of the file's: a field a flag
// sets replaces the file's, except that a ReplicaConfig (masterConfig...) keeps its other keys.
YamlDocument WithCommandLine(const YamlDocument& document, const AiPlatformCommandLine& flags) {
  YamlDocument merged = document;
  if (flags.training_input.empty()) return merged;
  if (!merged.root.is_object()) return merged;  // the converter reports the document's type
  json& input = merged.root[kTrainingInput];
  if (!input.is_object()) return merged;  // reported at the file's trainingInput
  for (const auto& [field, value] : flags.training_input.items()) {
    if (value.is_object() && input.contains(field) && input[field].is_object()) {
      for (const auto& [key, inner] : value.items()) input[field][key] = inner;
    } else {
      input[field] = value;
    }
  }
  return merged;
}

}  // namespace

bool IsAiPlatformJob(const YamlDocument& document) {
  const json& root = document.root;
  return root.is_object() && root.contains(kTrainingInput) && !root.contains("kind") &&
         !root.contains("apiVersion");
}

std::string AiPlatformJobId(const Job& job) {
  auto found = job.metadata.annotations.find(kAiPlatformJobIdAnnotation);
  if (found != job.metadata.annotations.end() && !found->second.empty()) return found->second;
  return job.metadata.name;
}

StatusOr<std::string> JobNameForJobId(const std::string& job_id) {
  std::string name;
  for (char c : job_id) {
    char lower = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    name += (lower == '_' || lower == '.') ? '-' : lower;
  }
  if (name.empty()) return Status::InvalidArgument("it is empty");
  for (char c : name) {
    if (!IsDns1035Character(c)) {
      return Status::InvalidArgument("it has '" + std::string(1, c) +
                                     "', and a TFJob's name has only letters, digits and '-'");
    }
  }
  if (!(name.front() >= 'a' && name.front() <= 'z')) {
    return Status::InvalidArgument("a TFJob's name starts with a letter");
  }
  if (name.back() == '-')
    return Status::InvalidArgument("a TFJob's name ends with a letter or digit");
  if (name.size() > 63) {
    return Status::InvalidArgument("a TFJob's name has at most 63 characters, and this has " +
                                   std::to_string(name.size()));
  }
  return name;
}

StatusOr<Job> ConvertAiPlatformJob(const YamlDocument& document,
                                   const std::string& file_name_for_messages,
                                   const AiPlatformOptions& options,
                                   std::vector<std::string>* warnings) {
  const YamlDocument merged = WithCommandLine(document, options.command_line);
  AiPlatformConverter converter(merged, file_name_for_messages, options);
  converter.Convert();
  if (warnings != nullptr) {
    std::vector<std::string> found = converter.warnings();
    warnings->insert(warnings->end(), found.begin(), found.end());
  }
  std::vector<std::string> errors = converter.errors();
  if (!errors.empty()) return Status::InvalidArgument(JoinMessages(errors));
  static const KindRegistry tfjob_only({&TFJobKind()});
  return DecodeJob(converter.TFJobObject(), converter.TFJobPositions(), file_name_for_messages,
                   warnings, tfjob_only);
}

}  // namespace cohort::job
