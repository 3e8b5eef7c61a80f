// `cohort apply -f FILE [--kubernetes]` (kubectl's apply): creates the job, or says it is
// unchanged; a cluster's job takes a changed spec ("configured"), while a local job keeps the
// spec it was started with and the differences are listed (exit status 2).
#include <iostream>

#include "apps/cohort/commands/command.h"
#include "apps/cohort/commands/commands.h"

namespace cohort::cli {
namespace {

int Apply(const CreateFlags& flags) {
  StatusOr<std::unique_ptr<view::JobClient>> client = ClientFactory(flags.target)();
  if (!client.ok()) return Fail(client.status());
  StatusOr<LoadedJob> loaded =
      LoadJobFor(**client, flags.job_file.file, flags.job_file.options, flags.namespace_flag);
  if (!loaded.ok()) return Fail(loaded.status());
  StatusOr<view::Created> applied = (*client)->Apply(CreateRequestFor(*loaded, flags));
  if (!applied.ok()) return Fail(applied.status());
  std::cout << applied->resource << "/" << applied->key.name;
  switch (applied->outcome) {
    case view::Created::Outcome::kCreated:
      std::cout << " created" << std::endl;
      break;
    case view::Created::Outcome::kConfigured:
      std::cout << " configured\n";
      break;
    case view::Created::Outcome::kUnchanged:
      std::cout << " unchanged\n";
      break;
  }
  return kExitSucceeded;
}

}  // namespace

void AddApplyCommand(CLI::App& app, int& exit_code) {
  auto flags = std::make_shared<CreateFlags>();
  CLI::App* apply = app.add_subcommand(
      "apply", "kubectl apply -f: start a job in the background, or say how it differs");
  apply->add_option("-f,--filename", flags->job_file.file, "the job file (- for standard input)")
      ->required();
  AddJobName(apply, flags->job_file);
  AddCreateFlags(apply, *flags);
  apply->callback([flags, &exit_code] { exit_code = Apply(*flags); });
}

}  // namespace cohort::cli
