// `cohort tfconfig FILE --replica worker-1 [--kubernetes]`: the TF_CONFIG a replica would get,
// here (a live job's ports, else ports chosen now) or in a cluster (<job>-worker-1.<ns>.svc:2222):
// the one variable of the environment `cohort env` prints (env.cc), from the same code.
#include <algorithm>
#include <iostream>
#include <optional>

#include "apps/cohort/commands/command.h"
#include "apps/cohort/commands/commands.h"

namespace cohort::cli {
namespace {

constexpr char kTfConfig[] = "TF_CONFIG";

struct TfConfigFlags {
  JobFileFlags job_file;
  NamespaceFlag namespace_flag;
  std::string replica;
  bool kubernetes = false;
};

int TfConfig(const TfConfigFlags& flags) {
  StatusOr<LoadedJob> loaded =
      LoadJobFile(flags.job_file.file, flags.job_file.options, flags.namespace_flag.Given());
  if (!loaded.ok()) return Fail(kExitInvalidInput, loaded.status().message());
  const job::Job& job = loaded->job;
  StatusOr<ReplicaId> replica = FindReplica(job, flags.replica);
  if (!replica.ok()) return Fail(kExitInvalidInput, replica.status().message());
  EnvironmentOptions options;
  options.kubernetes = flags.kubernetes;
  StatusOr<ReplicaVariables> environment = ReplicaEnvironmentOf(job, *replica, options);
  if (!environment.ok()) return Fail(kExitError, environment.status().message());
  if (!environment->live) PrintNotRunning(job);
  const std::vector<std::string> names = job.job_kind->EnvironmentNames();
  if (std::find(names.begin(), names.end(), kTfConfig) == names.end()) {
    std::cerr << "cohort: a " << job.job_kind->name() << "'s replicas get no " << kTfConfig
              << "; `cohort env " << flags.job_file.file << " --replica " << flags.replica
              << "` prints their environment\n";
    return kExitSucceeded;
  }
  // The last value, as a process reads a variable set twice.
  std::optional<std::string> tf_config;
  for (const job::EnvVar& variable : environment->variables) {
    if (variable.name == kTfConfig) tf_config = variable.value;
  }
  if (!tf_config) {
    std::cerr << "cohort: " << job.metadata.name
              << " has a single replica, so it gets no TF_CONFIG (as with the Kubeflow operator)\n";
    return kExitSucceeded;
  }
  std::cout << *tf_config << "\n";
  return kExitSucceeded;
}

}  // namespace

void AddTfConfigCommand(CLI::App& app, int& exit_code) {
  auto flags = std::make_shared<TfConfigFlags>();
  CLI::App* tfconfig = app.add_subcommand("tfconfig", "Print the TF_CONFIG a replica would get");
  AddJobFile(tfconfig, flags->job_file, "the job");
  AddNamespace(tfconfig, flags->namespace_flag);
  tfconfig->add_option("--replica", flags->replica, "e.g. worker-1")->required();
  tfconfig->add_flag("--kubernetes", flags->kubernetes,
                     "the in-cluster form (<job>-worker-1.<ns>.svc:2222)");
  tfconfig->callback([flags, &exit_code] { exit_code = TfConfig(*flags); });
}

}  // namespace cohort::cli
