// cohort: run Kubeflow TFJob manifests on this machine, kubectl-style.
//
//   cohort run FILE        run a job in the foreground, streaming its replicas' output
//   cohort submit FILE     start it in the background (a detached supervisor) and print its name
//   cohort get / describe / logs / wait / delete JOB
//   cohort validate FILE... / cohort tfconfig FILE --replica worker-1
//   cohort convert FILE    print the TFJob a file amounts to (an AI Platform job spec converted)
//   cohort manifests FILE  print the pods, services and PodGroup Kubeflow's operator would create
//   cohort crd             print the TFJob CustomResourceDefinition (deploy/kubernetes/crd.yaml)
//   cohort operator        run TFJobs on a Kubernetes cluster (kube/operator), until SIGTERM
//   cohort ui              serve the web dashboard of the jobs here (ui/ui_command.h)
//   kubectl's forms: apply/create/delete -f FILE, get tfjobs|pods [NAME], logs POD, -o FORMAT, -w
//   gcloud's: cohort ai-platform jobs submit training|list|describe|cancel|stream-logs
//   --kubernetes [--context C] on submit, apply, create, get, describe, logs, wait, delete,
//   suspend and resume: the same against a cluster's API server (kube_commands.h)
//
// FILE is a TFJob manifest or a Google AI Platform training job spec (job/job_file.h).
//
// This file only wires commands to flags and prints: every command is carried out by
// exec::LocalJobs (exec/local_jobs.h) on the job state under $COHORT_HOME (exec/job_store.h),
// and printed with the read model (view/job_view.h; view/pod_view.h and ai_platform_view.h for
// the kubectl and gcloud forms, whose arguments view/command_line.h reads; docs/cli.md lists
// them). There is no daemon, except `cohort operator`, which runs in a cluster
// (kube/operator/operator.h).
#include <CLI/CLI.hpp>
#include <atomic>
#include <csignal>
#include <cstdlib>
#include <iostream>

#include "apps/cohort/exit_codes.h"
#include "apps/cohort/job_file.h"
#include "apps/cohort/kube_commands.h"
#include "base/version.h"
#include "exec/image_map.h"
#include "exec/job_controller.h"
#include "exec/local_jobs.h"
#include "exec/replica_environment.h"
#include "job/ai_platform_job.h"
#include "job/job_kind.h"
#include "job/reconciler.h"
#include "job/replica_endpoints.h"
#include "job/spec_writer.h"
#include "job/tfjob.h"
#include "kube/client/http_api.h"
#include "kube/objects/crd.h"
#include "kube/objects/objects.h"
#include "kube/operator/operator_command.h"
#include "ui/ui_command.h"
#include "view/ai_platform_view.h"
#include "view/command_line.h"
#include "view/job_view.h"
#include "view/job_watch.h"
#include "view/jsonpath.h"
#include "view/pod_view.h"
#include "view/spec_diff.h"

