// `cohort supervise JOB -n NS --lock-fd FD [--image ...]` (internal): the detached supervisor
// that `submit` starts (exec::LocalJobs::Detach); it adopts the job's supervisor lock, inherited
// across exec, and supervises the job until it finishes.
#include "apps/cohort/commands/command.h"
#include "apps/cohort/commands/commands.h"
#include "exec/job_store.h"
#include "exec/local_jobs.h"

namespace cohort::cli {
namespace {

struct SuperviseFlags {
  std::string name;
  NamespaceFlag namespace_flag;
  std::vector<std::string> image_flags;
  int lock_fd = -1;
};

int Supervise(const SuperviseFlags& flags) {
  exec::LocalJobs jobs(exec::DefaultCohortHome());
  exec::JobKey key{flags.namespace_flag.value, flags.name};
  StatusOr<exec::CreatedJob> adopted = jobs.Adopt(key, flags.lock_fd);
  if (!adopted.ok()) return Fail(kExitError, adopted.status().message());
  StatusOr<exec::ImageMap> images = jobs.LoadImages(flags.image_flags);
  if (!images.ok()) return Fail(kExitInvalidInput, images.status().message());
  StatusOr<job::JobStatus> final_status = jobs.Supervise(std::move(*adopted), *images);
  if (!final_status.ok()) return Fail(kExitError, final_status.status().message());
  return ExitCodeForJob(*final_status);
}

}  // namespace

void AddSuperviseCommand(CLI::App& app, int& exit_code) {
  auto flags = std::make_shared<SuperviseFlags>();
  CLI::App* supervise =
      app.add_subcommand("supervise", "Supervise a submitted job (used by submit)");
  supervise->group("");  // internal
  supervise->add_option("JOB", flags->name)->required();
  AddNamespace(supervise, flags->namespace_flag);
  AddImages(supervise, flags->image_flags);
  supervise->add_option("--lock-fd", flags->lock_fd, "the job's supervisor lock, inherited")
      ->required();
  supervise->callback([flags, &exit_code] { exit_code = Supervise(*flags); });
}

}  // namespace cohort::cli
