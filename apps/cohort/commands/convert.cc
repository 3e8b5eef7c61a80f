// `cohort convert FILE`: prints the job a file amounts to, as `cohort get -o yaml` would show
// its spec: converted from AI Platform's form, or normalised (defaults applied) from a manifest.
#include <iostream>

#include "apps/cohort/commands/command.h"
#include "apps/cohort/commands/commands.h"
#include "job/spec_writer.h"

namespace cohort::cli {
namespace {

struct ConvertFlags {
  JobFileFlags job_file;
  NamespaceFlag namespace_flag;
};

int Convert(const ConvertFlags& flags) {
  StatusOr<LoadedJob> loaded =
      LoadJobFile(flags.job_file.file, flags.job_file.options, flags.namespace_flag.Given());
  if (!loaded.ok()) return Fail(kExitInvalidInput, loaded.status().message());
  PrintWarnings(loaded->warnings);
  std::cout << job::ToYaml(job::ToJson(loaded->job));
  return kExitSucceeded;
}

}  // namespace

void AddConvertCommand(CLI::App& app, int& exit_code) {
  auto flags = std::make_shared<ConvertFlags>();
  CLI::App* convert = app.add_subcommand(
      "convert", "Print the job a file amounts to (an AI Platform job spec, converted)");
  AddJobFile(convert, flags->job_file, "the job");
  AddNamespace(convert, flags->namespace_flag);
  convert->callback([flags, &exit_code] { exit_code = Convert(*flags); });
}

}  // namespace cohort::cli