namespace cohort::cli {
namespace {

using exec::JobKey;
using exec::LocalJobs;

int Fail(int exit_code, const std::string& message) {
  std::cerr << "cohort: " << message << "\n";
  return exit_code;
}

int ExitCodeFor(const Status& status) {
  switch (status.code()) {
    case Status::Code::kInvalidArgument:
    case Status::Code::kAlreadyExists:
    case Status::Code::kNotFound:
      return kExitInvalidInput;
    default:
      return kExitError;
  }
}

int ExitCodeForJob(const job::JobStatus& status) {
  return job::IsSucceeded(status) ? kExitSucceeded : kExitJobFailed;
}

void PrintWarnings(const LoadedJob& loaded) {
  for (const std::string& warning : loaded.warnings)
    std::cerr << "cohort: warning: " << warning << "\n";
}

// ---- run ----

void PrintCondition(const JobKey& key, const job::JobCondition& condition) {
  if (condition.status != "True") return;
  std::cout << "cohort: job " << key.ToString() << " is " << condition.type << ": "
            << condition.message << std::endl;
}

void PrintEvent(const job::Event& event) {
  std::cout << "cohort: event " << event.type << " " << event.reason << ": " << event.message
            << std::endl;
}

// What `run` and `submit` share: read the manifest, map images, create the job.
struct PreparedJob {
  exec::CreatedJob created;
  exec::ImageMap images;
};
StatusOr<PreparedJob> PrepareJob(LocalJobs& jobs, const LoadedJob& loaded,
                                 const std::vector<std::string>& image_flags) {
  PrintWarnings(loaded);
  StatusOr<exec::ImageMap> images = jobs.LoadImages(image_flags);
  if (!images.ok()) return images.status();
  StatusOr<exec::CreatedJob> created = jobs.Create(loaded.job, *images);
  if (!created.ok()) return created.status();
  return PreparedJob{std::move(*created), std::move(*images)};
}

int Run(const std::string& file, const job::JobFileOptions& options,
        const std::vector<std::string>& image_flags,
        const std::optional<std::string>& namespace_flag) {
  StatusOr<LoadedJob> loaded = LoadJobFile(file, options, namespace_flag);
  if (!loaded.ok()) return Fail(ExitCodeFor(loaded.status()), loaded.status().message());
  LocalJobs jobs(exec::DefaultCohortHome());
  StatusOr<PreparedJob> prepared = PrepareJob(jobs, *loaded, image_flags);
  if (!prepared.ok()) return Fail(ExitCodeFor(prepared.status()), prepared.status().message());
  JobKey key = prepared->created.key;
  std::cout << "cohort: job " << key.ToString() << " created; logs in "
            << jobs.store().JobDirectory(key) / "logs" << std::endl;
  auto print_line = [](const std::string& replica, const std::string& line) {
    std::cout << "[" << replica << "] " << line << "\n";
  };
  exec::ControllerObserver observer;
  observer.on_condition = [&](const job::JobCondition& condition) {
    PrintCondition(key, condition);
  };
  observer.on_event = PrintEvent;
  observer.on_tick = [] { std::cout.flush(); };
  StatusOr<job::JobStatus> final_status =
      jobs.Supervise(std::move(prepared->created), prepared->images, observer, print_line);
  if (!final_status.ok()) return Fail(kExitError, final_status.status().message());
  std::cout << "cohort: job " << key.ToString() << " " << job::JobState(*final_status) << std::endl;
  return ExitCodeForJob(*final_status);
}

// ---- submit / supervise ----

// `lock_fd` is the job's supervisor lock, inherited from `cohort submit` across exec.
int Supervise(const JobKey& key, const std::vector<std::string>& image_flags, int lock_fd) {
  LocalJobs jobs(exec::DefaultCohortHome());
  StatusOr<exec::CreatedJob> adopted = jobs.Adopt(key, lock_fd);
  if (!adopted.ok()) return Fail(kExitError, adopted.status().message());
  StatusOr<exec::ImageMap> images = jobs.LoadImages(image_flags);
  if (!images.ok()) return Fail(kExitInvalidInput, images.status().message());
  StatusOr<job::JobStatus> final_status = jobs.Supervise(std::move(*adopted), *images);
  if (!final_status.ok()) return Fail(kExitError, final_status.status().message());
  return ExitCodeForJob(*final_status);
}

// Creates the job and starts its supervisor in the background; `on_created` prints.
int SubmitLoaded(const LoadedJob& loaded, const std::vector<std::string>& image_flags,
                 const std::function<void(const JobKey&, const job::Job&)>& on_created) {
  LocalJobs jobs(exec::DefaultCohortHome());
  StatusOr<PreparedJob> prepared = PrepareJob(jobs, loaded, image_flags);
  if (!prepared.ok()) return Fail(ExitCodeFor(prepared.status()), prepared.status().message());
  JobKey key = prepared->created.key;
  if (Status detached = jobs.Detach(std::move(prepared->created), image_flags); !detached.ok()) {
    return Fail(kExitError, detached.message());
  }
  on_created(key, loaded.job);
  return kExitSucceeded;
}

int Submit(const std::string& file, const job::JobFileOptions& options,
           const std::vector<std::string>& image_flags,
           const std::optional<std::string>& namespace_flag,
           const std::function<void(const JobKey&, const job::Job&)>& on_created) {
  StatusOr<LoadedJob> loaded = LoadJobFile(file, options, namespace_flag);
  if (!loaded.ok()) return Fail(ExitCodeFor(loaded.status()), loaded.status().message());
  return SubmitLoaded(*loaded, image_flags, on_created);
}

void PrintName(const JobKey& key, const job::Job&) { std::cout << key.name << std::endl; }

void PrintCreated(const JobKey& key, const job::Job& job) {
  std::cout << job.job_kind->ResourceName() << "/" << key.name << " created" << std::endl;
}

// `apply -f`: creates the job, or says how the file differs from the job there.
int Apply(const std::string& file, const job::JobFileOptions& options,
          const std::vector<std::string>& image_flags,
          const std::optional<std::string>& namespace_flag) {
  StatusOr<LoadedJob> loaded = LoadJobFile(file, options, namespace_flag);
  if (!loaded.ok()) return Fail(kExitInvalidInput, loaded.status().message());
  LocalJobs jobs(exec::DefaultCohortHome());
  JobKey key{loaded->job.metadata.namespace_name, loaded->job.metadata.name};
  const std::string resource = loaded->job.job_kind->ResourceName() + "/" + key.name;
  if (!jobs.store().Exists(key)) {
    return SubmitLoaded(*loaded, image_flags, PrintCreated);
  }
  StatusOr<nlohmann::json> running = jobs.store().ReadSpecObject(key);
  if (!running.ok()) return Fail(kExitError, running.status().message());
  std::vector<std::string> differences =
      view::SpecDifferences((*running)["spec"], job::ToJson(loaded->job)["spec"]);
  if (differences.empty()) {
    std::cout << resource << " unchanged\n";
    return kExitSucceeded;
  }
  std::cerr << "cohort: " << resource << " exists with another spec; a local job keeps the spec "
            << "it was started with (delete it and apply again to run this one):\n";
  for (const std::string& difference : differences) std::cerr << "  " << difference << "\n";
  return kExitInvalidInput;
}

// ---- get / describe / logs / wait / delete ----

// The resource name kubectl prints for a job ("tfjob.kubeflow.org"), from its saved spec.
std::string ResourceName(LocalJobs& jobs, const JobKey& key) {
  StatusOr<job::Job> spec = jobs.store().ReadSpec(key);
  const job::JobKind& kind =
      spec.ok() ? *spec->job_kind : *job::KindRegistry::Default().kinds().front();
  return kind.ResourceName();
}

// The flags `get` takes besides its arguments.
struct GetFlags {
  std::string namespace_name = "default";
  bool all_namespaces = false;
  std::string output;
  bool watch = false;
  double timeout_seconds = 3600;
};

// Prints `object` (a job or pod, or a List) as -o json, yaml or jsonpath asks.
int PrintObject(const view::OutputFormat& format, const nlohmann::json& object) {
  StatusOr<std::string> text = view::RenderObject(format, object);
  if (!text.ok()) return Fail(kExitInvalidInput, text.status().message());
  std::cout << *text;
  return kExitSucceeded;
}

// A table without its header line, for the rows `get -w` prints on a change.
std::string WithoutHeader(const std::string& table) {
  size_t newline = table.find('\n');
  return newline == std::string::npos ? "" : table.substr(newline + 1);
}

// The jobs named (all jobs of the namespace when none is), each checked to exist.
StatusOr<std::vector<JobKey>> LookupJobs(LocalJobs& jobs, const std::vector<std::string>& names,
                                         const GetFlags& flags) {
  if (names.empty()) return jobs.Lookup("", flags.namespace_name, flags.all_namespaces);
  std::vector<JobKey> keys;
  for (const std::string& name : names) {
    StatusOr<std::vector<JobKey>> found = jobs.Lookup(name, flags.namespace_name, false);
    if (!found.ok()) return found.status();
    keys.insert(keys.end(), found->begin(), found->end());
  }
  return keys;
}

// `get -w`: the rows already printed, then a row for each change until the jobs are done.
int Watch(LocalJobs& jobs, const std::vector<JobKey>& keys, const GetFlags& flags,
          const std::function<std::string(const JobKey&)>& rows) {
  view::JobWatch watch(jobs.store(), keys);
  watch.Changed();  // what has just been printed
  bool done = view::WatchJobs(
      watch, std::chrono::milliseconds(static_cast<int64_t>(flags.timeout_seconds * 1000)),
      [&] { jobs.Tidy(keys); },
      [&](const JobKey& key) { std::cout << WithoutHeader(rows(key)) << std::flush; });
  if (!done) return Fail(kExitError, "watch timed out; the jobs are still running");
  return kExitSucceeded;
}

int GetPods(LocalJobs& jobs, const std::vector<std::string>& names, const GetFlags& flags,
            const view::OutputFormat& format) {
  using Kind = view::OutputFormat::Kind;
  std::vector<view::PodRef> pods;
  if (names.empty()) {
    StatusOr<std::vector<JobKey>> keys = LookupJobs(jobs, {}, flags);
    if (!keys.ok()) return Fail(kExitError, keys.status().message());
    for (const JobKey& key : *keys) {
      std::vector<view::PodRef> of_job = view::JobPods(jobs.store(), key);
      pods.insert(pods.end(), of_job.begin(), of_job.end());
    }
  } else {
    jobs.Tidy(jobs.store().ListJobs(flags.namespace_name));
    for (const std::string& name : names) {
      StatusOr<view::PodRef> pod = view::FindPod(jobs.store(), flags.namespace_name, name);
      if (!pod.ok()) return Fail(kExitError, pod.status().message());
      pods.push_back(*pod);
    }
  }
  if (format.kind == Kind::kJson || format.kind == Kind::kYaml || format.kind == Kind::kJsonPath) {
    nlohmann::json items = nlohmann::json::array();
    for (const view::PodRef& pod : pods) items.push_back(view::PodObject(jobs.store(), pod));
    if (names.size() == 1) return PrintObject(format, items[0]);
    return PrintObject(format, {{"apiVersion", "v1"}, {"kind", "List"}, {"items", items}});
  }
  if (pods.empty()) {
    std::cerr << "No resources found"
              << (flags.all_namespaces ? "" : " in " + flags.namespace_name + " namespace")
              << ".\n";
    return kExitSucceeded;
  }
  if (format.kind == Kind::kName) {
    for (const view::PodRef& pod : pods) std::cout << "pod/" << pod.PodName() << "\n";
    return kExitSucceeded;
  }
  bool wide = format.kind == Kind::kWide;
  std::cout << view::PodTable(jobs.store(), pods, wide, flags.all_namespaces) << std::flush;
  if (!flags.watch) return kExitSucceeded;
  std::vector<JobKey> keys;
  for (const view::PodRef& pod : pods) {
    if (keys.empty() || keys.back().ToString() != pod.job.ToString()) keys.push_back(pod.job);
  }
  return Watch(jobs, keys, flags, [&](const JobKey& key) {
    std::vector<view::PodRef> changed;
    for (const view::PodRef& pod : pods) {
      if (pod.job.ToString() == key.ToString()) changed.push_back(pod);
    }
    return view::PodTable(jobs.store(), changed, wide, flags.all_namespaces);
  });
}

int Get(const std::vector<std::string>& arguments, const GetFlags& flags) {
  using Kind = view::OutputFormat::Kind;
  StatusOr<view::OutputFormat> format = view::ParseOutputFormat(flags.output);
  if (!format.ok()) return Fail(kExitInvalidInput, format.status().message());
  StatusOr<view::ResourceArguments> resource = view::SplitResource(arguments);
  if (!resource.ok()) return Fail(kExitInvalidInput, resource.status().message());
  LocalJobs jobs(exec::DefaultCohortHome());
  if (resource->resource == view::Resource::kPod) {
    return GetPods(jobs, resource->names, flags, *format);
  }
  const std::vector<std::string>& names = resource->names;
  StatusOr<std::vector<JobKey>> present = LookupJobs(jobs, names, flags);
  if (!present.ok()) return Fail(kExitError, present.status().message());
  if (format->kind == Kind::kJson || format->kind == Kind::kYaml ||
      format->kind == Kind::kJsonPath) {
    return PrintObject(*format, view::JobObjects(jobs.store(), *present, names.size() != 1));
  }
  if (present->empty()) {
    std::cerr << "No resources found"
              << (flags.all_namespaces ? "" : " in " + flags.namespace_name + " namespace")
              << ".\n";
    return kExitSucceeded;
  }
  if (format->kind == Kind::kName) {
    for (const JobKey& key : *present) {
      std::cout << ResourceName(jobs, key) << "/" << key.name << "\n";
    }
    return kExitSucceeded;
  }
  bool wide = format->kind == Kind::kWide;
  std::cout << view::JobTable(jobs.store(), *present, wide, flags.all_namespaces) << std::flush;
  if (!flags.watch) return kExitSucceeded;
  return Watch(jobs, *present, flags, [&](const JobKey& key) {
    return view::JobTable(jobs.store(), {key}, wide, flags.all_namespaces);
  });
}

// The one job that `describe`, `logs` or `delete` arguments name: NAME or tfjob NAME.
StatusOr<std::vector<std::string>> JobNames(const std::vector<std::string>& arguments) {
  StatusOr<view::ResourceArguments> resource = view::SplitResource(arguments);
  if (!resource.ok()) return resource.status();
  if (resource->resource == view::Resource::kPod) {
    return Status::InvalidArgument(
        "this command takes tfjobs; a pod is a replica of its job (cohort get pods)");
  }
  if (resource->names.empty()) return Status::InvalidArgument("a job name is required");
  return resource->names;
}

int Describe(const std::vector<std::string>& arguments, const std::string& namespace_name) {
  StatusOr<std::vector<std::string>> names = JobNames(arguments);
  if (!names.ok()) return Fail(kExitInvalidInput, names.status().message());
  LocalJobs jobs(exec::DefaultCohortHome());
  for (const std::string& name : *names) {
    JobKey key{namespace_name, name};
    if (StatusOr<std::vector<JobKey>> found = jobs.Lookup(name, namespace_name, false);
        !found.ok()) {
      return Fail(kExitError, found.status().message());
    }
    StatusOr<std::string> text = view::DescribeJob(jobs.store(), key);
    if (!text.ok()) return Fail(kExitError, text.status().message());
    std::cout << (name == names->front() ? "" : "\n\n") << *text;
  }
  return kExitSucceeded;
}

struct LogsFlags {
  std::string namespace_name = "default";
  std::string replica;
  std::string container;
  bool follow = false;
  bool previous = false;
  int tail = -1;
  std::string since;
};

// `logs JOB` (every replica, prefixed, or --replica R) or `logs POD` (the replica's lines).
int Logs(const std::string& name, const LogsFlags& flags) {
  LocalJobs jobs(exec::DefaultCohortHome());
  JobKey key{flags.namespace_name, name};
  std::string replica = flags.replica;
  bool is_pod = false;  // a pod's log is its replica's last run, as kubectl's current container
  if (!jobs.store().Exists(key)) {
    StatusOr<view::PodRef> pod = view::FindPod(jobs.store(), flags.namespace_name, name);
    if (!pod.ok()) {
      return Fail(kExitError,
                  "job " + key.ToString() + " not found, nor " + pod.status().message());
    }
    key = pod->job;
    replica = pod->replica;
    is_pod = true;
  }
  if (!replica.empty()) {
    if (Status known = jobs.CheckReplica(key, replica); !known.ok()) {
      return Fail(kExitInvalidInput, known.message());
    }
  }
  if (!flags.container.empty()) {
    StatusOr<job::Job> spec = jobs.store().ReadSpec(key);
    std::string container = spec.ok() ? spec->job_kind->facts().container_name : "";
    if (flags.container != container) {
      return Fail(kExitInvalidInput, "container " + flags.container + " is not valid for " +
                                         key.name + ": its replicas run one container, " +
                                         container);
    }
  }
  exec::LogSelection selection;
  selection.previous = flags.previous;
  selection.latest = is_pod && !flags.previous;
  if (flags.tail >= 0) selection.tail = static_cast<size_t>(flags.tail);
  if (!flags.since.empty()) {
    StatusOr<std::chrono::seconds> since = exec::ParseDuration(flags.since);
    if (!since.ok()) return Fail(kExitInvalidInput, since.status().message());
    selection.since = *since;
  }
  auto print = [&](const std::string& from, const std::string& line) {
    if (replica.empty()) std::cout << "[" << from << "] ";
    std::cout << line << "\n";
  };
  Status read = jobs.ReadLogs(
      key, replica, flags.follow, print, [] { std::cout.flush(); }, selection);
  if (!read.ok()) return Fail(kExitInvalidInput, read.message());
  return kExitSucceeded;
}

int Wait(const std::string& name, const std::string& namespace_name, double timeout_seconds) {
  LocalJobs jobs(exec::DefaultCohortHome());
  JobKey key{namespace_name, name};
  StatusOr<job::JobStatus> status = jobs.Wait(key, timeout_seconds);
  if (!status.ok()) return Fail(kExitError, status.status().message());
  std::cout << key.name << " " << job::JobState(*status) << "\n";
  return ExitCodeForJob(*status);
}

int DeleteJob(LocalJobs& jobs, const JobKey& key, bool ignore_not_found) {
  if (!jobs.store().Exists(key)) {
    if (ignore_not_found) return kExitSucceeded;
    return Fail(kExitError, "job " + key.ToString() + " not found");
  }
  const std::string resource = ResourceName(jobs, key);
  if (Status deleted = jobs.Delete(key); !deleted.ok()) return Fail(kExitError, deleted.message());
  std::cout << resource << " \"" << key.name << "\" deleted\n";
  return kExitSucceeded;
}

// `delete JOB...`, `delete tfjob JOB...` or `delete -f FILE`; every job is tried, and the exit
// status is the first failure's.
int Delete(const std::vector<std::string>& arguments, const std::string& file,
           const std::optional<std::string>& namespace_flag, bool ignore_not_found) {
  std::vector<JobKey> keys;
  const std::string namespace_name = namespace_flag.value_or("default");
  if (!file.empty()) {
    StatusOr<LoadedJob> loaded = LoadJobFile(file, {}, namespace_flag);
    if (!loaded.ok()) return Fail(kExitInvalidInput, loaded.status().message());
    keys.push_back({loaded->job.metadata.namespace_name, loaded->job.metadata.name});
  }
  if (!arguments.empty()) {
    StatusOr<std::vector<std::string>> names = JobNames(arguments);
    if (!names.ok()) return Fail(kExitInvalidInput, names.status().message());
    for (const std::string& name : *names) keys.push_back({namespace_name, name});
  }
  if (keys.empty()) return Fail(kExitInvalidInput, "give a job name or -f FILE");
  LocalJobs jobs(exec::DefaultCohortHome());
  int exit_code = kExitSucceeded;
  for (const JobKey& key : keys) {
    int deleted = DeleteJob(jobs, key, ignore_not_found);
    if (exit_code == kExitSucceeded) exit_code = deleted;
  }
  return exit_code;
}

int SetSuspended(const std::string& name, const std::string& namespace_name, bool suspended) {
  LocalJobs jobs(exec::DefaultCohortHome());
  JobKey key{namespace_name, name};
  StatusOr<job::JobStatus> current = jobs.store().ReadStatus(key);
  if (suspended && current.ok() && job::IsFinished(*current)) {
    return Fail(kExitInvalidInput, ResourceName(jobs, key) + "/" + key.name + " has already " +
                                       job::JobState(*current) +
                                       "; a finished job cannot be suspended");
  }
  if (Status status = jobs.SetSuspended(key, suspended); !status.ok()) {
    return Fail(kExitError, status.message());
  }
  std::cout << ResourceName(jobs, key) << "/" << key.name << (suspended ? " suspended" : " resumed")
            << "\n";
  return kExitSucceeded;
}

// ---- ai-platform jobs ----

// `ai-platform jobs submit training [JOB] --config FILE`: JOB names the job (as gcloud's job ID),
// else the file's jobId, else the file's name.
int AiPlatformSubmit(const std::string& job_id, const std::string& config,
                     const std::vector<std::string>& image_flags,
                     const std::optional<std::string>& namespace_flag, bool stream_logs) {
  job::JobFileOptions options;
  if (!job_id.empty()) {
    StatusOr<std::string> name = job::TFJobNameForJobId(job_id);
    if (!name.ok())
      return Fail(kExitInvalidInput, "JOB " + job_id + ": " + name.status().message());
    options.job_name = *name;
  } else if (StatusOr<std::string> name = view::JobNameFromFileName(config); name.ok()) {
    options.name_without_job_id = *name;
  }
  StatusOr<LoadedJob> loaded = LoadJobFile(config, options, namespace_flag);
  if (!loaded.ok()) return Fail(ExitCodeFor(loaded.status()), loaded.status().message());
  int submitted = SubmitLoaded(*loaded, image_flags, [](const JobKey& key, const job::Job&) {
    std::cout << "Job [" << key.name << "] submitted successfully.\n"
              << "Its status: cohort ai-platform jobs describe " << key.name << "\n"
              << "Its logs:   cohort ai-platform jobs stream-logs " << key.name << "\n"
              << "jobId: " << key.name << "\nstate: QUEUED\n"
              << std::flush;
  });
  if (submitted != kExitSucceeded || !stream_logs) return submitted;
  LogsFlags flags;
  flags.namespace_name = loaded->job.metadata.namespace_name;
  flags.follow = true;
  return Logs(loaded->job.metadata.name, flags);
}

int AiPlatformList(const std::string& namespace_name) {
  LocalJobs jobs(exec::DefaultCohortHome());
  StatusOr<std::vector<JobKey>> present = jobs.Lookup("", namespace_name, false);
  if (!present.ok()) return Fail(kExitError, present.status().message());
  if (present->empty()) {
    std::cerr << "Listed 0 items.\n";
    return kExitSucceeded;
  }
  std::cout << view::AiPlatformJobTable(jobs.store(), *present);
  return kExitSucceeded;
}

int AiPlatformDescribe(const std::string& name, const std::string& namespace_name) {
  LocalJobs jobs(exec::DefaultCohortHome());
  StatusOr<std::vector<JobKey>> found = jobs.Lookup(name, namespace_name, false);
  if (!found.ok()) return Fail(kExitError, found.status().message());
  StatusOr<nlohmann::json> object = view::AiPlatformJobObject(jobs.store(), found->front());
  if (!object.ok()) return Fail(kExitError, object.status().message());
  std::cout << job::ToYaml(*object);
  return kExitSucceeded;
}

// `jobs cancel`: a cancelled job stops and stays listed (CANCELLED), so cancel suspends it.
int AiPlatformCancel(const std::string& name, const std::string& namespace_name) {
  LocalJobs jobs(exec::DefaultCohortHome());
  StatusOr<std::vector<JobKey>> found = jobs.Lookup(name, namespace_name, false);
  if (!found.ok()) return Fail(kExitError, found.status().message());
  StatusOr<job::JobStatus> status = jobs.store().ReadStatus(found->front());
  if (status.ok() && job::IsFinished(*status)) {
    return Fail(kExitInvalidInput, "job " + name + " is already in terminal state " +
                                       view::AiPlatformState(*status) + "; nothing to cancel");
  }
  if (Status suspended = jobs.SetSuspended(found->front(), true); !suspended.ok()) {
    return Fail(kExitError, suspended.message());
  }
  std::cout << "Cancelled job [" << name << "].\n";
  return kExitSucceeded;
}

// ---- validate / tfconfig / convert ----

// "1 Chief, 2 PS, 3 Worker"
std::string ReplicaSummary(const job::Job& job) {
  std::string replicas;
  for (const auto& [type, spec] : job.replica_specs) {
    replicas += (replicas.empty() ? "" : ", ") + std::to_string(spec.replicas) + " " + type;
  }
  return replicas;
}

// A valid manifest whose images are not mapped here is still valid (for a cluster): each
// unmapped image is a warning, and so is an images file that cannot be read.
int Validate(const std::vector<std::string>& files, const job::JobFileOptions& options,
             const std::vector<std::string>& image_flags,
             const std::optional<std::string>& namespace_flag) {
  LocalJobs jobs(exec::DefaultCohortHome());
  StatusOr<exec::ImageMap> images = jobs.LoadImages(image_flags);
  if (!images.ok()) {
    std::cerr << "cohort: warning: images are not checked: " << images.status().message() << "\n";
  }
  int exit_code = kExitSucceeded;
  for (const std::string& file : files) {
    StatusOr<LoadedJob> loaded = LoadJobFile(file, options, namespace_flag);
    if (!loaded.ok()) {
      std::cerr << loaded.status().message() << "\n";
      exit_code = kExitInvalidInput;
      continue;
    }
    PrintWarnings(*loaded);
    if (images.ok()) {
      for (const std::string& warning : images->UnmappedImageWarnings(loaded->job)) {
        std::cerr << "cohort: warning: " << warning << "\n";
      }
    }
    const std::string& kind = loaded->job.kind;
    std::string as_kind = loaded->format == job::JobFileFormat::kAiPlatform
                              ? "valid AI Platform job spec, as " + kind + " "
                              : "valid " + kind + " ";
    std::cout << file << ": " << as_kind << loaded->job.metadata.namespace_name << "/"
              << loaded->job.metadata.name << " (" << ReplicaSummary(loaded->job) << ")\n";
    if (loaded->format == job::JobFileFormat::kAiPlatform) {
      std::cout << "  (cohort convert " << file << " prints that " << kind << ")\n";
    }
  }
  return exit_code;
}

// The TFJob as `cohort get -o yaml` would show its spec: converted from AI Platform's form, or
// normalised (defaults applied) from a manifest.
int Convert(const std::string& file, const job::JobFileOptions& options,
            const std::optional<std::string>& namespace_flag) {
  StatusOr<LoadedJob> loaded = LoadJobFile(file, options, namespace_flag);
  if (!loaded.ok()) return Fail(kExitInvalidInput, loaded.status().message());
  PrintWarnings(*loaded);
  std::cout << job::ToYaml(job::ToJson(loaded->job));
  return kExitSucceeded;
}

int TfConfig(const std::string& file, const job::JobFileOptions& options,
             const std::string& replica, bool kubernetes,
             const std::optional<std::string>& namespace_flag) {
  StatusOr<LoadedJob> loaded = LoadJobFile(file, options, namespace_flag);
  if (!loaded.ok()) return Fail(kExitInvalidInput, loaded.status().message());
  const job::Job& job = loaded->job;
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
  if (kubernetes) {
    tf_config = job::TfConfigForReplica(job, replica_type, index, job::KubernetesEndpoints(job));
  } else {
    // A live job's ports, else the ports a run would reserve now (a new run picks its own).
    LocalJobs jobs(exec::DefaultCohortHome());
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

// ---- manifests / crd ----

// The job's Kubernetes objects as a YAML stream. The operator names the namespace in the request
// path only; here each object carries it, so that `kubectl apply -f -` puts it where TF_CONFIG's
// hosts point.
int Manifests(const std::string& file, const job::JobFileOptions& options,
              const std::optional<std::string>& namespace_flag,
              const kube::ObjectOptions& object_options) {
  StatusOr<LoadedJob> loaded = LoadJobFile(file, options, namespace_flag);
  if (!loaded.ok()) return Fail(kExitInvalidInput, loaded.status().message());
  const job::Job& job = loaded->job;
  kube::Owner owner;
  owner.api_version = job.api_version;
  owner.kind = job.kind;
  owner.name = job.metadata.name;
  StatusOr<std::vector<nlohmann::json>> objects = kube::BuildJobObjects(job, owner, object_options);
  if (!objects.ok()) return Fail(kExitInvalidInput, objects.status().message());
  for (nlohmann::json& object : *objects) {
    object["metadata"]["namespace"] = job.metadata.namespace_name;
    std::cout << "---\n" << job::ToYaml(object);
  }
  return kExitSucceeded;
}

int Crd() {
  std::cout << job::ToYaml(kube::CustomResourceDefinition(job::TFJobKind()));
  return kExitSucceeded;
}

// ---- operator ----

std::atomic<int> operator_stop_requested{0};  // lock-free: set from the signal handler
static_assert(std::atomic<int>::is_always_lock_free);

void RequestOperatorStop(int) { operator_stop_requested.store(1); }

// Runs until SIGTERM or SIGINT, then stops cleanly (releasing the Lease). The cluster is the
// kubeconfig's (--kubeconfig, else $KUBECONFIG or ~/.kube/config; --context, else its current
// context) or, in a pod without a kubeconfig, the pod's service account.
int RunOperator(const kube::OperatorFlags& flags, const std::string& kubeconfig,
                const std::string& context) {
  StatusOr<kube::OperatorOptions> options =
      kube::MakeOperatorOptions(flags, [](const std::string& name) {
        const char* value = std::getenv(name.c_str());
        return value ? std::string(value) : std::string();
      });
  if (!options.ok()) return Fail(kExitInvalidInput, options.status().message());
  if (!kubeconfig.empty()) setenv("KUBECONFIG", kubeconfig.c_str(), 1);
  StatusOr<std::unique_ptr<kube::Api>> api = kube::Connect(context);
  if (!api.ok()) return Fail(kExitError, api.status().message());
  struct sigaction action = {};
  action.sa_handler = RequestOperatorStop;
  sigemptyset(&action.sa_mask);
  sigaction(SIGTERM, &action, nullptr);
  sigaction(SIGINT, &action, nullptr);
  kube::Operator op(**api, kube::KubeObjectBuilders(), *options);
  kube::RunOperatorUntil(op, operator_stop_requested);
  return kExitSucceeded;
}

}  // namespace

int Main(int argc, char** argv) {
  CLI::App app{"cohort: run Kubeflow TFJob manifests on this machine, kubectl-style.", "cohort"};
  app.require_subcommand(1);
  app.set_version_flag("--version", VersionText("cohort"));
  app.footer(
      "Exit status: 0 success (run/wait: the job Succeeded), 1 the job Failed, 2 invalid input "
      "(spec, flags, name taken, unmapped image), 3 other errors (not found, I/O, wait timed "
      "out).\n"
      "State lives in $COHORT_HOME (default ~/.cohort).");

  std::string file, name, namespace_name = "default", replica;
  std::vector<std::string> image_flags, files, arguments;
  bool ignore_not_found = false, kubernetes = false;
  double timeout_seconds = 3600;
  job::JobFileOptions job_file_options;
  GetFlags get_flags;
  LogsFlags logs_flags;
  int exit_code = kExitSucceeded;
  CLI::Option* namespace_option = nullptr;  // the last command's -n, to tell whether it was given
  auto namespace_flag = [&]() -> std::optional<std::string> {
    if (namespace_option == nullptr || namespace_option->count() == 0) return std::nullopt;
    return namespace_name;
  };

  auto add_images = [&](CLI::App* command) {
    command->add_option("--image", image_flags,
                        "NAME=COMMAND: run containers of image NAME as COMMAND (repeatable)");
  };
  auto add_name = [&](CLI::App* command) {
    command->add_option("--name", job_file_options.job_name,
                        "the job's name, for an AI Platform job spec (default: its jobId)");
  };
  auto add_file = [&](CLI::App* command, const std::string& what) {
    command->add_option("FILE", file, what + ": a TFJob manifest or an AI Platform job spec")
        ->required();
    add_name(command);
  };
  // --kubernetes [--context C] [--request-timeout S]: the command goes to a cluster.
  KubeTarget kube_target;
  bool on_cluster = false;
  auto add_kubernetes = [&](CLI::App* command) {
    CLI::Option* cluster_flag = command->add_flag(
        "--kubernetes", on_cluster,
        "on the cluster of the kubeconfig's context, as a TFJob, not on this machine");
    command
        ->add_option("--context", kube_target.context,
                     "with --kubernetes: the kubeconfig context (default: current-context)")
        ->needs(cluster_flag);
    command
        ->add_option("--request-timeout", kube_target.request_timeout_seconds,
                     "with --kubernetes: seconds each request to the API server may take")
        ->check(CLI::PositiveNumber)
        ->capture_default_str()
        ->needs(cluster_flag);
  };
  // The target with -n when it was given (else the context's namespace).
  auto cluster_target = [&](const std::optional<std::string>& namespace_given) {
    KubeTarget target = kube_target;
    target.namespace_flag = namespace_given;
    return target;
  };
  auto add_namespace = [&](CLI::App* command) {
    CLI::Option* option =
        command->add_option("-n,--namespace", namespace_name, "the job's namespace")
            ->capture_default_str();
    command->preparse_callback([&namespace_option, option](size_t) { namespace_option = option; });
  };

  CLI::App* run = app.add_subcommand("run", "Run a TFJob in the foreground (Ctrl-C stops it)");
  add_file(run, "the job");
  add_images(run);
  add_namespace(run);
  run->callback([&] { exit_code = Run(file, job_file_options, image_flags, namespace_flag()); });

  CLI::App* submit =
      app.add_subcommand("submit", "Start a TFJob in the background and print its name");
  add_file(submit, "the job");
  add_images(submit);
  add_namespace(submit);
  add_kubernetes(submit);
  submit->callback([&] {
    if (on_cluster) {
      exit_code = KubeSubmit(cluster_target(namespace_flag()), file, job_file_options, false);
      return;
    }
    exit_code = Submit(file, job_file_options, image_flags, namespace_flag(), PrintName);
  });

  CLI::App* apply = app.add_subcommand(
      "apply", "kubectl apply -f: start a job in the background, or say how it differs");
  apply->add_option("-f,--filename", file, "the job file (- for standard input)")->required();
  add_name(apply);
  add_images(apply);
  add_namespace(apply);
  add_kubernetes(apply);
  apply->callback([&] {
    exit_code = on_cluster ? KubeApply(cluster_target(namespace_flag()), file, job_file_options)
                           : Apply(file, job_file_options, image_flags, namespace_flag());
  });

  CLI::App* create =
      app.add_subcommand("create", "kubectl create -f: start a job in the background");
  create->add_option("-f,--filename", file, "the job file (- for standard input)")->required();
  add_name(create);
  add_images(create);
  add_namespace(create);
  add_kubernetes(create);
  create->callback([&] {
    if (on_cluster) {
      exit_code = KubeSubmit(cluster_target(namespace_flag()), file, job_file_options, true);
      return;
    }
    exit_code = Submit(file, job_file_options, image_flags, namespace_flag(), PrintCreated);
  });

  CLI::App* supervise =
      app.add_subcommand("supervise", "Supervise a submitted job (used by submit)");
  supervise->group("");  // internal
  supervise->add_option("JOB", name)->required();
  add_namespace(supervise);
  add_images(supervise);
  int lock_fd = -1;
  supervise->add_option("--lock-fd", lock_fd, "the job's supervisor lock, inherited")->required();
  supervise->callback([&] {
    exit_code = Supervise(JobKey{namespace_name, name}, image_flags, lock_fd);
  });

  CLI::App* get = app.add_subcommand(
      "get", "List jobs (NAME STATE AGE) or show some; `get pods` lists their replicas as pods");
  get->add_option("ARGS", arguments,
                  "[tfjobs|pods] [NAME...] (default: all jobs of the namespace)");
  CLI::Option* get_namespace =
      get->add_option("-n,--namespace", get_flags.namespace_name, "the jobs' namespace")
          ->capture_default_str();
  get->add_flag("-A,--all-namespaces", get_flags.all_namespaces, "list jobs of every namespace");
  get->add_option("-o,--output", get_flags.output, "name, wide, json, yaml or jsonpath=TEMPLATE");
  get->add_flag("-w,--watch", get_flags.watch,
                "then print a row on each change, until the jobs finish (or --timeout)");
  get->add_option("--timeout", get_flags.timeout_seconds, "seconds to watch at most")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  add_kubernetes(get);
  get->callback([&] {
    if (!on_cluster) {
      exit_code = Get(arguments, get_flags);
      return;
    }
    if (get_flags.watch) {
      exit_code = Fail(kExitInvalidInput,
                       "get -w is not available with --kubernetes; use "
                       "`kubectl get tfjobs -w` or `cohort wait --kubernetes`");
      return;
    }
    std::optional<std::string> given;
    if (get_namespace->count() > 0) given = get_flags.namespace_name;
    exit_code = KubeGet(cluster_target(given), arguments,
                        KubeGetFlags{get_flags.all_namespaces, get_flags.output});
  });

  CLI::App* describe =
      app.add_subcommand("describe", "Show a job's spec, status, replicas and events");
  describe->add_option("JOB", arguments, "[tfjob] NAME...")->required();
  add_namespace(describe);
  add_kubernetes(describe);
  describe->callback([&] {
    exit_code = on_cluster ? KubeDescribe(cluster_target(namespace_flag()), arguments)
                           : Describe(arguments, namespace_name);
  });

  CLI::App* logs =
      app.add_subcommand("logs", "Print a job's replica logs, or a pod's (job-worker-0)");
  logs->add_option("JOB", name, "a job, or a pod: one of its replicas (cohort get pods)")
      ->required();
  CLI::Option* logs_namespace =
      logs->add_option("-n,--namespace", logs_flags.namespace_name, "the job's namespace")
          ->capture_default_str();
  logs->add_option("--replica", logs_flags.replica,
                   "one replica, e.g. worker-1 (default: all, prefixed)");
  logs->add_flag("-f,--follow", logs_flags.follow,
                 "keep printing until the job's supervisor exits");
  logs->add_option("--tail", logs_flags.tail, "the last N lines of each replica");
  logs->add_option("--since", logs_flags.since,
                   "the runs that wrote within DURATION (5s, 2m, 1h): log lines carry no time");
  logs->add_flag("-p,--previous", logs_flags.previous,
                 "the log of the run before the last restart");
  logs->add_option("-c,--container", logs_flags.container, "the container (tensorflow)");
  add_kubernetes(logs);
  logs->callback([&] {
    if (!on_cluster) {
      exit_code = Logs(name, logs_flags);
      return;
    }
    std::optional<std::string> given;
    if (logs_namespace->count() > 0) given = logs_flags.namespace_name;
    KubeLogsFlags flags;
    flags.replica = logs_flags.replica;
    flags.container = logs_flags.container;
    flags.previous = logs_flags.previous;
    flags.follow = logs_flags.follow;
    flags.tail = logs_flags.tail;
    flags.since = logs_flags.since;
    exit_code = KubeLogs(cluster_target(given), name, flags);
  });

  CLI::App* wait = app.add_subcommand("wait", "Wait until a job finishes; exit status as run");
  wait->add_option("JOB", name)->required();
  add_namespace(wait);
  wait->add_option("--timeout", timeout_seconds, "seconds to wait at most")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  add_kubernetes(wait);
  wait->callback([&] {
    exit_code = on_cluster ? KubeWait(cluster_target(namespace_flag()), name, timeout_seconds)
                           : Wait(name, namespace_name, timeout_seconds);
  });

  CLI::App* remove = app.add_subcommand("delete", "Stop jobs' replicas and remove their state");
  remove->add_option("JOB", arguments, "[tfjob] NAME...");
  remove->add_option("-f,--filename", file, "the job a file names (- for standard input)");
  add_namespace(remove);
  remove->add_flag("--ignore-not-found", ignore_not_found, "succeed if the job does not exist");
  add_kubernetes(remove);
  remove->callback([&] {
    exit_code =
        on_cluster ? KubeDelete(cluster_target(namespace_flag()), arguments, file, ignore_not_found)
                   : Delete(arguments, file, namespace_flag(), ignore_not_found);
  });

  CLI::App* suspend = app.add_subcommand(
      "suspend", "Suspend a job: stop its replicas and keep it (runPolicy.suspend: true)");
  suspend->add_option("JOB", name)->required();
  add_namespace(suspend);
  add_kubernetes(suspend);
  suspend->callback([&] {
    exit_code = on_cluster ? KubeSetSuspended(cluster_target(namespace_flag()), name, true)
                           : SetSuspended(name, namespace_name, true);
  });

  CLI::App* resume =
      app.add_subcommand("resume", "Resume a suspended job (runPolicy.suspend: false)");
  resume->add_option("JOB", name)->required();
  add_namespace(resume);
  add_kubernetes(resume);
  resume->callback([&] {
    exit_code = on_cluster ? KubeSetSuspended(cluster_target(namespace_flag()), name, false)
                           : SetSuspended(name, namespace_name, false);
  });

  CLI::App* validate = app.add_subcommand("validate", "Check job files without running them");
  validate->add_option("FILE", files, "TFJob manifests or AI Platform job specs")->required();
  add_name(validate);
  add_namespace(validate);
  add_images(validate);
  validate->callback(
      [&] { exit_code = Validate(files, job_file_options, image_flags, namespace_flag()); });

  CLI::App* tfconfig = app.add_subcommand("tfconfig", "Print the TF_CONFIG a replica would get");
  add_file(tfconfig, "the job");
  add_namespace(tfconfig);
  tfconfig->add_option("--replica", replica, "e.g. worker-1")->required();
  tfconfig->add_flag("--kubernetes", kubernetes,
                     "the in-cluster form (<job>-worker-1.<ns>.svc:2222)");
  tfconfig->callback(
      [&] { exit_code = TfConfig(file, job_file_options, replica, kubernetes, namespace_flag()); });

  CLI::App* convert = app.add_subcommand(
      "convert", "Print the TFJob a file amounts to (an AI Platform job spec, converted)");
  add_file(convert, "the job");
  add_namespace(convert);
  convert->callback([&] { exit_code = Convert(file, job_file_options, namespace_flag()); });

  kube::ObjectOptions object_options;
  CLI::App* manifests = app.add_subcommand(
      "manifests", "Print the pods, services (and PodGroup) the Kubeflow operator would create");
  add_file(manifests, "the job");
  add_namespace(manifests);
  manifests->add_option(
      "--cluster-domain", object_options.cluster_domain,
      "appended to TF_CONFIG's hosts (<pod>.<ns>.svc.DOMAIN), e.g. cluster.local");
  manifests->add_option("--gang-scheduler", object_options.gang_scheduler,
                        "volcano, or a scheduler-plugins scheduler name: add a PodGroup");
  manifests->callback(
      [&] { exit_code = Manifests(file, job_file_options, namespace_flag(), object_options); });

  ui::UiFlags ui_flags;
  CLI::App* ui_command = app.add_subcommand(
      "ui", "Serve the web dashboard of the jobs here (loopback; elsewhere with a token)");
  ui_command->add_option("--address", ui_flags.address, "the address to listen on")
      ->capture_default_str();
  ui_command->add_option("--port", ui_flags.port, "the port (0: any free one)")
      ->check(CLI::Range(0, 65535))
      ->capture_default_str();
  ui_command->add_option("--token", ui_flags.token,
                         "the token every request must carry (required off loopback)");
  ui_command->add_option("--token-file", ui_flags.token_file,
                         "a file whose first line is the token");
  ui_command->footer(
      "Serves until interrupted (SIGINT or SIGTERM: exit status 0). Exit status: 2 invalid flags "
      "(an address off loopback without a token), 3 the port cannot be bound (taken? --port "
      "another, or 0 for any).");
  ui_command->callback([&] {
    Status served = ui::ServeDashboard(ui_flags, exec::DefaultCohortHome(), std::cout);
    exit_code = served.ok() ? kExitSucceeded : Fail(ExitCodeFor(served), served.message());
  });

  CLI::App* crd = app.add_subcommand("crd", "Print the TFJob CustomResourceDefinition");
  crd->callback([&] { exit_code = Crd(); });

  CLI::App* operator_command = app.add_subcommand(
      "operator", "Run TFJobs on a Kubernetes cluster, as Kubeflow's operator (until SIGTERM)");
  kube::OperatorFlags operator_flags;
  std::string kubeconfig, context;
  operator_command->add_option("--kubeconfig", kubeconfig,
                               "kubeconfig file (default: $KUBECONFIG, ~/.kube/config; in a pod "
                               "without one: the service account)");
  operator_command->add_option("--context", context, "kubeconfig context (default: current)");
  operator_command->add_option("--namespace", operator_flags.namespace_name,
                               "only this namespace's TFJobs (default: every namespace)");
  operator_command->add_flag("--leader-elect", operator_flags.leader_elect,
                             "act only while holding the Lease, so one of several operators acts");
  operator_command->add_option("--lease-name", operator_flags.lease_name, "the Lease's name")
      ->capture_default_str();
  operator_command->add_option("--lease-namespace", operator_flags.lease_namespace,
                               "the Lease's namespace (default: $POD_NAMESPACE, else default)");
  operator_command->add_option("--cluster-domain", operator_flags.cluster_domain,
                               "appended to TF_CONFIG's hosts (<pod>.<ns>.svc.DOMAIN)");
  operator_command->add_option("--gang-scheduler", operator_flags.gang_scheduler,
                               "volcano, or a scheduler-plugins scheduler name: PodGroups");
  operator_command->add_option("--workers", operator_flags.workers, "jobs synced at once (1-64)")
      ->capture_default_str();
  operator_command
      ->add_option("--resync-period", operator_flags.resync_period_seconds,
                   "seconds between syncs of every job from the cache, changed or "
                   "not (0: never)")
      ->capture_default_str();
  operator_command->callback([&] { exit_code = RunOperator(operator_flags, kubeconfig, context); });

  // gcloud ai-platform jobs ...: the same jobs, in gcloud's words and columns.
  CLI::App* ai_platform =
      app.add_subcommand("ai-platform", "gcloud ai-platform's forms: ai-platform jobs ...");
  ai_platform->require_subcommand(1);
  CLI::App* ai_jobs = ai_platform->add_subcommand("jobs", "AI Platform training jobs, run here");
  ai_jobs->require_subcommand(1);
  std::string region, config;
  bool stream_logs = false;
  auto add_region = [&](CLI::App* command) {
    command->add_option("--region", region, "accepted for gcloud's sake; jobs run on this machine");
    add_namespace(command);
  };
  CLI::App* ai_submit = ai_jobs->add_subcommand("submit", "Submit a job");
  ai_submit->require_subcommand(1);
  CLI::App* training =
      ai_submit->add_subcommand("training", "Start a training job in the background");
  training->add_option("JOB", name,
                       "the job's ID (default: the config's jobId, else its file name)");
  training->add_option("--config", config, "the job spec (gcloud's config.yaml)")->required();
  training->add_flag("--stream-logs", stream_logs, "then print its logs until it finishes");
  add_images(training);
  add_region(training);
  training->callback([&] {
    exit_code = AiPlatformSubmit(name, config, image_flags, namespace_flag(), stream_logs);
  });
  CLI::App* ai_list = ai_jobs->add_subcommand("list", "List jobs: JOB_ID STATUS CREATED");
  add_region(ai_list);
  ai_list->callback([&] { exit_code = AiPlatformList(namespace_name); });
  CLI::App* ai_describe = ai_jobs->add_subcommand("describe", "Show a job as AI Platform's Job");
  ai_describe->add_option("JOB", name)->required();
  add_region(ai_describe);
  ai_describe->callback([&] { exit_code = AiPlatformDescribe(name, namespace_name); });
  CLI::App* ai_cancel =
      ai_jobs->add_subcommand("cancel", "Cancel a job: stop it, keep it listed (suspended)");
  ai_cancel->add_option("JOB", name)->required();
  add_region(ai_cancel);
  ai_cancel->callback([&] { exit_code = AiPlatformCancel(name, namespace_name); });
  CLI::App* ai_stream = ai_jobs->add_subcommand("stream-logs", "Print a job's logs as it runs");
  ai_stream->add_option("JOB", name)->required();
  add_region(ai_stream);
  ai_stream->callback([&] {
    logs_flags.namespace_name = namespace_name;
    logs_flags.follow = true;
    exit_code = Logs(name, logs_flags);
  });

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
  given = view::NormalizeArguments(given);
  std::reverse(given.begin(), given.end());  // CLI11 takes them last first
  try {
    app.parse(given);
  } catch (const CLI::ParseError& error) {
    int code = app.exit(error);
    return code == 0 ? kExitSucceeded : kExitInvalidInput;
  }
  return exit_code;
}

}  // namespace cohort::cli

int main(int argc, char** argv) { return cohort::cli::Main(argc, argv); }
