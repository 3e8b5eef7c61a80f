#include "apps/cohort/job_file.h"

#include <unistd.h>

#include "job/validation.h"
#include "job/yaml_document.h"

namespace cohort::cli {

StatusOr<LoadedJob> LoadJobFile(const std::string& path, const job::JobFileOptions& options,
                                const std::optional<std::string>& namespace_flag) {
  LoadedJob loaded;
  auto read = [&]() -> StatusOr<job::JobFile> {
    // gcloud's submit line without --config: its flags are the whole spec.
    if (path.empty() && !options.ai_platform.empty()) {
      return job::LoadJobFromText("trainingInput: {}\n", "<command line>", options,
                                  &loaded.warnings);
    }
    if (path != "-") return job::LoadJobFromFile(path, options, &loaded.warnings);
    StatusOr<std::string> text = job::ReadYamlDescriptor(STDIN_FILENO, "<stdin>");
    if (!text.ok()) return text.status();
    return job::LoadJobFromText(*text, "<stdin>", options, &loaded.warnings);
  };
  StatusOr<job::JobFile> file = read();
  if (!file.ok()) {
    // A job file that is missing or cannot be read is as much the user's to fix as a bad one.
    if (file.status().code() == Status::Code::kInvalidArgument) return file.status();
    return Status::InvalidArgument(file.status().message());
  }
  loaded.job = std::move(file->job);
  loaded.format = file->format;
  std::string& namespace_name = loaded.job.metadata.namespace_name;
  if (namespace_flag && *namespace_flag != namespace_name) {
    if (namespace_name != "default") {
      return Status::InvalidArgument("the namespace from the provided object \"" + namespace_name +
                                     "\" does not match the namespace \"" + *namespace_flag +
                                     "\"; you must pass '--namespace=" + namespace_name +
                                     "' to perform this operation");
    }
    namespace_name = *namespace_flag;
  }
  for (std::string& warning : job::UnrestoredBackupWarnings(loaded.job)) {
    loaded.warnings.push_back(std::move(warning));
  }
  for (std::string& warning : job::LocalRunWarnings(loaded.job)) {
    loaded.warnings.push_back(std::move(warning));
  }
  return loaded;
}

}  // namespace cohort::cli
