// `cohort submit FILE [--kubernetes]`: starts the job in the background and prints its name.
#include <iostream>

#include "apps/cohort/commands/command.h"
#include "apps/cohort/commands/commands.h"

namespace cohort::cli {

void AddSubmitCommand(CLI::App& app, int& exit_code) {
  auto flags = std::make_shared<CreateFlags>();
  CLI::App* submit =
      app.add_subcommand("submit", "Start a job (" + job::KindRegistry::Default().Names(", ") +
                                       ") in the background and print its name");
  AddJobFile(submit, flags->job_file, "the job");
  AddCreateFlags(submit, *flags);
  submit->callback([flags, &exit_code] {
    exit_code = CreateFromFile(
        *flags, [](const view::Created& created) { std::cout << created.key.name << std::endl; });
  });
}

}  // namespace cohort::cli
