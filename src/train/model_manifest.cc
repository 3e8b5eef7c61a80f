#include "train/model_manifest.h"

#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>

#include "base/file.h"
#include "base/storage.h"
#include "train/checkpoint_manifest.h"

namespace cohort::train {
namespace {

using nlohmann::json;

constexpr char kFormat[] = "cohort-saved-model";
constexpr int kFormatVersion = 2;

// Reads field `key` of `object` as T, or explains which field is missing or mistyped.
template <typename T>
Status Field(const json& object, const std::string& key, const std::string& where, T* out) {
  auto it = object.find(key);
  if (it == object.end()) return Status::InvalidArgument(where + ": missing \"" + key + "\"");
  try {
    *out = it->template get<T>();
  } catch (const json::exception&) {
    return Status::InvalidArgument(where + ": \"" + key + "\" has the wrong type: " + it->dump());
  }
  return Status::OK();
}

}  // namespace

std::string ManifestToJson(const ModelManifest& manifest) {
  const TrainingConfig& t = manifest.training;
  json training = {{"epochs", t.epochs},
                   {"steps_per_epoch", t.steps_per_epoch},
                   {"per_worker_batch", t.per_worker_batch},
                   {"num_workers", t.num_workers},
                   {"global_batch", t.global_batch},
                   {"global_steps", t.global_steps},
                   {"optimizer", t.optimizer},
                   {"learning_rate", t.learning_rate},
                   {"seed", t.seed},
                   {"data_dir", t.data_dir}};
  json document = {{"format", kFormat},
                   {"format_version", kFormatVersion},
                   {"model", manifest.model},
                   {"weights", manifest.weights},
                   {"files", json::parse(FileChecksumsToJson(manifest.files))},
                   {"input_shape", manifest.input_shape},
                   {"classes", manifest.classes},
                   {"metrics", manifest.metrics},
                   {"training", training},
                   {"created_at", manifest.created_at}};
  return document.dump(2) + "\n";
}

StatusOr<ModelManifest> ParseManifest(const std::string& text, const std::string& origin) {
  json document;
  try {
    document = json::parse(text);
  } catch (const json::parse_error& error) {
    return Status::InvalidArgument(origin + ": not valid JSON: " + error.what());
  }
  if (!document.is_object()) return Status::InvalidArgument(origin + ": not a JSON object");
  std::string format;
  int version = 0;
  COHORT_RETURN_IF_ERROR(Field(document, "format", origin, &format));
  COHORT_RETURN_IF_ERROR(Field(document, "format_version", origin, &version));
  if (format == kFormat && version == 1) {
    return Status::InvalidArgument(origin +
                                   ": a format version 1 saved model, written before "
                                   "saved models carried checksums: its weights cannot "
                                   "be verified; save the model again");
  }
  if (format != kFormat || version != kFormatVersion) {
    return Status::InvalidArgument(origin + ": format \"" + format + "\" version " +
                                   std::to_string(version) + " is not " + kFormat + " version " +
                                   std::to_string(kFormatVersion));
  }
  ModelManifest manifest;
  COHORT_RETURN_IF_ERROR(Field(document, "model", origin, &manifest.model));
  COHORT_RETURN_IF_ERROR(Field(document, "weights", origin, &manifest.weights));
  COHORT_RETURN_IF_ERROR(Field(document, "input_shape", origin, &manifest.input_shape));
  COHORT_RETURN_IF_ERROR(Field(document, "classes", origin, &manifest.classes));
  COHORT_RETURN_IF_ERROR(Field(document, "metrics", origin, &manifest.metrics));
  COHORT_RETURN_IF_ERROR(Field(document, "created_at", origin, &manifest.created_at));
  if (manifest.weights.empty() || manifest.weights.find('/') != std::string::npos) {
    return Status::InvalidArgument(origin + ": weights must name a file in the same directory");
  }
  json files;
  COHORT_RETURN_IF_ERROR(Field(document, "files", origin, &files));
  auto listed = FileChecksumsFromJson(files.dump(), origin);
  if (!listed.ok()) return listed.status();
  manifest.files = std::move(listed).value();
  if (manifest.files.front().file != manifest.weights) {
    return Status::InvalidArgument(origin + ": files[0] must be the weights, \"" +
                                   manifest.weights + "\"");
  }
  json training;
  COHORT_RETURN_IF_ERROR(Field(document, "training", origin, &training));
  const std::string where = origin + ": training";
  TrainingConfig& t = manifest.training;
  COHORT_RETURN_IF_ERROR(Field(training, "epochs", where, &t.epochs));
  COHORT_RETURN_IF_ERROR(Field(training, "steps_per_epoch", where, &t.steps_per_epoch));
  COHORT_RETURN_IF_ERROR(Field(training, "per_worker_batch", where, &t.per_worker_batch));
  COHORT_RETURN_IF_ERROR(Field(training, "num_workers", where, &t.num_workers));
  COHORT_RETURN_IF_ERROR(Field(training, "global_batch", where, &t.global_batch));
  COHORT_RETURN_IF_ERROR(Field(training, "global_steps", where, &t.global_steps));
  COHORT_RETURN_IF_ERROR(Field(training, "optimizer", where, &t.optimizer));
  COHORT_RETURN_IF_ERROR(Field(training, "learning_rate", where, &t.learning_rate));
  COHORT_RETURN_IF_ERROR(Field(training, "seed", where, &t.seed));
  COHORT_RETURN_IF_ERROR(Field(training, "data_dir", where, &t.data_dir));
  return manifest;
}

Status WriteManifest(const std::string& dir, const ModelManifest& manifest) {
  const std::string path = JoinStoragePath(dir, kManifestFile);
  for (const auto& [name, value] : manifest.metrics) {
    if (!std::isfinite(value)) {
      return Status::InvalidArgument(path + ": metric \"" + name + "\" is " +
                                     std::to_string(value) +
                                     ", not a finite number; the manifest is not written");
    }
  }
  ModelManifest recorded = manifest;
  if (recorded.files.empty()) {
    StatusOr<std::string> bytes = ReadStorageFile(JoinStoragePath(dir, manifest.weights));
    if (!bytes.ok()) return bytes.status().WithContext("recording the checksum of the weights");
    recorded.files.push_back(ChecksumOf(manifest.weights, *bytes));
  }
  return WriteStorageFileAtomically(path, ManifestToJson(recorded));
}

StatusOr<std::string> ReadVerifiedWeights(const std::string& dir, const ModelManifest& manifest) {
  for (const FileChecksum& file : manifest.files) {
    if (file.file == manifest.weights) return ReadVerifiedFile(dir, file);
  }
  return Status::InvalidArgument(JoinStoragePath(dir, kManifestFile) +
                                 ": \"files\" does not list the weights, \"" + manifest.weights +
                                 "\"");
}

StatusOr<ModelManifest> ReadManifest(const std::string& dir) {
  const std::string path = JoinStoragePath(dir, kManifestFile);
  StatusOr<std::string> text = ReadStorageFile(path);
  if (text.status().code() == Status::Code::kNotFound) {
    return Status::NotFound(path + ": no such file (is " + dir + " a saved model?)");
  }
  if (!text.ok()) return text.status();
  return ParseManifest(*text, path);
}

}  // namespace cohort::train
