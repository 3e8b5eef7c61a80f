// cohort: run Kubeflow TFJob manifests on this machine, kubectl-style.
//
//   cohort run FILE        run a job in the foreground, streaming its replicas' output
//   cohort submit FILE     start it in the background (a detached supervisor) and print its name
//   cohort get / describe / logs / wait / delete JOB
//   cohort validate FILE... / cohort tfconfig FILE --replica worker-1
//   cohort convert FILE    print the TFJob a file amounts to (an AI Platform job spec converted)
//
// FILE is a TFJob manifest or a Google AI Platform training job spec (job/job_file.h).
//
// This file only wires commands to flags and prints: every command is carried out by
// exec::LocalJobs (exec/local_jobs.h) on the job state under $COHORT_HOME (exec/job_store.h),
// and printed with the read model (view/job_view.h). There is no daemon.
#include <CLI/CLI.hpp>
#include <iostream>

#include "apps/cohort/exit_codes.h"
#include "apps/cohort/job_file.h"
#include "exec/image_map.h"
#include "exec/job_controller.h"
#include "exec/local_jobs.h"
#include "exec/replica_environment.h"
#include "job/cluster_builder.h"
#include "job/job_kind.h"
#include "job/reconciler.h"
#include "job/spec_writer.h"
#include "view/job_view.h"

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
StatusOr<PreparedJob> PrepareJob(LocalJobs& jobs, const std::string& file,
                                 const job::JobFileOptions& options,
                                 const std::vector<std::string>& image_flags) {
  StatusOr<LoadedJob> loaded = LoadJobFile(file, options);
  if (!loaded.ok()) return loaded.status();
  PrintWarnings(*loaded);
  StatusOr<exec::ImageMap> images = jobs.LoadImages(image_flags);
  if (!images.ok()) return images.status();
  StatusOr<exec::CreatedJob> created = jobs.Create(loaded->job, *images);
  if (!created.ok()) return created.status();
  return PreparedJob{std::move(*created), std::move(*images)};
}

