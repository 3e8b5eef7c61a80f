// `cohort validate FILE...`: checks job files without running them. A valid manifest whose images
// are not mapped here is still valid (for a cluster): each unmapped image is a warning, and so is
// an images file that cannot be read.
#include <iostream>

#include "apps/cohort/commands/command.h"
#include "apps/cohort/commands/commands.h"
#include "exec/job_store.h"
#include "exec/local_jobs.h"

namespace cohort::cli {
namespace {

struct ValidateFlags {
  std::vector<std::string> files;
  JobFileFlags job_file;  // --name
  NamespaceFlag namespace_flag;
  std::vector<std::string> image_flags;
};

// "1 Chief, 2 PS, 3 Worker"
std::string ReplicaSummary(const job::Job& job) {
  std::string replicas;
  for (const auto& [type, spec] : job.replica_specs) {
    replicas += (replicas.empty() ? "" : ", ") + std::to_string(spec.replicas) + " " + type;
  }
  return replicas;
}

int Validate(const ValidateFlags& flags) {
  exec::LocalJobs jobs(exec::DefaultCohortHome());
  StatusOr<exec::ImageMap> images = jobs.LoadImages(flags.image_flags);
  if (!images.ok()) {
    std::cerr << "cohort: warning: images are not checked: " << images.status().message() << "\n";
  }
  int exit_code = kExitSucceeded;
  for (const std::string& file : flags.files) {
    StatusOr<LoadedJob> loaded =
        LoadJobFile(file, flags.job_file.options, flags.namespace_flag.Given());
    if (!loaded.ok()) {
      std::cerr << loaded.status().message() << "\n";
      exit_code = kExitInvalidInput;
      continue;
    }
    PrintWarnings(loaded->warnings);
    if (images.ok()) PrintWarnings(images->UnmappedImageWarnings(loaded->job));
    const std::string& kind = loaded->job.kind;
    std::string as_kind = loaded->format == job::JobFileFormat::kAiPlatform
                              ? "valid AI Platform job spec, as " + kind + " "
                              : "valid " + kind + " ";
    std::cout << file << ": " << as_kind << loaded->job.metadata.namespace_name << "/"
              << loaded->job.metadata.name << " (" << ReplicaSummary(loaded->job) << ")\n";
    if (loaded->format == job::JobFileFormat::kAiPlatform) {
      std::cout << "  (cohort convert " << file << " prints that " << kind << ")\n";
    }
  }
  return exit_code;
}

}  // namespace

void AddValidateCommand(CLI::App& app, int& exit_code) {
  auto flags = std::make_shared<ValidateFlags>();
  CLI::App* validate = app.add_subcommand("validate", "Check job files without running them");
  validate
      ->add_option(
          "FILE", flags->files,
          job::KindRegistry::Default().Names(" or ") + " manifests or AI Platform job specs")
      ->required();
  AddJobName(validate, flags->job_file);
  AddNamespace(validate, flags->namespace_flag);
  AddImages(validate, flags->image_flags);
  validate->callback([flags, &exit_code] { exit_code = Validate(*flags); });
}

}  // namespace cohort::cli
