// `cohort tfconfig FILE --replica worker-1 [--kubernetes]`: the TF_CONFIG a replica would get,
// here (a live job's ports, else ports chosen now) or in a cluster (<job>-worker-1.<ns>.svc:2222).
#include <iostream>

#include "apps/cohort/commands/command.h"
#include "apps/cohort/commands/commands.h"
#include "exec/job_store.h"
#include "exec/local_jobs.h"
#include "exec/replica_environment.h"
#include "job/job_kind.h"
#include "job/replica_endpoints.h"
#include "job/tfjob.h"

namespace cohort::cli {
namespace {

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
  const std::string& replica = flags.replica;
  size_t dash = replica.rfind('-');
  std::string type_name = dash == std::string::npos ? "" : replica.substr(0, dash);
  int index = -1;
  try {
    if (dash != std::string::npos) index = std::stoi(replica.substr(dash + 1));
  } catch (const std::exception&) {
  }
  std::string replica_type;
  for (const auto& [type, spec] : job.replica_specs) {
    if (job::LowerCase(type) == type_name && index >= 0 && index < spec.replicas)
      replica_type = type;
  }
  if (replica_type.empty()) {
    std::string known;
    for (const auto& [type, spec] : job.replica_specs) {
      for (int i = 0; i < spec.replicas; ++i)
        known += (known.empty() ? "" : ", ") + exec::ShortReplicaName(type, i);
    }
    return Fail(kExitInvalidInput, "--replica " + replica + ": no such replica in " +
                                       job.metadata.name + "; its replicas are " + known);
  }
  std::optional<std::string> tf_config;
  if (flags.kubernetes) {
    tf_config = job::TfConfigForReplica(job, replica_type, index, job::KubernetesEndpoints(job));
  } else {
    // A live job's ports, else the ports a run would reserve now (a new run picks its own).
    exec::LocalJobs jobs(exec::DefaultCohortHome());
    bool live = false;
    StatusOr<std::optional<std::string>> local =
        jobs.LocalTfConfig(job, replica_type, index, &live);
    if (!local.ok()) return Fail(kExitError, local.status().message());
    if (!live) {
      std::cerr << "cohort: job " << job.metadata.namespace_name << "/" << job.metadata.name
                << " is not running; showing freshly chosen local ports\n";
    }
    tf_config = *local;
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
