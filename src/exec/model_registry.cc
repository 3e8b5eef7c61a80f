#include "exec/model_registry.h"

#include <algorithm>
#include <cctype>
#include <system_error>

#include "base/file.h"

namespace cohort::exec {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr size_t kMaxModelNameLength = 128;
constexpr const char* kModelFile = "model.json";
constexpr const char* kVersionsDirectory = "versions";
constexpr const char* kRecordSuffix = ".json";

StatusOr<json> ReadRecord(const fs::path& path) {
  StatusOr<std::string> text = ReadWholeFile(path, kMaxRecordBytes);
  if (!text.ok()) return text.status();
  json record = json::parse(*text, nullptr, /*allow_exceptions=*/false);
  if (!record.is_object()) {
    return Status::IOError(path.string() + ": not a registry record (a JSON object)");
  }
  return record;
}

std::string StringField(const json& record, const char* key) {
  auto found = record.find(key);
  return found != record.end() && found->is_string() ? found->get<std::string>() : "";
}

Time TimeField(const json& record, const char* key) {
  return ParseTime(StringField(record, key)).value_or(Time{});
}

json ModelToJson(const ModelRecord& model) {
  return json{{"name", model.name},
              {"description", model.description},
              {"regions", model.regions},
              {"createTime", FormatTime(model.create_time)},
              {"defaultVersion", model.default_version}};
}

ModelRecord ModelFromJson(const json& record) {
  ModelRecord model;
  model.name = StringField(record, "name");
  model.description = StringField(record, "description");
  if (auto regions = record.find("regions"); regions != record.end() && regions->is_array()) {
    for (const json& region : *regions) {
      if (region.is_string()) model.regions.push_back(region.get<std::string>());
    }
  }
  model.create_time = TimeField(record, "createTime");
  model.default_version = StringField(record, "defaultVersion");
  return model;
}

json VersionToJson(const VersionRecord& version) {
  return json{{"name", version.name},
              {"deploymentUri", version.deployment_uri},
              {"framework", version.framework},
              {"runtimeVersion", version.runtime_version},
              {"pythonVersion", version.python_version},
              {"createTime", FormatTime(version.create_time)},
              {"signature", version.signature}};
}

VersionRecord VersionFromJson(const json& record) {
  VersionRecord version;
  version.name = StringField(record, "name");
  version.deployment_uri = StringField(record, "deploymentUri");
  version.framework = StringField(record, "framework");
  version.runtime_version = StringField(record, "runtimeVersion");
  version.python_version = StringField(record, "pythonVersion");
  version.create_time = TimeField(record, "createTime");
  if (auto signature = record.find("signature");
      signature != record.end() && signature->is_object()) {
    version.signature = *signature;
  }
  return version;
}

// The names of the entries of `directory` that end in `suffix` (without it), or of its
// subdirectories when `suffix` is empty; at most `limit`, else OutOfRange.
StatusOr<std::vector<std::string>> EntryNames(const fs::path& directory, const std::string& suffix,
                                              size_t limit) {
  std::vector<std::string> names;
  std::error_code error;
  fs::directory_iterator entries(directory, error);
  if (error == std::errc::no_such_file_or_directory) return names;
  if (error) return Status::IOError(directory.string() + ": " + error.message());
  for (const fs::directory_entry& entry : entries) {
    std::string name = entry.path().filename().string();
    if (suffix.empty()) {
      if (!entry.is_directory(error)) continue;
    } else {
      if (name.size() <= suffix.size() ||
          name.compare(name.size() - suffix.size(), suffix.size(), suffix) != 0) {
        continue;
      }
      name.resize(name.size() - suffix.size());
    }
    if (!CheckModelName(name, "name").ok()) continue;  // a temporary file, say
    if (names.size() == limit) {
      return Status::OutOfRange(directory.string() + " holds more than " + std::to_string(limit) +
                                " entries");
    }
    names.push_back(name);
  }
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace

Status CheckModelName(const std::string& name, const std::string& what) {
  bool valid = !name.empty() && name.size() <= kMaxModelNameLength &&
               std::isalpha(static_cast<unsigned char>(name[0]));
  for (char c : name) {
    valid = valid && (std::isalnum(static_cast<unsigned char>(c)) || c == '_');
  }
  if (valid) return Status::OK();
  std::string shown = name.size() > 80 ? name.substr(0, 80) + "..." : name;
  return Status::InvalidArgument("invalid " + what + " \"" + shown +
                                 "\": it must start with a letter and have only letters, digits "
                                 "and '_', at most " +
                                 std::to_string(kMaxModelNameLength));
}

StatusOr<VersionRecord> ReadSavedModelOrigin(const std::string& origin) {
  if (origin.find("://") != std::string::npos) {
    return Status::InvalidArgument("--origin " + origin +
                                   ": this machine has no object storage; give the directory "
                                   "the trainer saved the model in");
  }
  std::error_code error;
  fs::path directory = fs::absolute(origin, error).lexically_normal();
  if (error || !fs::is_directory(directory, error)) {
    return Status::InvalidArgument("--origin " + origin + ": not a directory");
  }
  StatusOr<json> manifest = ReadRecord(directory / "manifest.json");
  if (!manifest.ok()) {
    return Status::InvalidArgument("--origin " + origin +
                                   ": no saved model's manifest.json there (" +
                                   manifest.status().message() + ")");
  }
  VersionRecord version;
  version.deployment_uri = directory.string();
  version.framework = StringField(*manifest, "format") == "cohort-saved-model"
                          ? "COHORT"
                          : StringField(*manifest, "format");
  version.signature = json::object();
  version.signature["model"] = StringField(*manifest, "model");
  if (auto shape = manifest->find("input_shape"); shape != manifest->end() && shape->is_array()) {
    version.signature["inputShape"] = *shape;
  }
  if (auto classes = manifest->find("classes"); classes != manifest->end() && classes->is_array()) {
    version.signature["classes"] = classes->size();
  }
  return version;
}

ModelRegistry::ModelRegistry(fs::path root) : root_(std::move(root)) {}

fs::path ModelRegistry::ModelDirectory(const std::string& model) const { return root_ / model; }

fs::path ModelRegistry::VersionFile(const std::string& model, const std::string& version) const {
  return root_ / model / kVersionsDirectory / (version + kRecordSuffix);
}

Status ModelRegistry::WriteModel(const ModelRecord& model) {
  return WriteFileAtomically(ModelDirectory(model.name) / kModelFile, ModelToJson(model).dump(2));
}

Status ModelRegistry::CreateModel(const ModelRecord& model) {
  COHORT_RETURN_IF_ERROR(CheckModelName(model.name, "model name"));
  StatusOr<std::vector<std::string>> existing = EntryNames(root_, "", kMaxModels);
  if (!existing.ok()) return existing.status();
  if (existing->size() >= kMaxModels) {
    return Status::InvalidArgument("the registry holds " + std::to_string(kMaxModels) +
                                   " models, its limit; delete one first");
  }
  std::error_code error;
  fs::create_directories(root_, error);
  if (error) return Status::IOError(root_.string() + ": " + error.message());
  // Only one of two racing creators creates the directory.
  if (!fs::create_directory(ModelDirectory(model.name), error)) {
    if (error) return Status::IOError(ModelDirectory(model.name).string() + ": " + error.message());
    return Status::AlreadyExists("a model named " + model.name + " already exists");
  }
  return WriteModel(model);
}

StatusOr<ModelRecord> ModelRegistry::GetModel(const std::string& name) const {
  COHORT_RETURN_IF_ERROR(CheckModelName(name, "model name"));
  StatusOr<json> record = ReadRecord(ModelDirectory(name) / kModelFile);
  if (record.status().code() == Status::Code::kNotFound) {
    return Status::NotFound("model " + name + " not found (cohort ai-platform models list)");
  }
  if (!record.ok()) return record.status();
  return ModelFromJson(*record);
}

StatusOr<std::vector<ModelRecord>> ModelRegistry::ListModels() const {
  StatusOr<std::vector<std::string>> names = EntryNames(root_, "", kMaxModels);
  if (!names.ok()) return names.status();
  std::vector<ModelRecord> models;
  for (const std::string& name : *names) {
    StatusOr<ModelRecord> model = GetModel(name);
    if (model.status().code() == Status::Code::kNotFound) continue;  // being created
    if (!model.ok()) return model.status();
    models.push_back(std::move(*model));
  }
  return models;
}

Status ModelRegistry::DeleteModel(const std::string& name) {
  StatusOr<ModelRecord> model = GetModel(name);
  if (!model.ok()) return model.status();
  StatusOr<std::vector<std::string>> versions =
      EntryNames(ModelDirectory(name) / kVersionsDirectory, kRecordSuffix, kMaxVersions);
  if (!versions.ok()) return versions.status();
  if (!versions->empty()) {
    return Status::FailedPrecondition("model " + name + " has " + std::to_string(versions->size()) +
                                      " version(s); a model with versions cannot be deleted: "
                                      "delete them first (cohort ai-platform versions delete)");
  }
  std::error_code error;
  fs::remove_all(ModelDirectory(name), error);
  if (error) return Status::IOError(ModelDirectory(name).string() + ": " + error.message());
  return Status::OK();
}

StatusOr<ModelRecord> ModelRegistry::CreateVersion(const std::string& model_name,
                                                   const VersionRecord& version) {
  COHORT_RETURN_IF_ERROR(CheckModelName(version.name, "version name"));
  StatusOr<ModelRecord> model = GetModel(model_name);
  if (!model.ok()) return model.status();
  StatusOr<std::vector<std::string>> versions =
      EntryNames(ModelDirectory(model_name) / kVersionsDirectory, kRecordSuffix, kMaxVersions);
  if (!versions.ok()) return versions.status();
  if (std::find(versions->begin(), versions->end(), version.name) != versions->end()) {
    return Status::AlreadyExists("model " + model_name + " already has a version named " +
                                 version.name);
  }
  if (versions->size() >= kMaxVersions) {
    return Status::InvalidArgument("model " + model_name + " has " + std::to_string(kMaxVersions) +
                                   " versions, its limit; delete one first");
  }
  std::error_code error;
  fs::create_directories(ModelDirectory(model_name) / kVersionsDirectory, error);
  if (error) return Status::IOError(ModelDirectory(model_name).string() + ": " + error.message());
  COHORT_RETURN_IF_ERROR(
      WriteFileAtomically(VersionFile(model_name, version.name), VersionToJson(version).dump(2)));
  if (model->default_version.empty()) {
    model->default_version = version.name;
    COHORT_RETURN_IF_ERROR(WriteModel(*model));
  }
  return model;
}

StatusOr<VersionRecord> ModelRegistry::GetVersion(const std::string& model,
                                                  const std::string& version) const {
  COHORT_RETURN_IF_ERROR(CheckModelName(version, "version name"));
  StatusOr<ModelRecord> found = GetModel(model);
  if (!found.ok()) return found.status();
  StatusOr<json> record = ReadRecord(VersionFile(model, version));
  if (record.status().code() == Status::Code::kNotFound) {
    return Status::NotFound("version " + version + " of model " + model +
                            " not found (cohort ai-platform versions list --model " + model + ")");
  }
  if (!record.ok()) return record.status();
  return VersionFromJson(*record);
}

StatusOr<std::vector<VersionRecord>> ModelRegistry::ListVersions(const std::string& model) const {
  StatusOr<ModelRecord> found = GetModel(model);
  if (!found.ok()) return found.status();
  StatusOr<std::vector<std::string>> names =
      EntryNames(ModelDirectory(model) / kVersionsDirectory, kRecordSuffix, kMaxVersions);
  if (!names.ok()) return names.status();
  std::vector<VersionRecord> versions;
  for (const std::string& name : *names) {
    StatusOr<VersionRecord> version = GetVersion(model, name);
    if (version.status().code() == Status::Code::kNotFound) continue;  // deleted meanwhile
    if (!version.ok()) return version.status();
    versions.push_back(std::move(*version));
  }
  return versions;
}

Status ModelRegistry::DeleteVersion(const std::string& model, const std::string& version) {
  StatusOr<VersionRecord> found = GetVersion(model, version);
  if (!found.ok()) return found.status();
  StatusOr<ModelRecord> owner = GetModel(model);
  if (!owner.ok()) return owner.status();
  StatusOr<std::vector<std::string>> versions =
      EntryNames(ModelDirectory(model) / kVersionsDirectory, kRecordSuffix, kMaxVersions);
  if (!versions.ok()) return versions.status();
  const bool is_default = owner->default_version == version;
  if (is_default && versions->size() > 1) {
    return Status::FailedPrecondition(
        "version " + version + " is the default version of model " + model +
        "; it cannot be deleted while the model has others: make another the default first "
        "(cohort ai-platform versions set-default)");
  }
  std::error_code error;
  fs::remove(VersionFile(model, version), error);
  if (error) return Status::IOError(VersionFile(model, version).string() + ": " + error.message());
  if (is_default) {
    owner->default_version.clear();
    return WriteModel(*owner);
  }
  return Status::OK();
}

Status ModelRegistry::SetDefaultVersion(const std::string& model, const std::string& version) {
  StatusOr<VersionRecord> found = GetVersion(model, version);
  if (!found.ok()) return found.status();
  StatusOr<ModelRecord> owner = GetModel(model);
  if (!owner.ok()) return owner.status();
  owner->default_version = version;
  return WriteModel(*owner);
}

json VersionObject(const VersionRecord& version, bool is_default) {
  json object = {{"name", version.name},
                 {"deploymentUri", version.deployment_uri},
                 {"framework", version.framework},
                 {"createTime", FormatTime(version.create_time)},
                 {"state", "READY"}};
  if (!version.runtime_version.empty()) object["runtimeVersion"] = version.runtime_version;
  if (!version.python_version.empty()) object["pythonVersion"] = version.python_version;
  if (is_default) object["isDefault"] = true;
  if (!version.signature.empty()) object["signature"] = version.signature;
  return object;
}

json ModelObject(const ModelRecord& model, const std::optional<VersionRecord>& default_version) {
  json object = {{"name", model.name}};
  if (!model.description.empty()) object["description"] = model.description;
  if (!model.regions.empty()) object["regions"] = model.regions;
  if (default_version) object["defaultVersion"] = VersionObject(*default_version, true);
  return object;
}

}  // namespace cohort::exec
