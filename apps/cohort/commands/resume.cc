// `cohort resume JOB [--kubernetes]`: clears runPolicy.suspend; the job's controller starts its
// replicas again.
#include "apps/cohort/commands/command.h"
#include "apps/cohort/commands/commands.h"

namespace cohort::cli {

void AddResumeCommand(CLI::App& app, int& exit_code) {
  auto flags = std::make_shared<SuspendFlags>();
  CLI::App* resume =
      app.add_subcommand("resume", "Resume a suspended job (runPolicy.suspend: false)");
  AddSuspendFlags(resume, *flags);
  resume->callback([flags, &exit_code] { exit_code = SetSuspended(*flags, false); });
}

}  // namespace cohort::cli
