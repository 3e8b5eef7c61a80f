#include "exec/job_outputs.h"

#include <algorithm>
#include <map>
#include <string>
#include <system_error>

#include "job/job_kind.h"
#include "job/variable_references.h"

namespace cohort::exec {
namespace {

// Stands for the job's name while an argument is read: no argument holds this byte.
constexpr char kNameMark[] = "\x1f";

// The directory `value` declares (empty when it declares none): the path up to the mark, which
// must be one whole component of an absolute path.
std::filesystem::path DeclaredDirectory(const std::string& value, const std::string& job_name) {
  const size_t mark = value.find(kNameMark);
  if (mark == std::string::npos || mark == 0 || value[0] != '/' || value[mark - 1] != '/') {
    return {};
  }
  const size_t after = mark + 1;
  if (after < value.size() && value[after] != '/') return {};
  const std::string parent = value.substr(0, mark - 1);
  if (parent.empty() || parent.find("$(") != std::string::npos) return {};
  std::filesystem::path directory(parent);
  for (const std::filesystem::path& component : directory) {
    if (component == "." || component == "..") return {};
  }
  return directory.lexically_normal() / job_name;
}

}  // namespace

std::vector<std::filesystem::path> JobOutputDirectories(const job::Job& job) {
  std::vector<std::filesystem::path> directories;
  if (job.job_kind == nullptr || job.metadata.name.empty()) return directories;
  const std::map<std::string, std::string> mark = {{job::kJobNameVariable, kNameMark}};
  for (const auto& [type, spec] : job.replica_specs) {
    const job::Container* container = job.job_kind->MainContainer(spec.template_spec);
    if (container == nullptr) continue;
    std::vector<std::string> words = container->command;
    words.insert(words.end(), container->args.begin(), container->args.end());
    for (const std::string& word : words) {
      const std::string read = job::ExpandVariableReferences(word, mark);
      std::vector<std::string> values = {read};
      if (read.size() > 1 && read[0] == '-' && read.find('=') != std::string::npos) {
        values.push_back(read.substr(read.find('=') + 1));
      }
      for (const std::string& value : values) {
        std::filesystem::path directory = DeclaredDirectory(value, job.metadata.name);
        if (directory.empty()) continue;
        if (std::find(directories.begin(), directories.end(), directory) == directories.end()) {
          directories.push_back(directory);
        }
      }
    }
  }
  return directories;
}

Status RemoveJobOutputs(const std::vector<std::filesystem::path>& directories,
                        const std::function<void(const std::filesystem::path&)>& on_removed) {
  for (const std::filesystem::path& directory : directories) {
    std::error_code error;
    const std::filesystem::file_status status = std::filesystem::symlink_status(directory, error);
    if (!std::filesystem::exists(status)) continue;
    std::filesystem::remove_all(directory, error);
    if (error) {
      return Status::IOError("cannot remove " + directory.string() +
                             ", which the job wrote: " + error.message());
    }
    on_removed(directory);
  }
  return Status::OK();
}

}  // namespace cohort::exec
