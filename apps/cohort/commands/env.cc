// `cohort env FILE|-f FILE|[KIND] NAME --replica master-0 [--kubernetes [--cluster-domain D]]
// [-c C]`: the environment a replica of a job of any kind gets (of a job file, or of a created
// job: this machine's, or with --kubernetes the cluster's), one NAME=VALUE a line, in the order
// Kubeflow's operator writes it: the container's own env, then the kind's variables (a TFJob's
// TF_CONFIG; a PyTorchJob's PYTHONUNBUFFERED, MASTER_ADDR, ... PET_*), as
// job::JobKind::ReplicaEnvironment gives them. Locally they are what the local executor sets
// (exec/replica_environment.h: a live job's ports, else ports chosen now), followed by Cohort's
// COHORT_JOB_NAME, COHORT_REPLICA_TYPE and COHORT_REPLICA_INDEX (its COHORT_JOB_SECRET is never
// printed); with --kubernetes they are the env of the container of the pod the operator creates
// (kube/objects/objects.h), in its order. `cohort tfconfig` (tfconfig.cc) prints one variable of
// the same environment.
#include <algorithm>
#include <filesystem>
#include <iostream>
#include <optional>

#include "apps/cohort/commands/command.h"
#include "apps/cohort/commands/commands.h"
#include "exec/job_store.h"
#include "exec/local_jobs.h"
#include "exec/replica_environment.h"
#include "job/defaults.h"
#include "job/job_kind.h"
#include "kube/objects/objects.h"

