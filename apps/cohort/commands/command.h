// What every `cohort` command file shares: registering a command on the CLI11 app, the flags
// several commands take (-n, --kubernetes and its connection flags, a job file, --image), opening
// the JobClient (view/job_client.h) the flags name, and failing with the one exit-code mapping
// (apps/cohort/exit_codes.h).
//
// A command file defines `void AddXCommand(CLI::App& app, int& exit_code)` (commands.h lists
// them): it adds its subcommand with flags it owns and a callback that carries the command out
// and sets `exit_code`. Commands that read or change jobs are written once against
// view::JobClient, so that `--kubernetes` only changes which client they get.
#pragma once

#include <CLI/CLI.hpp>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "apps/cohort/exit_codes.h"
#include "apps/cohort/job_file.h"
#include "base/status.h"
#include "job/job_file.h"
#include "kube/view/kube_job_client.h"
#include "view/job_client.h"

namespace cohort::cli {

// Prints "cohort: MESSAGE" on standard error and returns `exit_code`.
int Fail(int exit_code, const std::string& message);
// The same with the status's message and ExitCodeFor(status).
int Fail(const Status& status);

// The words after `--` on the command line, for a command that takes them (the trainer's
// arguments of `ai-platform jobs submit training`, as gcloud takes them). `main` splits them off
// before CLI11 parses the rest, whose reversed "arguments were not expected" would otherwise
// refuse them, and puts them in `destination`; for other commands `--` keeps CLI11's meaning.
void AcceptArgumentsAfterSeparator(const CLI::App* command, std::vector<std::string>* destination);
// For main: where `command` takes the words after `--`, or nullptr when it takes none.
std::vector<std::string>* ArgumentsAfterSeparatorOf(const CLI::App* command);

// -n/--namespace, and whether it was given.
struct NamespaceFlag {
  std::string value = "default";
  CLI::Option* option = nullptr;
  std::optional<std::string> Given() const;
};
void AddNamespace(CLI::App* command, NamespaceFlag& flag,
                  const std::string& help = "the job's namespace");

// --kubernetes [--context C] [--kubeconfig F] [--request-timeout S]: which jobs a command acts
// on, this machine's or a cluster's.
struct TargetFlags {
  bool kubernetes = false;
  std::string context;
  std::string kubeconfig;
  double request_timeout_seconds = 30;
};
// The default help says where: "on the cluster of the kubeconfig's context, as a TFJob or
// PyTorchJob (the job's kind), not on this machine", with the registry's kinds.
void AddKubernetes(CLI::App* command, TargetFlags& flags, const std::string& help = "");
// The local client (of $COHORT_HOME) or, with --kubernetes, the cluster's.
view::JobClientFactory ClientFactory(const TargetFlags& flags);
kube::KubeClientOptions KubeOptions(const TargetFlags& flags);

// A job file argument (FILE), with --name for an AI Platform job spec.
struct JobFileFlags {
  std::string file;
  job::JobFileOptions options;
};
void AddJobFile(CLI::App* command, JobFileFlags& flags, const std::string& what);
void AddJobName(CLI::App* command, JobFileFlags& flags);
void AddImages(CLI::App* command, std::vector<std::string>& image_flags);

// The job file in -n's namespace when given, else the file's; a file that names none (or
// "default", which cannot be told apart) goes to the client's namespace (a cluster context's), as
// kubectl puts it.
StatusOr<LoadedJob> LoadJobFor(const view::JobClient& client, const std::string& file,
                               const job::JobFileOptions& options,
                               const NamespaceFlag& namespace_flag);

// The jobs that `describe`, `delete`, `suspend`... arguments name: NAME..., KIND NAME... or
// KIND/NAME... (KIND as view::SplitResource reads it: pytorchjob, pytorchjobs,
// pytorchjob.kubeflow.org...); InvalidArgument for pods or none.
struct JobArguments {
  const job::JobKind* kind = nullptr;  // null: no type given, any kind
  std::vector<std::string> names;
};
StatusOr<JobArguments> JobNames(const std::vector<std::string>& arguments);
// The same for a command that takes one job.
StatusOr<JobArguments> OneJobName(const std::vector<std::string>& arguments);
// "[tfjob|pytorchjob] NAME...": the usage of a job argument, from the registry.
std::string JobArgumentsHelp(bool several);
// The registry's kinds as "a TFJob or PyTorchJob manifest", for help texts.
std::string ManifestHelp();

// Prints a loaded job's warnings about a local run on standard error.
void PrintWarnings(const std::vector<std::string>& warnings);

}  // namespace cohort::cli
