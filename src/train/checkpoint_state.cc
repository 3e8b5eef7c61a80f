#include "train/checkpoint_state.h"

#include <filesystem>
#include <sstream>

#include "base/file.h"

namespace cohort::train {

Status WriteCheckpointState(const std::string& dir, const std::vector<std::string>& all) {
  if (all.empty()) return Status::InvalidArgument("a checkpoint state needs a checkpoint");
  std::ostringstream text;
  text << "model_checkpoint_path: \"" << all.back() << "\"\n";
  for (const std::string& name : all) text << "all_model_checkpoint_paths: \"" << name << "\"\n";
  return WriteFileAtomically((std::filesystem::path(dir) / kCheckpointStateFile).string(),
                             text.str());
}

StatusOr<std::optional<std::string>> ReadLatestCheckpoint(const std::string& dir) {
  const std::string path = (std::filesystem::path(dir) / kCheckpointStateFile).string();
  StatusOr<std::string> text = ReadWholeFile(path);
  if (text.status().code() == Status::Code::kNotFound) return std::optional<std::string>();
  if (!text.ok()) return text.status();
  std::istringstream in(*text);
  const std::string key = "model_checkpoint_path:";
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(key, 0) != 0) continue;
    const size_t open = line.find('"', key.size());
    const size_t close = line.rfind('"');
    if (open == std::string::npos || close <= open + 1) break;
    return std::optional<std::string>(line.substr(open + 1, close - open - 1));
  }
  return Status::InvalidArgument(path + ": no model_checkpoint_path \"...\" line");
}

StatusOr<std::vector<std::string>> ReadCheckpointState(const std::string& dir) {
  const std::string path = (std::filesystem::path(dir) / kCheckpointStateFile).string();
  StatusOr<std::string> text = ReadWholeFile(path, size_t{1} << 20);
  if (text.status().code() == Status::Code::kNotFound) return std::vector<std::string>();
  if (!text.ok()) return text.status();
  std::istringstream in(*text);
  const std::string key = "all_model_checkpoint_paths:";
  std::vector<std::string> names;
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(key, 0) != 0) continue;
    const size_t open = line.find('"', key.size());
    const size_t close = line.rfind('"');
    if (open == std::string::npos || close <= open + 1) continue;
    names.push_back(line.substr(open + 1, close - open - 1));
  }
  return names;
}

}  // namespace cohort::train