int Run(const std::string& file, const job::JobFileOptions& options,
        const std::vector<std::string>& image_flags) {
  LocalJobs jobs(exec::DefaultCohortHome());
  StatusOr<PreparedJob> prepared = PrepareJob(jobs, file, options, image_flags);
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

int Submit(const std::string& file, const job::JobFileOptions& options,
           const std::vector<std::string>& image_flags) {
  LocalJobs jobs(exec::DefaultCohortHome());
  StatusOr<PreparedJob> prepared = PrepareJob(jobs, file, options, image_flags);
  if (!prepared.ok()) return Fail(ExitCodeFor(prepared.status()), prepared.status().message());
  JobKey key = prepared->created.key;
  if (Status detached = jobs.Detach(std::move(prepared->created), image_flags); !detached.ok()) {
    return Fail(kExitError, detached.message());
  }
  std::cout << key.name << std::endl;
  return kExitSucceeded;
}

// ---- get / describe / logs / wait / delete ----

int Get(const std::string& name, const std::string& namespace_name, bool all_namespaces,
        const std::string& output) {
  LocalJobs jobs(exec::DefaultCohortHome());
  StatusOr<std::vector<JobKey>> present = jobs.Lookup(name, namespace_name, all_namespaces);
  if (!present.ok()) return Fail(kExitError, present.status().message());
  if (output == "json" || output == "yaml") {
    nlohmann::json result = view::JobObjects(jobs.store(), *present, /*list=*/name.empty());
    std::cout << (output == "json" ? result.dump(4) : job::ToYaml(result)) << "\n";
    return kExitSucceeded;
  }
  if (present->empty()) {
    std::cerr << "No resources found"
              << (all_namespaces ? "" : " in " + namespace_name + " namespace") << ".\n";
    return kExitSucceeded;
  }
  std::cout << view::JobTable(jobs.store(), *present, output == "wide", all_namespaces);
  return kExitSucceeded;
}

int Describe(const std::string& name, const std::string& namespace_name) {
  LocalJobs jobs(exec::DefaultCohortHome());
  JobKey key{namespace_name, name};
  if (StatusOr<std::vector<JobKey>> found = jobs.Lookup(name, namespace_name, false); !found.ok()) {
    return Fail(kExitError, found.status().message());
  }
  StatusOr<std::string> text = view::DescribeJob(jobs.store(), key);
  if (!text.ok()) return Fail(kExitError, text.status().message());
  std::cout << *text;
  return kExitSucceeded;
}

int Logs(const std::string& name, const std::string& namespace_name, const std::string& replica,
         bool follow) {
  LocalJobs jobs(exec::DefaultCohortHome());
  JobKey key{namespace_name, name};
  if (!jobs.store().Exists(key)) return Fail(kExitError, "job " + key.ToString() + " not found");
  if (!replica.empty()) {
    if (Status known = jobs.CheckReplica(key, replica); !known.ok()) {
      return Fail(kExitInvalidInput, known.message());
    }
  }
  auto print = [&](const std::string& from, const std::string& line) {
    if (replica.empty()) std::cout << "[" << from << "] ";
    std::cout << line << "\n";
  };
  jobs.ReadLogs(key, replica, follow, print, [] { std::cout.flush(); });
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

// The resource name kubectl prints for a job ("tfjob.kubeflow.org"), from its saved spec.
std::string ResourceName(LocalJobs& jobs, const JobKey& key) {
  StatusOr<job::Job> spec = jobs.store().ReadSpec(key);
  const job::JobKind& kind =
      spec.ok() ? *spec->job_kind : *job::KindRegistry::Default().kinds().front();
  return kind.ResourceName();
}

int Delete(const std::string& name, const std::string& namespace_name, bool ignore_not_found) {
  LocalJobs jobs(exec::DefaultCohortHome());
  JobKey key{namespace_name, name};
  if (!jobs.store().Exists(key)) {
    if (ignore_not_found) return kExitSucceeded;
    return Fail(kExitError, "job " + key.ToString() + " not found");
  }
  const std::string resource = ResourceName(jobs, key);
  if (Status deleted = jobs.Delete(key); !deleted.ok()) return Fail(kExitError, deleted.message());
  std::cout << resource << " \"" << key.name << "\" deleted\n";
  return kExitSucceeded;
}

int SetSuspended(const std::string& name, const std::string& namespace_name, bool suspended) {
  LocalJobs jobs(exec::DefaultCohortHome());
  JobKey key{namespace_name, name};
  if (Status status = jobs.SetSuspended(key, suspended); !status.ok()) {
    return Fail(kExitError, status.message());
  }
  std::cout << ResourceName(jobs, key) << "/" << key.name << (suspended ? " suspended" : " resumed")
            << "\n";
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

int Validate(const std::vector<std::string>& files, const job::JobFileOptions& options) {
  int exit_code = kExitSucceeded;
  for (const std::string& file : files) {
    StatusOr<LoadedJob> loaded = LoadJobFile(file, options);
    if (!loaded.ok()) {
      std::cerr << loaded.status().message() << "\n";
      exit_code = kExitInvalidInput;
      continue;
    }
    PrintWarnings(*loaded);
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
int Convert(const std::string& file, const job::JobFileOptions& options) {
  StatusOr<LoadedJob> loaded = LoadJobFile(file, options);
  if (!loaded.ok()) return Fail(kExitInvalidInput, loaded.status().message());
  PrintWarnings(*loaded);
  std::cout << job::ToYaml(job::ToJson(loaded->job));
  return kExitSucceeded;
}

int TfConfig(const std::string& file, const job::JobFileOptions& options,
             const std::string& replica, bool kubernetes) {
  StatusOr<LoadedJob> loaded = LoadJobFile(file, options);
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

}  // namespace

int Main(int argc, char** argv) {
  CLI::App app{"cohort: run Kubeflow TFJob manifests on this machine, kubectl-style.", "cohort"};
  app.require_subcommand(1);
  app.footer(
      "Exit status: 0 success (run/wait: the job Succeeded), 1 the job Failed, 2 invalid input "
      "(spec, flags, name taken, unmapped image), 3 other errors (not found, I/O, wait timed "
      "out).\n"
      "State lives in $COHORT_HOME (default ~/.cohort).");

  std::string file, name, namespace_name = "default", replica, output;
  std::vector<std::string> image_flags, files;
  bool follow = false, all_namespaces = false, ignore_not_found = false, kubernetes = false;
  double timeout_seconds = 3600;
  job::JobFileOptions job_file_options;
  int exit_code = kExitSucceeded;

  auto add_images = [&](CLI::App* command) {
    command->add_option("--image", image_flags,
                        "NAME=COMMAND: run containers of image NAME as COMMAND (repeatable)");
  };
  auto add_file = [&](CLI::App* command, const std::string& what) {
    command->add_option("FILE", file, what + ": a TFJob manifest or an AI Platform job spec")
        ->required();
    command->add_option("--name", job_file_options.job_name,
                        "the job's name, for an AI Platform job spec (default: its jobId)");
  };
  auto add_namespace = [&](CLI::App* command) {
    command->add_option("-n,--namespace", namespace_name, "the job's namespace")
        ->capture_default_str();
  };

  CLI::App* run = app.add_subcommand("run", "Run a TFJob in the foreground (Ctrl-C stops it)");
  add_file(run, "the job");
  add_images(run);
  run->callback([&] { exit_code = Run(file, job_file_options, image_flags); });

  CLI::App* submit =
      app.add_subcommand("submit", "Start a TFJob in the background and print its name");
  add_file(submit, "the job");
  add_images(submit);
  submit->callback([&] { exit_code = Submit(file, job_file_options, image_flags); });

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

  CLI::App* get = app.add_subcommand("get", "List jobs (NAME STATE AGE), or show one");
  get->add_option("JOB", name, "a job name (default: all jobs of the namespace)");
  add_namespace(get);
  get->add_flag("-A,--all-namespaces", all_namespaces, "list jobs of every namespace");
  get->add_option("-o,--output", output, "wide, json or yaml")
      ->check(CLI::IsMember({"wide", "json", "yaml"}));
  get->callback([&] { exit_code = Get(name, namespace_name, all_namespaces, output); });

  CLI::App* describe =
      app.add_subcommand("describe", "Show a job's spec, status, replicas and events");
  describe->add_option("JOB", name)->required();
  add_namespace(describe);
  describe->callback([&] { exit_code = Describe(name, namespace_name); });

  CLI::App* logs = app.add_subcommand("logs", "Print a job's replica logs");
  logs->add_option("JOB", name)->required();
  add_namespace(logs);
  logs->add_option("--replica", replica, "one replica, e.g. worker-1 (default: all, prefixed)");
  logs->add_flag("-f,--follow", follow, "keep printing until the job's supervisor exits");
  logs->callback([&] { exit_code = Logs(name, namespace_name, replica, follow); });

  CLI::App* wait = app.add_subcommand("wait", "Wait until a job finishes; exit status as run");
  wait->add_option("JOB", name)->required();
  add_namespace(wait);
  wait->add_option("--timeout", timeout_seconds, "seconds to wait at most")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  wait->callback([&] { exit_code = Wait(name, namespace_name, timeout_seconds); });

  CLI::App* remove = app.add_subcommand("delete", "Stop a job's replicas and remove its state");
  remove->add_option("JOB", name)->required();
  add_namespace(remove);
  remove->add_flag("--ignore-not-found", ignore_not_found, "succeed if the job does not exist");
  remove->callback([&] { exit_code = Delete(name, namespace_name, ignore_not_found); });

  CLI::App* suspend = app.add_subcommand(
      "suspend", "Suspend a job: stop its replicas and keep it (runPolicy.suspend: true)");
  suspend->add_option("JOB", name)->required();
  add_namespace(suspend);
  suspend->callback([&] { exit_code = SetSuspended(name, namespace_name, true); });

  CLI::App* resume =
      app.add_subcommand("resume", "Resume a suspended job (runPolicy.suspend: false)");
  resume->add_option("JOB", name)->required();
  add_namespace(resume);
  resume->callback([&] { exit_code = SetSuspended(name, namespace_name, false); });

  CLI::App* validate = app.add_subcommand("validate", "Check job files without running them");
  validate->add_option("FILE", files, "TFJob manifests or AI Platform job specs")->required();
  validate->add_option("--name", job_file_options.job_name,
                       "the job's name, for an AI Platform job spec (default: its jobId)");
  validate->callback([&] { exit_code = Validate(files, job_file_options); });

  CLI::App* tfconfig = app.add_subcommand("tfconfig", "Print the TF_CONFIG a replica would get");
  add_file(tfconfig, "the job");
  tfconfig->add_option("--replica", replica, "e.g. worker-1")->required();
  tfconfig->add_flag("--kubernetes", kubernetes,
                     "the in-cluster form (<job>-worker-1.<ns>.svc:2222)");
  tfconfig->callback([&] { exit_code = TfConfig(file, job_file_options, replica, kubernetes); });

  CLI::App* convert = app.add_subcommand(
      "convert", "Print the TFJob a file amounts to (an AI Platform job spec, converted)");
  add_file(convert, "the job");
  convert->callback([&] { exit_code = Convert(file, job_file_options); });

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& error) {
    int code = app.exit(error);
    return code == 0 ? kExitSucceeded : kExitInvalidInput;
  }
  return exit_code;
}

}  // namespace cohort::cli

int main(int argc, char** argv) { return cohort::cli::Main(argc, argv); }
