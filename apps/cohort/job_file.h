// Reading a job file the way every command does: a manifest of any kind or an AI Platform job spec
// (job/job_file.h), with the operator's defaults and validation, and the warnings a local run
// gives. The path "-" reads standard input, as kubectl's `-f -`, up to the same 4 MiB as a file.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "job/common_types.h"
#include "job/job_file.h"

namespace cohort::cli {

struct LoadedJob {
  job::Job job;
  job::JobFileFormat format = job::JobFileFormat::kManifest;
  // The file's unknown fields, settings that undo each other (job::UnrestoredBackupWarnings)
  // and the fields a local run cannot honour, each once.
  std::vector<std::string> warnings;
};

// Errors name file:line:column and the field path; every error is InvalidArgument (a file that
// is missing or unreadable included: exit status 2, as for a bad spec). `namespace_flag` is `-n`
// when given: the job's namespace when the file leaves it at the default, and an error (as
// kubectl's) when the file names another. An empty `path` with gcloud's submit flags
// (options.ai_platform) is an AI Platform spec of those flags alone, as gcloud submits without
// --config.
StatusOr<LoadedJob> LoadJobFile(const std::string& path, const job::JobFileOptions& options = {},
                                const std::optional<std::string>& namespace_flag = std::nullopt);

}  // namespace cohort::cli
