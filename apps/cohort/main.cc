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
// Every command reads and writes the job's state under $COHORT_HOME (exec/job_store.h); there is
// no daemon.
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <csignal>
#include <iostream>
#include <thread>

#include "apps/cohort/exit_codes.h"
#include "apps/cohort/job_file.h"
#include "apps/cohort/job_view.h"
#include "exec/free_ports.h"
#include "exec/image_map.h"
#include "exec/job_store.h"
#include "exec/local_executor.h"
#include "exec/log_follower.h"
#include "exec/supervisor_lock.h"
#include "exec/supervisor_loss.h"
#include "job/cluster_builder.h"
#include "job/reconciler.h"
#include "job/spec_writer.h"

namespace cohort::cli {
namespace {

using exec::JobKey;
using exec::JobStore;

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

StatusOr<exec::ImageMap> BuildImageMap(const JobStore& store,
                                       const std::vector<std::string>& flags) {
  exec::ImageMap images;
  for (const std::string& flag : flags) COHORT_RETURN_IF_ERROR(images.AddFlag(flag));
  COHORT_RETURN_IF_ERROR(images.LoadFile(store.home() / "images"));
  return images;
}

// Jobs whose TTL has run out are deleted by whichever command looks first: there is no daemon to
// do it on time, and the reconciler decides when (it returns a kDeleteJob action). Jobs whose
// supervisor died are marked Failed the same way.
void TidyJobs(JobStore& store, const std::vector<JobKey>& keys) {
  for (const JobKey& key : keys) {
    exec::RecoverIfSupervisorLost(store, key);
    StatusOr<job::JobStatus> status = store.ReadStatus(key);
    if (!status.ok() || !job::IsFinished(*status)) continue;
    if (exec::SupervisorLock::IsHeld(store.JobDirectory(key))) continue;
    StatusOr<job::Job> spec = store.ReadSpec(key);
    if (!spec.ok()) continue;
    job::ReconcileResult result = job::Reconcile(*spec, *status, {}, Clock::now());
    for (const job::Action& action : result.actions) {
      if (action.kind != job::Action::Kind::kDeleteJob) continue;
      // As the executor does (reconciler.h): a failed deletion is recorded with the job.
      if (Status deleted = store.DeleteJob(key); !deleted.ok()) {
        store.AppendEvents(key, {job::Event{"Warning", "FailedDeleteJob",
                                            "Error deleting: " + deleted.message(), Clock::now()}});
      }
    }
  }
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

// What `run` and `submit` share: read the manifest, map images, create the job on disk.
struct PreparedJob {
  JobKey key;
  exec::ImageMap images;
  exec::SupervisorLock lock;  // held since before the job was visible; for its supervisor
};
StatusOr<PreparedJob> PrepareJob(JobStore& store, const std::string& file,
                                 const job::JobFileOptions& options,
                                 const std::vector<std::string>& image_flags) {
  StatusOr<LoadedJob> loaded = LoadJobFile(file, options);
  if (!loaded.ok()) return loaded.status();
  PrintWarnings(*loaded);
  StatusOr<exec::ImageMap> images = BuildImageMap(store, image_flags);
  if (!images.ok()) return images.status();
  exec::SupervisorLock lock;
  COHORT_RETURN_IF_ERROR(exec::PrepareLocalJob(store, loaded->job, *images, &lock));
  return PreparedJob{{loaded->job.metadata.namespace_name, loaded->job.metadata.name},
                     std::move(*images),
                     std::move(lock)};
}

int Run(const std::string& file, const job::JobFileOptions& options,
        const std::vector<std::string>& image_flags) {
  JobStore store(exec::DefaultCohortHome());
  StatusOr<PreparedJob> prepared = PrepareJob(store, file, options, image_flags);
  if (!prepared.ok()) return Fail(ExitCodeFor(prepared.status()), prepared.status().message());
  JobKey key = prepared->key;
  std::cout << "cohort: job " << key.ToString() << " created; logs in "
            << store.JobDirectory(key) / "logs" << std::endl;
  exec::LogFollower follower(store.JobDirectory(key) / "logs");
  auto print_line = [](const std::string& replica, const std::string& line) {
    std::cout << "[" << replica << "] " << line << "\n";
  };
  exec::ExecutorObserver observer;
  observer.on_condition = [&](const job::JobCondition& condition) {
    PrintCondition(key, condition);
  };
  observer.on_event = PrintEvent;
  observer.on_tick = [&] {
    follower.Poll(print_line);
    std::cout.flush();
  };
  exec::LocalExecutor executor(store, key, std::move(prepared->lock), std::move(prepared->images),
                               observer);
  StatusOr<job::JobStatus> final_status = executor.Run();
  follower.Poll(print_line, /*flush_partial=*/true);
  if (!final_status.ok()) return Fail(kExitError, final_status.status().message());
  std::cout << "cohort: job " << key.ToString() << " " << job::JobState(*final_status) << std::endl;
  return ExitCodeForJob(*final_status);
}

// ---- submit / supervise ----

// `lock_fd` is the job's supervisor lock, inherited from `cohort submit` across exec.
int Supervise(const JobKey& key, const std::vector<std::string>& image_flags, int lock_fd) {
  JobStore store(exec::DefaultCohortHome());
  exec::SupervisorLock lock;
  if (Status adopted = lock.Adopt(lock_fd, store.JobDirectory(key)); !adopted.ok()) {
    return Fail(kExitError, adopted.message());
  }
  StatusOr<exec::ImageMap> images = BuildImageMap(store, image_flags);
  if (!images.ok()) return Fail(kExitInvalidInput, images.status().message());
  exec::LocalExecutor executor(store, key, std::move(lock), std::move(*images));
  StatusOr<job::JobStatus> final_status = executor.Run();
  if (!final_status.ok()) return Fail(kExitError, final_status.status().message());
  return ExitCodeForJob(*final_status);
}

int Submit(const std::string& file, const job::JobFileOptions& options,
           const std::vector<std::string>& image_flags) {
  JobStore store(exec::DefaultCohortHome());
  StatusOr<PreparedJob> prepared = PrepareJob(store, file, options, image_flags);
  if (!prepared.ok()) return Fail(ExitCodeFor(prepared.status()), prepared.status().message());
  JobKey key = prepared->key;
  std::filesystem::path directory = store.JobDirectory(key);

  // The supervisor is this same program, detached from the terminal in its own session. It
  // inherits the job's lock, which this process has held since before the job was visible, so
  // the job never looks abandoned while its supervisor starts.
  const int lock_fd = prepared->lock.fd();
  std::vector<std::string> arguments = {"cohort",
                                        "supervise",
                                        key.name,
                                        "-n",
                                        key.namespace_name,
                                        "--lock-fd",
                                        std::to_string(lock_fd)};
  for (const std::string& flag : image_flags) arguments.insert(arguments.end(), {"--image", flag});
  pid_t pid = fork();
  if (pid < 0) return Fail(kExitError, "cannot start the supervisor: fork failed");
  if (pid == 0) {
    setsid();
    fcntl(lock_fd, F_SETFD, 0);  // keep the lock across exec; the supervisor marks it again
    int log = open((directory / "supervisor.log").c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    int null = open("/dev/null", O_RDONLY);
    if (null >= 0) dup2(null, STDIN_FILENO);
    if (log >= 0) dup2(log, STDOUT_FILENO), dup2(log, STDERR_FILENO);
    // Only the standard descriptors carry them on: the supervisor and its replicas inherit no
    // stray copy.
    if (null > STDERR_FILENO) close(null);
    if (log > STDERR_FILENO) close(log);
    std::vector<char*> argv;
    for (std::string& argument : arguments) argv.push_back(argument.data());
    argv.push_back(nullptr);
    execv("/proc/self/exe", argv.data());
    _exit(127);
  }
  // The supervisor holds the lock now through the same open file description; closing this
  // process's descriptor does not release it.
  prepared->lock = exec::SupervisorLock();
  // Return once the supervisor has taken the job over (it writes its pid), so that a failure to
  // start is reported here rather than found later.
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!std::filesystem::exists(directory / "supervisor.pid")) {
    int wait_status;
    if (waitpid(pid, &wait_status, WNOHANG) == pid) {
      // A job can finish, and with ttlSecondsAfterFinished 0 be deleted, between two looks.
      if (WIFEXITED(wait_status) && WEXITSTATUS(wait_status) == kExitSucceeded) break;
      return Fail(kExitError, "the supervisor of " + key.ToString() + " exited at once; see " +
                                  (directory / "supervisor.log").string());
    }
    if (std::chrono::steady_clock::now() > deadline) {
      return Fail(kExitError, "timed out after 10 s waiting for the supervisor of " +
                                  key.ToString() + " to start; see " +
                                  (directory / "supervisor.log").string());
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  std::cout << key.name << std::endl;
  return kExitSucceeded;
}

// ---- get / describe / logs / wait / delete ----

int Get(const std::string& name, const std::string& namespace_name, bool all_namespaces,
        const std::string& output) {
  JobStore store(exec::DefaultCohortHome());
  std::vector<JobKey> keys;
  if (!name.empty()) {
    JobKey key{namespace_name, name};
    if (!store.Exists(key)) return Fail(kExitError, "job " + key.ToString() + " not found");
    keys.push_back(key);
  } else {
    keys = store.ListJobs(all_namespaces ? "" : namespace_name);
  }
  TidyJobs(store, keys);
  std::vector<JobKey> present;
  for (const JobKey& key : keys) {
    if (store.Exists(key)) present.push_back(key);
  }
  if (output == "json" || output == "yaml") {
    nlohmann::json items = nlohmann::json::array();
    for (const JobKey& key : present) {
      StatusOr<nlohmann::json> object = JobObject(store, key);
      if (object.ok()) items.push_back(*object);
    }
    nlohmann::json result =
        name.empty() ? nlohmann::json{{"apiVersion", "v1"}, {"kind", "List"}, {"items", items}}
                     : (items.empty() ? nlohmann::json::object() : items[0]);
    std::cout << (output == "json" ? result.dump(4) : job::ToYaml(result)) << "\n";
    return kExitSucceeded;
  }
  if (present.empty()) {
    std::cerr << "No resources found"
              << (all_namespaces ? "" : " in " + namespace_name + " namespace") << ".\n";
    return kExitSucceeded;
  }
  std::cout << JobTable(store, present, output == "wide", all_namespaces);
  return kExitSucceeded;
}

int Describe(const std::string& name, const std::string& namespace_name) {
  JobStore store(exec::DefaultCohortHome());
  JobKey key{namespace_name, name};
  if (!store.Exists(key)) return Fail(kExitError, "job " + key.ToString() + " not found");
  TidyJobs(store, {key});
  StatusOr<std::string> text = DescribeJob(store, key);
  if (!text.ok()) return Fail(kExitError, text.status().message());
  std::cout << *text;
  return kExitSucceeded;
}

bool JobIsLive(JobStore& store, const JobKey& key) {
  exec::RecoverIfSupervisorLost(store, key);
  return exec::SupervisorLock::IsHeld(store.JobDirectory(key));
}

int Logs(const std::string& name, const std::string& namespace_name, const std::string& replica,
         bool follow) {
  JobStore store(exec::DefaultCohortHome());
  JobKey key{namespace_name, name};
  if (!store.Exists(key)) return Fail(kExitError, "job " + key.ToString() + " not found");
  std::filesystem::path logs = store.JobDirectory(key) / "logs";
  if (!replica.empty()) {
    StatusOr<std::map<std::string, int>> endpoints = store.ReadEndpoints(key);
    if (endpoints.ok() && !endpoints->count(replica)) {
      std::string known;
      for (const auto& [candidate, port] : *endpoints)
        known += (known.empty() ? "" : ", ") + candidate;
      return Fail(kExitInvalidInput, "job " + key.ToString() + " has no replica \"" + replica +
                                         "\"; its replicas are " + known);
    }
  }
  exec::LogFollower follower(logs, replica);
  auto print = [&](const std::string& from, const std::string& line) {
    if (replica.empty()) std::cout << "[" << from << "] ";
    std::cout << line << "\n";
  };
  follower.Poll(print);
  // Following ends when the job's supervisor is gone: nothing will be written any more.
  while (follow && JobIsLive(store, key)) {
    std::cout.flush();
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    follower.Poll(print);
  }
  follower.Poll(print, /*flush_partial=*/true);
  return kExitSucceeded;
}

int Wait(const std::string& name, const std::string& namespace_name, double timeout_seconds) {
  JobStore store(exec::DefaultCohortHome());
  JobKey key{namespace_name, name};
  auto deadline = std::chrono::steady_clock::now() +
                  std::chrono::milliseconds(static_cast<int64_t>(timeout_seconds * 1000));
  while (true) {
    if (!store.Exists(key)) return Fail(kExitError, "job " + key.ToString() + " not found");
    exec::RecoverIfSupervisorLost(store, key);
    StatusOr<job::JobStatus> status = store.ReadStatus(key);
    if (!status.ok()) return Fail(kExitError, status.status().message());
    if (job::IsFinished(*status)) {
      std::cout << key.name << " " << job::JobState(*status) << "\n";
      return ExitCodeForJob(*status);
    }
    if (std::chrono::steady_clock::now() >= deadline) {
      return Fail(kExitError, "timed out after " +
                                  std::to_string(static_cast<int64_t>(timeout_seconds)) +
                                  " s waiting for job " + key.ToString() + " to finish (state " +
                                  job::JobState(*status) + ")");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

int Delete(const std::string& name, const std::string& namespace_name, bool ignore_not_found) {
  JobStore store(exec::DefaultCohortHome());
  JobKey key{namespace_name, name};
  if (!store.Exists(key)) {
    if (ignore_not_found) return kExitSucceeded;
    return Fail(kExitError, "job " + key.ToString() + " not found");
  }
  std::filesystem::path directory = store.JobDirectory(key);
  if (exec::SupervisorLock::IsHeld(directory)) {
    // The supervisor stops the replicas (SIGTERM, then SIGKILL after their grace period) and
    // exits; if it does not in time, killing it makes its watchdog kill them.
    // A supervisor still starting holds the lock before it has written its pid: read the pid
    // until it is there.
    auto read_pid = [&directory]() -> pid_t {
      StatusOr<std::string> text = ReadWholeFile(directory / "supervisor.pid");
      return text.ok() ? static_cast<pid_t>(std::atoi(text->c_str())) : -1;
    };
    pid_t supervisor = -1;
    const auto started = std::chrono::steady_clock::now();
    auto kill_at = started + std::chrono::seconds(45);
    while (exec::SupervisorLock::IsHeld(directory)) {
      const auto now = std::chrono::steady_clock::now();
      if (supervisor <= 0 && (supervisor = read_pid()) > 0) kill(supervisor, SIGTERM);
      if (supervisor <= 0 && now > started + std::chrono::seconds(30)) {
        return Fail(kExitError, "the supervisor of " + key.ToString() +
                                    " holds the job but wrote no supervisor.pid in 30 s; see " +
                                    (directory / "supervisor.log").string());
      }
      if (supervisor > 0 && now > kill_at) {
        kill(supervisor, SIGKILL);
        kill_at += std::chrono::seconds(5);
      }
      if (now > started + std::chrono::seconds(120)) {
        return Fail(kExitError, "the supervisor of " + key.ToString() + " (pid " +
                                    std::to_string(supervisor) +
                                    ") still holds the job 120 s after it was told to stop");
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    // The watchdog marks and cleans up after a killed supervisor; give it a moment.
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  Status deleted = store.DeleteJob(key);
  if (!deleted.ok()) return Fail(kExitError, deleted.message());
  std::cout << "tfjob.kubeflow.org \"" << key.name << "\" deleted\n";
  return kExitSucceeded;
}

int SetSuspended(const std::string& name, const std::string& namespace_name, bool suspended) {
  JobStore store(exec::DefaultCohortHome());
  JobKey key{namespace_name, name};
  Status status = store.SetSuspended(key, suspended);
  if (!status.ok()) return Fail(kExitError, status.message());
  std::cout << "tfjob.kubeflow.org/" << key.name << (suspended ? " suspended" : " resumed") << "\n";
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
    JobStore store(exec::DefaultCohortHome());
    JobKey key{job.metadata.namespace_name, job.metadata.name};
    std::map<std::string, int> ports;
    if (StatusOr<std::map<std::string, int>> live = store.ReadEndpoints(key); live.ok()) {
      ports = *live;
    } else {
      std::cerr << "cohort: job " << key.ToString()
                << " is not running; showing freshly chosen local ports\n";
      int total = 0;
      for (const auto& [type, spec] : job.replica_specs) total += spec.replicas;
      StatusOr<std::vector<int>> free = exec::ReserveFreePorts(total);
      if (!free.ok()) return Fail(kExitError, free.status().message());
      size_t next = 0;
      for (const auto& [type, spec] : job.replica_specs) {
        for (int i = 0; i < spec.replicas; ++i)
          ports[exec::ShortReplicaName(type, i)] = (*free)[next++];
      }
    }
    std::map<std::string, std::string> environment =
        exec::ReplicaEnvironment(job, replica_type, index, ports, "");
    if (auto it = environment.find("TF_CONFIG"); it != environment.end()) tf_config = it->second;
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
