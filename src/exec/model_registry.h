// ModelRegistry: AI Platform's models and versions, kept on this machine under $COHORT_HOME, for
// `cohort ai-platform models|versions` (gcloud's forms).
//
// A model is a name with a description, regions and a default version; a version points at a
// saved model (its deployment URI: the directory a trainer saved, with its manifest.json) and
// records the framework and the model's signature read from that manifest. On disk:
//
//   $COHORT_HOME/models/<model>/model.json               {"name", "description", "regions",
//                                                          "createTime", "defaultVersion"}
//   $COHORT_HOME/models/<model>/versions/<version>.json  {"name", "deploymentUri", "framework",
//                                                          "runtimeVersion", "pythonVersion",
//                                                          "createTime", "signature"}
//
// As the job store does: every file is written whole and atomically (base/file.h), so a reader
// sees the old record or the new one, never a torn one; names are checked before they reach a
// path; every read is bounded (kMaxRecordBytes a file, kMaxModels models, kMaxVersions versions a
// model). A model is created by creating its directory, which only one of two racing creators
// can do. The rules are AI Platform's (docs/behaviour.md §10.3): a model or version name starts
// with a letter and has only letters, digits and '_' (at most 128); a model's first version
// becomes its default; a model with versions cannot be deleted. And Cohort's: the default version
// cannot be deleted while others remain, so that a model never loses its default by accident.
#pragma once

#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "base/time.h"

namespace cohort::exec {

inline constexpr size_t kMaxRecordBytes = 1 << 20;
inline constexpr size_t kMaxModels = 1000;
inline constexpr size_t kMaxVersions = 1000;

struct ModelRecord {
  std::string name;
  std::string description;
  std::vector<std::string> regions;
  Time create_time;
  std::string default_version;  // "" until the first version is created
};

struct VersionRecord {
  std::string name;
  std::string deployment_uri;  // the saved model's directory, absolute
  std::string framework;       // from the manifest ("COHORT"), or --framework
  std::string runtime_version;
  std::string python_version;
  Time create_time;
  // What the model takes and gives, from its manifest: {"model", "inputShape", "classes"}.
  nlohmann::json signature = nlohmann::json::object();
};

// InvalidArgument naming `what` when `name` is not an AI Platform model or version name.
Status CheckModelName(const std::string& name, const std::string& what);

// The version that a saved model at `origin` (a directory holding manifest.json, as cohort-train
// and taxi-train save one) amounts to: its absolute path, framework and signature. InvalidArgument
// naming the origin when it is no such directory or its manifest cannot be read; a URL (gs://...)
// is refused, as this machine has no object storage.
StatusOr<VersionRecord> ReadSavedModelOrigin(const std::string& origin);

class ModelRegistry {
 public:
  // The registry of $COHORT_HOME (exec::DefaultCohortHome()) is ModelRegistry(home / "models").
  explicit ModelRegistry(std::filesystem::path root);

  // AlreadyExists when a model of that name exists; InvalidArgument for a bad name, or when the
  // registry already holds kMaxModels.
  Status CreateModel(const ModelRecord& model);
  StatusOr<ModelRecord> GetModel(const std::string& name) const;  // NotFound when absent
  StatusOr<std::vector<ModelRecord>> ListModels() const;          // by name
  // FailedPrecondition while it has versions (AI Platform's rule; delete them first).
  Status DeleteModel(const std::string& name);

  // Adds `version` to `model` (NotFound when there is no such model; AlreadyExists for a taken
  // version name); the model's first version becomes its default. Returns the model as it is after.
  StatusOr<ModelRecord> CreateVersion(const std::string& model, const VersionRecord& version);
  StatusOr<VersionRecord> GetVersion(const std::string& model, const std::string& version) const;
  StatusOr<std::vector<VersionRecord>> ListVersions(const std::string& model) const;  // by name
  // FailedPrecondition for the default version while the model has others.
  Status DeleteVersion(const std::string& model, const std::string& version);
  Status SetDefaultVersion(const std::string& model, const std::string& version);

 private:
  std::filesystem::path ModelDirectory(const std::string& model) const;
  std::filesystem::path VersionFile(const std::string& model, const std::string& version) const;
  Status WriteModel(const ModelRecord& model);

  std::filesystem::path root_;
};

// The JSON forms gcloud's describe prints (without Google's project path): a model's name,
// description, regions and defaultVersion (the version's record), and a version's name,
// deploymentUri, framework, runtimeVersion, pythonVersion, createTime, state READY, isDefault.
nlohmann::json VersionObject(const VersionRecord& version, bool is_default);
nlohmann::json ModelObject(const ModelRecord& model,
                           const std::optional<VersionRecord>& default_version);

}  // namespace cohort::exec
