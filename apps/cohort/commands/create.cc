// `cohort create -f FILE [--kubernetes]` (kubectl's create): starts the job a file describes in
// the background (locally a detached supervisor, on a cluster an object of its kind for its
// operator) and prints
// "<kind>.kubeflow.org/NAME created". `submit` and `ai-platform jobs submit training` create
// through CreateFromFile too.
#include <iostream>

#include "apps/cohort/commands/command.h"
#include "apps/cohort/commands/commands.h"

namespace cohort::cli {

int CreateFromFile(const CreateFlags& flags,
                   const std::function<void(const view::Created&)>& on_created) {
  StatusOr<std::unique_ptr<view::JobClient>> client = ClientFactory(flags.target)();
  if (!client.ok()) return Fail(client.status());
  StatusOr<LoadedJob> loaded =
      LoadJobFor(**client, flags.job_file.file, flags.job_file.options, flags.namespace_flag);
  if (!loaded.ok()) return Fail(loaded.status());
  StatusOr<view::Created> created = (*client)->Create(CreateRequestFor(*loaded, flags));
  if (!created.ok()) return Fail(created.status());
  on_created(*created);
  std::cout.flush();
  if (!created->note.empty()) std::cerr << "cohort: " << created->note << "\n";
  return kExitSucceeded;
}

view::CreateRequest CreateRequestFor(const LoadedJob& loaded, const CreateFlags& flags) {
  view::CreateRequest request;
  request.job = loaded.job;
  request.local_warnings = loaded.warnings;
  request.on_warning = [](const std::string& warning) { PrintWarnings({warning}); };
  request.image_flags = flags.image_flags;
  return request;
}

void AddCreateFlags(CLI::App* command, CreateFlags& flags) {
  AddImages(command, flags.image_flags);
  AddNamespace(command, flags.namespace_flag);
  AddKubernetes(command, flags.target);
}

void PrintCreated(const view::Created& created) {
  std::cout << created.resource << "/" << created.key.name << " created" << std::endl;
}

void AddCreateCommand(CLI::App& app, int& exit_code) {
  auto flags = std::make_shared<CreateFlags>();
  CLI::App* create =
      app.add_subcommand("create", "kubectl create -f: start a job in the background");
  create->add_option("-f,--filename", flags->job_file.file, "the job file (- for standard input)")
      ->required();
  AddJobName(create, flags->job_file);
  AddCreateFlags(create, *flags);
  create->callback([flags, &exit_code] { exit_code = CreateFromFile(*flags, PrintCreated); });
}

}  // namespace cohort::cli
