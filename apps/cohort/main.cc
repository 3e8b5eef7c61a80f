// cohort: run Kubeflow training job manifests (every kind of job::KindRegistry::Default()) on
// this machine, or on a Kubernetes cluster, kubectl-style.
//
//   cohort run FILE        run a job in the foreground, streaming its replicas' output
//   cohort submit FILE     start it in the background (a detached supervisor) and print its name
//   cohort get / describe / logs / wait / delete / suspend / resume JOB
//   cohort validate FILE... / cohort env FILE --replica master-0 / cohort tfconfig FILE ...
//   cohort convert FILE    print the job a file amounts to (an AI Platform job spec converted)
//   cohort manifests FILE  print the pods, services and PodGroup Kubeflow's operator would create
//   cohort crd             print the CustomResourceDefinitions (deploy/kubernetes/crd.yaml)
//   cohort operator        run jobs on a Kubernetes cluster (kube/operator), until SIGTERM
//   cohort ui              serve the web dashboard of the jobs here, or a cluster's (ui/)
//   cohort serve           serve models for prediction (runs cohort-serve, which links libtorch)
//   kubectl's forms: apply/create/delete -f FILE, get KINDS|pods [NAME] (each kind's plural),
//   logs POD, -o FORMAT, -w
//   gcloud's: cohort ai-platform jobs submit training|list|describe|cancel|stream-logs
//   --kubernetes [--context C] [--kubeconfig F] on submit, apply, create, get, describe, logs,
//   wait, delete, suspend, resume and ui: the same against a cluster's API server
//
// FILE is a manifest of any registered kind or a Google AI Platform training job spec
// (job/job_file.h).
//
// This file only wires: it registers the commands (one file each under commands/, listed in
// commands/commands.h), gives a mistyped command the closest one, parses and returns the exit
// status the command set (exit_codes.h). The commands that read or change jobs are written once
// against view::JobClient (view/job_client.h): view::LocalJobClient over $COHORT_HOME, or with
// --kubernetes kube::KubeJobClient over the cluster's API server (kube/view/kube_job_client.h),
// and print with the read model (view/job_view.h; docs/cli.md lists the forms).
#include <CLI/CLI.hpp>
#include <algorithm>
#include <iostream>

#include "apps/cohort/commands/commands.h"
#include "apps/cohort/exit_codes.h"
#include "base/version.h"
#include "job/job_kind.h"
#include "view/command_line.h"

namespace cohort::cli {

int Main(int argc, char** argv) {
  CLI::App app{"cohort: run Kubeflow " + job::KindRegistry::Default().Names(" and ") +
                   " manifests on this machine, kubectl-style.",
               "cohort"};
  app.require_subcommand(1);
  app.set_version_flag("--version", VersionText("cohort"));
  app.footer(
      "Exit status: 0 success (run/wait: the job Succeeded), 1 the job Failed, 2 invalid input "
      "(spec, flags, name taken, unmapped image), 3 other errors (not found, I/O, wait timed "
      "out).\n"
      "State lives in $COHORT_HOME (default ~/.cohort).");

  int exit_code = kExitSucceeded;
  for (auto add : {AddRunCommand,        AddSubmitCommand, AddApplyCommand,    AddCreateCommand,
                   AddSuperviseCommand,  AddGetCommand,    AddDescribeCommand, AddLogsCommand,
                   AddWaitCommand,       AddDeleteCommand, AddSuspendCommand,  AddResumeCommand,
                   AddValidateCommand,   AddEnvCommand,    AddTfConfigCommand, AddConvertCommand,
                   AddManifestsCommand,  AddUiCommand,     AddCrdCommand,      AddOperatorCommand,
                   AddAiPlatformCommand, AddServeCommand}) {
    add(app, exit_code);
  }

  // A word where a command must be (`cohort X`, `cohort ai-platform jobs X`) that is none gets
  // the closest command of that level.
  std::vector<std::string> given(argv + 1, argv + argc);
  CLI::App* level = &app;
  for (const std::string& word : given) {
    if (word.empty() || word[0] == '-' || level->get_require_subcommand_min() == 0) break;
    std::vector<std::string> commands;
    CLI::App* next = nullptr;
    for (CLI::App* command : level->get_subcommands({})) {
      if (command->get_name() == word) next = command;
      if (!command->get_group().empty()) commands.push_back(command->get_name());
    }
    if (next == nullptr) {
      return Fail(kExitInvalidInput, view::UnknownCommandMessage(word, commands));
    }
    level = next;
  }
  // The words after `--` of a command that takes them as its own (gcloud's trainer arguments).
  if (std::vector<std::string>* destination = ArgumentsAfterSeparatorOf(level)) {
    auto separator = std::find(given.begin(), given.end(), "--");
    if (separator != given.end()) {
      destination->assign(separator + 1, given.end());
      given.erase(separator, given.end());
    }
  }
  given = view::NormalizeArguments(given);
  std::reverse(given.begin(), given.end());  // CLI11 takes them last first
  try {
    app.parse(given);
  } catch (const CLI::ExtrasError&) {
    // CLI11's own message lists the words it did not expect last first, as main gave them; name
    // them in the order typed, with the command they were given to.
    std::string words;
    for (const std::string& word : app.remaining(true)) {
      words += (words.empty() ? "" : " ") + word;
    }
    std::string command;
    for (CLI::App* at = level; at != nullptr && at != &app; at = at->get_parent()) {
      command = at->get_name() + (command.empty() ? "" : " " + command);
    }
    std::string hint =
        "cohort " + (command.empty() ? "" : command + " ") + "--help lists its flags";
    if (ArgumentsAfterSeparatorOf(level) != nullptr) {
      hint += "; the trainer's own arguments go after --";
    }
    return Fail(kExitInvalidInput, (command.empty() ? "cohort" : command) + " does not take " +
                                       words + " (" + hint + ")");
  } catch (const CLI::ParseError& error) {
    int code = app.exit(error);
    return code == 0 ? kExitSucceeded : kExitInvalidInput;
  }
  return exit_code;
}

}  // namespace cohort::cli

int main(int argc, char** argv) { return cohort::cli::Main(argc, argv); }
