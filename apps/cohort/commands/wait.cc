// `cohort wait [KIND] NAME [--timeout S] [--kubernetes]`: until the job finishes; prints "NAME
// STATE" and exits as `run` does (0 Succeeded, 1 Failed; 3 when the time runs out).
#include <iostream>

#include "apps/cohort/commands/command.h"
#include "apps/cohort/commands/commands.h"

namespace cohort::cli {
namespace {

struct WaitFlags {
  std::vector<std::string> arguments;  // [KIND] NAME
  NamespaceFlag namespace_flag;
  double timeout_seconds = 3600;
  TargetFlags target;
};

int Wait(const WaitFlags& flags) {
  StatusOr<JobArguments> job = OneJobName(flags.arguments);
  if (!job.ok()) return Fail(kExitInvalidInput, job.status().message());
  StatusOr<std::unique_ptr<view::JobClient>> client = ClientFactory(flags.target)();
  if (!client.ok()) return Fail(client.status());
  exec::JobKey key{(*client)->Namespace(flags.namespace_flag.Given()), job->names.front()};
  StatusOr<job::JobStatus> status = (*client)->Wait(
      key, job->kind,
      std::chrono::milliseconds(static_cast<int64_t>(flags.timeout_seconds * 1000)));
  if (!status.ok()) return Fail(status.status());
  std::cout << key.name << " " << job::JobState(*status) << "\n";
  return ExitCodeForJob(*status);
}

}  // namespace

void AddWaitCommand(CLI::App& app, int& exit_code) {
  auto flags = std::make_shared<WaitFlags>();
  CLI::App* wait = app.add_subcommand("wait", "Wait until a job finishes; exit status as run");
  wait->add_option("JOB", flags->arguments, JobArgumentsHelp(false))->required();
  AddNamespace(wait, flags->namespace_flag);
  wait->add_option("--timeout", flags->timeout_seconds, "seconds to wait at most")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  AddKubernetes(wait, flags->target);
  wait->callback([flags, &exit_code] { exit_code = Wait(*flags); });
}

}  // namespace cohort::cli
