// Reading a job file in any form Cohort accepts, and deciding which form it is by its content.
//
// Every command that takes a file (validate, run, submit, tfconfig, convert) reads it here:
//  - a Kubernetes manifest holding a job of a known kind, a kubeflow.org/v1 TFJob (spec_parser.h),
//    or
//  - a Google AI Platform training job spec, the gcloud --config file or the REST Job object
//    (ai_platform_job.h), which becomes the TFJob it amounts to.
// Either way the result is a Job after the operator's defaults and the webhook's validation,
// so nothing downstream knows which form was written. A file is AI Platform's when its first
// non-empty document has trainingInput and neither kind nor apiVersion; anything else is read
// as a manifest, whose parser explains what is wrong with it.
#pragma once

#include <string>
#include <vector>

#include "base/status.h"
#include "job/ai_platform_job.h"
#include "job/common_types.h"

namespace cohort::job {

enum class JobFileFormat { kManifest, kAiPlatform };

struct JobFileOptions {
  // The name of a job whose file does not give one (an AI Platform spec without jobId), or a
  // name to use instead of its jobId. Empty: the file's own. A manifest names itself, so a name
  // here is an error for one.
  std::string job_name;
  // The name of an AI Platform spec that has no jobId when job_name is empty (gcloud's submit
  // takes it from the file name). Empty: such a spec is an error.
  std::string name_without_job_id;
  // The AI Platform job ID that job_name was made from (ai_platform_job.h's AiPlatformOptions).
  std::string job_id;
  // gcloud's submit flags for an AI Platform spec; an error for a manifest.
  AiPlatformCommandLine ai_platform;
};

struct JobFile {
  Job job;  // defaulted and validated
  JobFileFormat format = JobFileFormat::kManifest;
};

// Reads, converts when needed, defaults and validates. Errors name file:line:column and the
// field path; parser and converter warnings are appended to `warnings` when it is not null.
StatusOr<JobFile> LoadJobFromText(const std::string& text,
                                  const std::string& file_name_for_messages,
                                  const JobFileOptions& options,
                                  std::vector<std::string>* warnings = nullptr);

// LoadJobFromText on the contents of the file at `path` (ReadYamlFile's errors when unreadable).
StatusOr<JobFile> LoadJobFromFile(const std::string& path, const JobFileOptions& options,
                                  std::vector<std::string>* warnings = nullptr);

}  // namespace cohort::job
