#include "exec/image_map.h"

#include <sstream>

#include "base/file.h"
#include "exec/replica_environment.h"

namespace cohort::exec {
namespace {

std::string Trim(const std::string& text) {
  size_t begin = text.find_first_not_of(" \t\r");
  if (begin == std::string::npos) return "";
  size_t end = text.find_last_not_of(" \t\r");
  return text.substr(begin, end - begin + 1);
}

}  // namespace

Status ImageMap::AddFlag(const std::string& flag) {
  size_t equals = flag.find('=');
  if (equals == std::string::npos || equals == 0 || equals + 1 == flag.size()) {
    return Status::InvalidArgument("--image " + flag + ": expected NAME=COMMAND, e.g. --image " +
                                   "tensorflow/tensorflow:2.4=\"python3 train.py\"");
  }
  from_flags_[flag.substr(0, equals)] = flag.substr(equals + 1);
  commands_[flag.substr(0, equals)] = flag.substr(equals + 1);
  return Status::OK();
}

Status ImageMap::LoadFile(const std::filesystem::path& path) {
  StatusOr<std::string> text = ReadWholeFile(path);
  if (text.status().code() == Status::Code::kNotFound) return Status::OK();  // none is fine
  if (!text.ok()) return text.status();
  std::istringstream in(*text);
  std::string line;
  for (int line_number = 1; std::getline(in, line); ++line_number) {
    std::string trimmed = Trim(line);
    if (trimmed.empty() || trimmed[0] == '#') continue;
    size_t equals = trimmed.find('=');
    if (equals == std::string::npos || equals == 0 || equals + 1 == trimmed.size()) {
      return Status::InvalidArgument(path.string() + ":" + std::to_string(line_number) +
                                     ": expected NAME=COMMAND, got \"" + trimmed + "\"");
    }
    std::string image = Trim(trimmed.substr(0, equals));
    if (!from_flags_.count(image)) commands_[image] = Trim(trimmed.substr(equals + 1));
  }
  return Status::OK();
}

StatusOr<std::vector<std::string>> ImageMap::CommandFor(const job::Container& container,
                                                        const std::string& replica) const {
  std::vector<std::string> argv;
  if (!container.command.empty()) {
    argv = container.command;
  } else {
    auto it = commands_.find(container.image);
    if (it == commands_.end()) {
      return Status::NotFound("replica " + replica + ": container \"" + container.name +
                              "\" has no command and image \"" + container.image +
                              "\" is not mapped to one; map it with --image " + container.image +
                              "=COMMAND or a line in $COHORT_HOME/images");
    }
    // sh -c 'exec COMMAND "$@"' image args...: the mapping gets shell syntax, args stay words.
    argv = {"/bin/sh", "-c", "exec " + it->second + " \"$@\"", container.image};
  }
  argv.insert(argv.end(), container.args.begin(), container.args.end());
  return argv;
}

Status ImageMap::CheckJob(const job::Job& job) const {
  for (const auto& [type, spec] : job.replica_specs) {
    StatusOr<const job::Container*> container = ReplicaContainer(job, type);
    if (!container.ok()) continue;  // validation reports it
    StatusOr<std::vector<std::string>> command =
        CommandFor(**container, job::ReplicaName(job.metadata.name, type, 0));
    if (!command.ok()) return command.status();
  }
  return Status::OK();
}

std::string ImageMap::DescribeMapping(const job::Container& container) const {
  if (!container.command.empty()) return "";
  auto it = commands_.find(container.image);
  if (it == commands_.end()) return "";
  return "image " + container.image + " is mapped to '" + it->second + "' by " +
         (from_flags_.count(container.image) ? "--image" : "$COHORT_HOME/images");
}

std::vector<std::string> ImageMap::UnmappedImageWarnings(const job::Job& job) const {
  std::vector<std::string> warnings;
  for (const auto& [type, spec] : job.replica_specs) {
    StatusOr<const job::Container*> container = ReplicaContainer(job, type);
    if (!container.ok() || !(*container)->command.empty()) continue;
    const std::string& image = (*container)->image;
    if (commands_.count(image)) continue;
    const job::SourcePosition& at = (*container)->position;
    const std::string where = at.line > 0 ? job.source_file + ":" + std::to_string(at.line) + ":" +
                                                std::to_string(at.column) + ": "
                                          : "";
    warnings.push_back(where + type + ": image \"" + image +
                       "\" is not mapped to a command, so this job cannot run here as it is " +
                       "(valid for a cluster); map it with --image " + image +
                       "=COMMAND or a line in $COHORT_HOME/images");
  }
  return warnings;
}

}  // namespace cohort::exec
