#include "train/checkpoint_manifest.h"

#include <filesystem>
#include <nlohmann/json.hpp>

#include "base/file.h"

namespace cohort::train {
namespace {

using nlohmann::json;

constexpr char kFormat[] = "cohort-checkpoint";
constexpr int kFormatVersion = 1;
// A manifest lists a few files; anything larger is not one.
constexpr size_t kMaxManifestBytes = size_t{1} << 20;

json ToJson(const std::vector<FileChecksum>& files) {
  json list = json::array();
  for (const FileChecksum& file : files) {
    list.push_back({{"file", file.file}, {"size", file.size}, {"sha256", file.sha256}});
  }
  return list;
}

StatusOr<std::vector<FileChecksum>> FromJson(const json& list, const std::string& where) {
  if (!list.is_array() || list.empty()) {
    return Status::InvalidArgument(where + ": \"files\" must be a non-empty list");
  }
  std::vector<FileChecksum> files;
  for (size_t i = 0; i < list.size(); ++i) {
    const json& entry = list[i];
    const std::string at = where + ": files[" + std::to_string(i) + "]";
    if (!entry.is_object() || !entry.contains("file") || !entry["file"].is_string() ||
        !entry.contains("size") || !entry["size"].is_number_unsigned() ||
        !entry.contains("sha256") || !entry["sha256"].is_string()) {
      return Status::InvalidArgument(at +
                                     " must be {\"file\": name, \"size\": bytes, "
                                     "\"sha256\": hex}");
    }
    FileChecksum file{entry["file"].get<std::string>(), entry["size"].get<uint64_t>(),
                      entry["sha256"].get<std::string>()};
    if (file.file.empty() || file.file.find('/') != std::string::npos || file.file == "." ||
        file.file == "..") {
      return Status::InvalidArgument(at + ": \"file\" must name a file in the same directory");
    }
    if (!IsSha256Hex(file.sha256)) {
      return Status::InvalidArgument(at + ": \"sha256\" must be 64 lower-case hex digits");
    }
    files.push_back(std::move(file));
  }
  return files;
}

}  // namespace

std::string CheckpointManifestFile(const std::string& name) { return name + ".manifest.json"; }

Status WriteCheckpointManifest(const std::string& dir, const CheckpointManifest& manifest) {
  const json document = {{"format", kFormat},
                         {"format_version", kFormatVersion},
                         {"name", manifest.name},
                         {"global_step", manifest.global_step},
                         {"files", ToJson(manifest.files)}};
  return WriteFileAtomically(std::filesystem::path(dir) / CheckpointManifestFile(manifest.name),
                             document.dump(2) + "\n");
}

StatusOr<CheckpointManifest> ReadCheckpointManifest(const std::string& dir,
                                                    const std::string& name) {
  const std::string path = (std::filesystem::path(dir) / CheckpointManifestFile(name)).string();
  StatusOr<std::string> text = ReadWholeFile(path, kMaxManifestBytes);
  if (text.status().code() == Status::Code::kNotFound) {
    return Status::NotFound(path +
                            ": no manifest (the checkpoint was cut short, or written "
                            "without checksums)");
  }
  if (!text.ok()) return text.status();
  json document = json::parse(*text, nullptr, /*allow_exceptions=*/false);
  if (!document.is_object()) return Status::InvalidArgument(path + ": not a JSON object");
  if (document.value("format", "") != kFormat || !document.contains("format_version") ||
      document["format_version"] != kFormatVersion) {
    return Status::InvalidArgument(path + ": not a " + std::string(kFormat) + " version " +
                                   std::to_string(kFormatVersion) + " manifest");
  }
  CheckpointManifest manifest;
  if (!document.contains("name") || !document["name"].is_string() ||
      document["name"].get<std::string>() != name) {
    return Status::InvalidArgument(path + ": \"name\" is not \"" + name + "\"");
  }
  manifest.name = name;
  if (!document.contains("global_step") || !document["global_step"].is_number_integer()) {
    return Status::InvalidArgument(path + ": \"global_step\" must be an integer");
  }
  manifest.global_step = document["global_step"].get<int64_t>();
  auto files = FromJson(document.contains("files") ? document["files"] : json(), path);
  if (!files.ok()) return files.status();
  manifest.files = std::move(files).value();
  return manifest;
}

StatusOr<std::string> ReadVerifiedCheckpoint(const std::string& dir, const std::string& name,
                                             CheckpointManifest* manifest_out) {
  auto manifest = ReadCheckpointManifest(dir, name);
  if (!manifest.ok()) return manifest.status();
  std::string first;
  for (size_t i = 0; i < manifest->files.size(); ++i) {
    auto bytes = ReadVerifiedFile(dir, manifest->files[i]);
    if (!bytes.ok()) return bytes.status();
    if (i == 0) first = std::move(bytes).value();
  }
  if (manifest_out) *manifest_out = std::move(manifest).value();
  return first;
}

std::string FileChecksumsToJson(const std::vector<FileChecksum>& files) {
  return ToJson(files).dump();
}

StatusOr<std::vector<FileChecksum>> FileChecksumsFromJson(const std::string& json_text,
                                                          const std::string& where) {
  json list = json::parse(json_text, nullptr, /*allow_exceptions=*/false);
  return FromJson(list, where);
}

}  // namespace cohort::train
