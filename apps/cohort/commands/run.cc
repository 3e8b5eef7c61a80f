// `cohort run FILE [--image NAME=COMMAND]...`: runs a job in the foreground on this machine,
// streaming its replicas' output ("[worker-0] LINE"), its conditions and events, until it
// finishes; exits 0 when it Succeeded, 1 when it Failed. Ctrl-C stops it (exec::LocalJobs).
#include <iostream>

#include "apps/cohort/commands/command.h"
#include "apps/cohort/commands/commands.h"
#include "exec/job_store.h"
#include "exec/local_jobs.h"

namespace cohort::cli {
namespace {

struct RunFlags {
  JobFileFlags job_file;
  std::vector<std::string> image_flags;
  NamespaceFlag namespace_flag;
};

void PrintCondition(const exec::JobKey& key, const job::JobCondition& condition) {
  if (condition.status != "True") return;
  std::cout << "cohort: job " << key.ToString() << " is " << condition.type << ": "
            << condition.message << std::endl;
}

void PrintEvent(const job::Event& event) {
  std::cout << "cohort: event " << event.type << " " << event.reason << ": " << event.message
            << std::endl;
}

int Run(const RunFlags& flags) {
  StatusOr<LoadedJob> loaded =
      LoadJobFile(flags.job_file.file, flags.job_file.options, flags.namespace_flag.Given());
  if (!loaded.ok()) return Fail(loaded.status());
  exec::LocalJobs jobs(exec::DefaultCohortHome());
  PrintWarnings(loaded->warnings);
  StatusOr<exec::ImageMap> images = jobs.LoadImages(flags.image_flags);
  if (!images.ok()) return Fail(images.status());
  StatusOr<exec::CreatedJob> created = jobs.Create(loaded->job, *images);
  if (!created.ok()) return Fail(created.status());
  exec::JobKey key = created->key;
  std::cout << "cohort: job " << key.ToString() << " created; logs in "
            << jobs.store().JobDirectory(key) / "logs" << std::endl;
  auto print_line = [](const std::string& replica, const std::string& line) {
    std::cout << "[" << replica << "] " << line << "\n";
  };
  exec::ControllerObserver observer;
  observer.on_condition = [&](const job::JobCondition& condition) {
    PrintCondition(key, condition);
  };
  observer.on_event = PrintEvent;
  observer.on_tick = [] { std::cout.flush(); };
  StatusOr<job::JobStatus> final_status =
      jobs.Supervise(std::move(*created), *images, observer, print_line);
  if (!final_status.ok()) return Fail(kExitError, final_status.status().message());
  std::cout << "cohort: job " << key.ToString() << " " << job::JobState(*final_status) << std::endl;
  return ExitCodeForJob(*final_status);
}

}  // namespace

void AddRunCommand(CLI::App& app, int& exit_code) {
  auto flags = std::make_shared<RunFlags>();
  CLI::App* run =
      app.add_subcommand("run", "Run a job (" + job::KindRegistry::Default().Names(", ") +
                                    ") in the foreground (Ctrl-C stops it)");
  AddJobFile(run, flags->job_file, "the job");
  AddImages(run, flags->image_flags);
  AddNamespace(run, flags->namespace_flag);
  run->callback([flags, &exit_code] { exit_code = Run(*flags); });
}

}  // namespace cohort::cli
