// `cohort delete [KIND] NAME... | -f FILE [--ignore-not-found] [--purge] [--kubernetes]`: stops
// the jobs' replicas and removes the jobs (on a cluster, propagation Background: the server removes
// the pods and services they own). With --purge (here only), also the directories each job declared
// as its own (exec/job_outputs.h), each printed once removed. Every job is tried; the exit
// status is the first failure's.
#include <iostream>

#include "apps/cohort/commands/command.h"
#include "apps/cohort/commands/commands.h"

namespace cohort::cli {
namespace {

struct DeleteFlags {
  std::vector<std::string> arguments;
  std::string file;
  NamespaceFlag namespace_flag;
  bool ignore_not_found = false;
  bool purge = false;
  TargetFlags target;
};

int Delete(const DeleteFlags& flags) {
  StatusOr<std::unique_ptr<view::JobClient>> client = ClientFactory(flags.target)();
  if (!client.ok()) return Fail(client.status());
  std::vector<std::pair<exec::JobKey, const job::JobKind*>> jobs;
  if (!flags.file.empty()) {
    StatusOr<LoadedJob> loaded = LoadJobFor(**client, flags.file, {}, flags.namespace_flag);
    if (!loaded.ok()) return Fail(kExitInvalidInput, loaded.status().message());
    jobs.push_back(
        {{loaded->job.metadata.namespace_name, loaded->job.metadata.name}, loaded->job.job_kind});
  }
  if (!flags.arguments.empty()) {
    StatusOr<JobArguments> named = JobNames(flags.arguments);
    if (!named.ok()) return Fail(kExitInvalidInput, named.status().message());
    const std::string namespace_name = (*client)->Namespace(flags.namespace_flag.Given());
    for (const std::string& name : named->names) {
      jobs.push_back({{namespace_name, name}, named->kind});
    }
  }
  if (jobs.empty()) return Fail(kExitInvalidInput, "give a job name or -f FILE");
  int exit_code = kExitSucceeded;
  for (const auto& [key, kind] : jobs) {
    std::vector<std::string> removed;
    StatusOr<std::string> deleted =
        flags.purge ? (*client)->DeleteAndPurge(
                          key, kind, [&](const std::string& path) { removed.push_back(path); })
                    : (*client)->Delete(key, kind);
    int result = kExitSucceeded;
    if (deleted.ok()) {
      std::cout << *deleted << " \"" << key.name << "\" deleted\n";
      for (const std::string& path : removed) {
        std::cout << "removed " << path << " (" << key.name << "'s own directory)\n";
      }
    } else if (!(flags.ignore_not_found && deleted.status().code() == Status::Code::kNotFound)) {
      result = Fail(deleted.status());
    }
    if (exit_code == kExitSucceeded) exit_code = result;
  }
  return exit_code;
}

}  // namespace

void AddDeleteCommand(CLI::App& app, int& exit_code) {
  auto flags = std::make_shared<DeleteFlags>();
  CLI::App* remove = app.add_subcommand("delete", "Stop jobs' replicas and remove their state");
  remove->add_option("JOB", flags->arguments, JobArgumentsHelp(true));
  remove->add_option("-f,--filename", flags->file, "the job a file names (- for standard input)");
  AddNamespace(remove, flags->namespace_flag);
  remove->add_flag("--ignore-not-found", flags->ignore_not_found,
                   "succeed if the job does not exist");
  remove->add_flag("--purge", flags->purge,
                   "also remove the directories the job declared as its own: absolute paths in "
                   "its args with $(COHORT_JOB_NAME) as a component (docs/cli.md)");
  AddKubernetes(remove, flags->target);
  remove->callback([flags, &exit_code] { exit_code = Delete(*flags); });
}

}  // namespace cohort::cli
