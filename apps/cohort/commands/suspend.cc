// `cohort suspend [KIND] NAME [--kubernetes]`: sets runPolicy.suspend, so that the job's controller
// stops every replica and keeps the job; a finished job cannot be suspended (exit status 2).
#include <iostream>

#include "apps/cohort/commands/command.h"
#include "apps/cohort/commands/commands.h"

namespace cohort::cli {

int SetSuspended(const SuspendFlags& flags, bool suspended) {
  StatusOr<JobArguments> job = OneJobName(flags.arguments);
  if (!job.ok()) return Fail(kExitInvalidInput, job.status().message());
  StatusOr<std::unique_ptr<view::JobClient>> client = ClientFactory(flags.target)();
  if (!client.ok()) return Fail(client.status());
  exec::JobKey key{(*client)->Namespace(flags.namespace_flag.Given()), job->names.front()};
  StatusOr<std::string> resource = (*client)->SetSuspended(key, job->kind, suspended);
  if (!resource.ok()) return Fail(resource.status());
  std::cout << *resource << "/" << key.name << (suspended ? " suspended" : " resumed") << "\n";
  return kExitSucceeded;
}

void AddSuspendFlags(CLI::App* command, SuspendFlags& flags) {
  command->add_option("JOB", flags.arguments, JobArgumentsHelp(false))->required();
  AddNamespace(command, flags.namespace_flag);
  AddKubernetes(command, flags.target);
}

void AddSuspendCommand(CLI::App& app, int& exit_code) {
  auto flags = std::make_shared<SuspendFlags>();
  CLI::App* suspend = app.add_subcommand(
      "suspend", "Suspend a job: stop its replicas and keep it (runPolicy.suspend: true)");
  AddSuspendFlags(suspend, *flags);
  suspend->callback([flags, &exit_code] { exit_code = SetSuspended(*flags, true); });
}

}  // namespace cohort::cli
