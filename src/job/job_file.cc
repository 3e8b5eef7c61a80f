#include "job/job_file.h"

#include <utility>

#include "job/ai_platform_job.h"
#include "job/spec_parser.h"
#include "job/yaml_document.h"

namespace cohort::job {
namespace {

// The first document with something in it, or nullptr for a file of empty documents.
const YamlDocument* FirstNonEmptyDocument(const std::vector<YamlDocument>& documents) {
  for (const YamlDocument& document : documents) {
    if (!document.root.is_null()) return &document;
  }
  return nullptr;
}

StatusOr<Job> ParseAiPlatformDocuments(const std::vector<YamlDocument>& documents,
                                       const YamlDocument& job_document,
                                       const std::string& file_name, const JobFileOptions& options,
                                       std::vector<std::string>* warnings) {
  for (const YamlDocument& document : documents) {
    if (&document == &job_document || document.root.is_null()) continue;
    return Status::InvalidArgument(
        file_name + ": an AI Platform job spec is a file of its own, and this one holds " +
        "more documents after it");
  }
  return ConvertAiPlatformJob(job_document, file_name,
                              AiPlatformOptions{options.job_name, options.name_without_job_id,
                                                options.job_id, options.ai_platform},
                              warnings);
}

// The job `text` holds or amounts to, as parsed (not defaulted); `format` says which it was.
StatusOr<Job> ParseEitherForm(const std::string& text, const std::string& file_name,
                              const JobFileOptions& options, JobFileFormat& format,
                              std::vector<std::string>* warnings) {
  StatusOr<std::vector<YamlDocument>> documents = ReadYamlDocuments(text, file_name);
  if (!documents.ok()) return documents.status();
  const YamlDocument* first = FirstNonEmptyDocument(*documents);
  if (first != nullptr && IsAiPlatformJob(*first)) {
    format = JobFileFormat::kAiPlatform;
    return ParseAiPlatformDocuments(*documents, *first, file_name, options, warnings);
  }
  format = JobFileFormat::kManifest;
  if (!options.ai_platform.empty()) {
    return Status::InvalidArgument(
        file_name + ": gcloud's flags (--job-dir, --master-image-uri, arguments after --...) are " +
        "for AI Platform job specs; a " + KindRegistry::Default().Names(" or ") +
        " manifest sets its replicas' images and args itself");
  }
  if (!options.job_name.empty()) {
    return Status::InvalidArgument(file_name + ": --name is for AI Platform job specs; a " +
                                   KindRegistry::Default().Names(" or ") +
                                   " manifest names its job in metadata.name");
  }
  return ParseJob(text, file_name, warnings);
}

}  // namespace

StatusOr<JobFile> LoadJobFromText(const std::string& text,
                                  const std::string& file_name_for_messages,
                                  const JobFileOptions& options,
                                  std::vector<std::string>* warnings) {
  JobFile result;
  StatusOr<Job> job = DefaultAndValidate(
      ParseEitherForm(text, file_name_for_messages, options, result.format, warnings));
  if (!job.ok()) return job.status();
  result.job = std::move(job).value();
  return result;
}

StatusOr<JobFile> LoadJobFromFile(const std::string& path, const JobFileOptions& options,
                                  std::vector<std::string>* warnings) {
  StatusOr<std::string> text = ReadYamlFile(path);
  if (!text.ok()) return text.status();
  return LoadJobFromText(*text, path, options, warnings);
}

}  // namespace cohort::job
