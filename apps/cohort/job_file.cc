#include "apps/cohort/job_file.h"

#include "job/validation.h"

namespace cohort::cli {

StatusOr<LoadedJob> LoadJobFile(const std::string& path, const job::JobFileOptions& options) {
  LoadedJob loaded;
  StatusOr<job::JobFile> file = job::LoadJobFromFile(path, options, &loaded.warnings);
  if (!file.ok()) return file.status();
  loaded.job = std::move(file->job);
  loaded.format = file->format;
  for (std::string& warning : job::LocalRunWarnings(loaded.job)) {
    loaded.warnings.push_back(std::move(warning));
  }
  return loaded;
}

}  // namespace cohort::cli