namespace cohort::cli {

StatusOr<ReplicaId> FindReplica(const job::Job& job, const std::string& replica) {
  size_t dash = replica.rfind('-');
  std::string type_name = dash == std::string::npos ? "" : replica.substr(0, dash);
  int index = -1;
  try {
    if (dash != std::string::npos) index = std::stoi(replica.substr(dash + 1));
  } catch (const std::exception&) {
  }
  for (const auto& [type, spec] : job.replica_specs) {
    if (job::LowerCase(type) == type_name && index >= 0 && index < spec.replicas) {
      return ReplicaId{type, index};
    }
  }
  std::string known;
  for (const auto& [type, spec] : job.replica_specs) {
    for (int i = 0; i < spec.replicas; ++i)
      known += (known.empty() ? "" : ", ") + exec::ShortReplicaName(type, i);
  }
  return Status::InvalidArgument("--replica " + replica + ": no such replica in " +
                                 job.metadata.name + "; its replicas are " + known);
}

StatusOr<ReplicaVariables> ReplicaEnvironmentOf(const job::Job& job, const ReplicaId& replica,
                                                const EnvironmentOptions& options) {
  const job::JobKind& kind = *job.job_kind;
  const std::string container =
      options.container.empty() ? kind.facts().container_name : options.container;
  ReplicaVariables result;
  if (options.kubernetes) {
    kube::Owner owner;
    owner.api_version = job.api_version;
    owner.kind = job.kind;
    owner.name = job.metadata.name;
    kube::ObjectOptions object_options;
    object_options.cluster_domain = options.cluster_domain;
    StatusOr<nlohmann::json> pod =
        kube::BuildPod(job, owner, replica.type, replica.index, object_options);
    if (!pod.ok()) return pod.status();
    std::string names;
    for (const nlohmann::json& each : (*pod)["spec"]["containers"]) {
      const std::string name = each.value("name", "");
      names += (names.empty() ? "" : ", ") + name;
      if (name != container) continue;
      for (const nlohmann::json& variable : each.value("env", nlohmann::json::array())) {
        job::EnvVar printed;
        printed.name = variable.value("name", "");
        printed.value = variable.value("value", "");
        printed.value_from = variable.value("valueFrom", nlohmann::json());
        result.variables.push_back(std::move(printed));
      }
      return result;
    }
    return Status::InvalidArgument("-c " + container + ": the pod of " +
                                   exec::ShortReplicaName(replica.type, replica.index) +
                                   " has no such container; its containers are " + names);
  }
  if (container != kind.facts().container_name) {
    return Status::InvalidArgument("-c " + container + ": a local replica runs only its " +
                                   kind.facts().container_name +
                                   " container (--kubernetes shows a pod's other containers)");
  }
  exec::LocalJobs jobs(exec::DefaultCohortHome());
  StatusOr<std::map<std::string, std::string>> environment =
      jobs.LocalReplicaEnvironment(job, replica.type, replica.index, &result.live);
  if (!environment.ok()) return environment.status();
  // The order: the container's env, the kind's variables in its order, Cohort's identity; the
  // values are what the local executor sets (a kind's variable wins over the container's).
  const auto local_endpoint = [](const std::string&, int) { return std::string("localhost:0"); };
  std::vector<std::string> kind_names;
  for (const job::EnvVar& variable :
       kind.ReplicaEnvironment(job, replica.type, replica.index, local_endpoint)) {
    kind_names.push_back(variable.name);
  }
  std::vector<std::string> order;
  StatusOr<const job::Container*> main = exec::ReplicaContainer(job, replica.type);
  if (main.ok()) {
    for (const job::EnvVar& variable : (*main)->env) {
      if (std::find(kind_names.begin(), kind_names.end(), variable.name) == kind_names.end()) {
        order.push_back(variable.name);
      }
    }
  }
  order.insert(order.end(), kind_names.begin(), kind_names.end());
  order.insert(order.end(), {"COHORT_JOB_NAME", "COHORT_REPLICA_TYPE", "COHORT_REPLICA_INDEX"});
  for (const std::string& name : order) {
    auto it = environment->find(name);
    if (it != environment->end()) result.variables.push_back({name, it->second, nullptr});
  }
  return result;
}

void PrintNotRunning(const job::Job& job) {
  std::cerr << "cohort: job " << job.metadata.namespace_name << "/" << job.metadata.name
            << " is not running; showing freshly chosen local ports\n";
}

namespace {

struct EnvFlags {
  std::vector<std::string> arguments;  // FILE, or [KIND] NAME of a created job
  JobFileFlags job_file;               // -f FILE (and --name)
  NamespaceFlag namespace_flag;
  std::string replica;
  TargetFlags target;
  std::string cluster_domain;
  std::string container;
};

// Whether an argument names a job file rather than a job: "-", a file that is there, or a name
// ending as a manifest does (a missing file is then said to be missing).
bool LooksLikeFile(const std::string& argument) {
  auto ends_with = [&](const std::string& suffix) {
    return argument.size() > suffix.size() &&
           argument.compare(argument.size() - suffix.size(), suffix.size(), suffix) == 0;
  };
  return argument == "-" || std::filesystem::is_regular_file(argument) || ends_with(".yaml") ||
         ends_with(".yml") || ends_with(".json");
}

// The job whose environment is asked for: the file's (-f FILE, or an argument that is a file or
// -), else the created job [KIND] NAME, read through the job client (the cluster's with
// --kubernetes) and defaulted as a run defaults it.
StatusOr<job::Job> EnvJob(const EnvFlags& flags) {
  std::string file = flags.job_file.file;
  if (!file.empty() && !flags.arguments.empty()) {
    return Status::InvalidArgument("give FILE or -f FILE, or a job's name, not both");
  }
  if (file.empty() && flags.arguments.size() == 1 && LooksLikeFile(flags.arguments[0])) {
    file = flags.arguments[0];
  }
  if (!file.empty()) {
    StatusOr<LoadedJob> loaded =
        LoadJobFile(file, flags.job_file.options, flags.namespace_flag.Given());
    if (!loaded.ok()) return loaded.status();
    return std::move(loaded->job);
  }
  if (flags.arguments.empty()) {
    return Status::InvalidArgument("give a job file (FILE or -f FILE) or a created job's name (" +
                                   JobArgumentsHelp(false) + ")");
  }
  StatusOr<JobArguments> named = OneJobName(flags.arguments);
  if (!named.ok()) return named.status();
  StatusOr<std::unique_ptr<view::JobClient>> client = ClientFactory(flags.target)();
  if (!client.ok()) return client.status();
  view::JobQuery query;
  query.namespace_name = (*client)->Namespace(flags.namespace_flag.Given());
  query.names = named->names;
  query.kind = named->kind;
  StatusOr<view::JobList> jobs = (*client)->GetJobs(query);
  if (!jobs.ok()) return jobs.status();
  StatusOr<job::Job> spec = jobs->store->ReadSpec(jobs->keys.front());
  if (!spec.ok()) return spec.status();
  job::ApplyDefaults(*spec);
  return spec;
}

int Env(const EnvFlags& flags) {
  StatusOr<job::Job> job = EnvJob(flags);
  if (!job.ok()) return Fail(job.status());
  StatusOr<ReplicaId> replica = FindReplica(*job, flags.replica);
  if (!replica.ok()) return Fail(kExitInvalidInput, replica.status().message());
  EnvironmentOptions options;
  options.kubernetes = flags.target.kubernetes;
  options.cluster_domain = flags.cluster_domain;
  options.container = flags.container;
  StatusOr<ReplicaVariables> environment = ReplicaEnvironmentOf(*job, *replica, options);
  if (!environment.ok()) {
    return Fail(environment.status().code() == Status::Code::kInvalidArgument ? kExitInvalidInput
                                                                              : kExitError,
                environment.status().message());
  }
  if (!environment->live) PrintNotRunning(*job);
  for (const job::EnvVar& variable : environment->variables) {
    if (variable.value_from.is_null()) {
      std::cout << variable.name << "=" << variable.value << "\n";
    } else {
      std::cout << variable.name << " (valueFrom " << variable.value_from.dump() << ")\n";
    }
  }
  return kExitSucceeded;
}

}  // namespace

void AddEnvCommand(CLI::App& app, int& exit_code) {
  auto flags = std::make_shared<EnvFlags>();
  CLI::App* env = app.add_subcommand("env", "Print the environment a replica would get (" +
                                                job::KindRegistry::Default().Names(", ") +
                                                "), in the operator's order");
  env->add_option("JOB", flags->arguments,
                  "FILE (" + ManifestHelp() +
                      " or an AI Platform job spec), or a created job: " + JobArgumentsHelp(false));
  env->add_option("-f,--filename", flags->job_file.file, "the job file (- for standard input)");
  AddJobName(env, flags->job_file);
  AddNamespace(env, flags->namespace_flag);
  env->add_option("--replica", flags->replica, "e.g. worker-1, master-0")->required();
  AddKubernetes(env, flags->target,
                "the form the operator's pod gets (hosts <job>-<type>-<i>[.<ns>.svc]); a created "
                "job's NAME is then the cluster's");
  env->add_option("--cluster-domain", flags->cluster_domain,
                  "with --kubernetes: appended to the replicas' hosts, e.g. cluster.local");
  env->add_option("-c,--container", flags->container,
                  "with --kubernetes: another container of the pod (default: the kind's)");
  env->callback([flags, &exit_code] { exit_code = Env(*flags); });
}

}  // namespace cohort::cli
