#include "exec/local_jobs.h"

#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <csignal>
#include <cstdlib>
#include <thread>

#include "base/file.h"
#include "exec/free_ports.h"
#include "exec/job_outputs.h"
#include "exec/job_processes.h"
#include "exec/local_process_backend.h"
#include "exec/log_follower.h"
#include "exec/replica_environment.h"
#include "exec/supervisor_loss.h"
#include "job/job_secret.h"
#include "job/reconciler.h"
#include "job/yaml_document.h"

namespace cohort::exec {
namespace {

// The controller that SIGINT, SIGTERM and SIGHUP stop while this process supervises a job.
std::atomic<JobController*> stopped_by_signals{nullptr};

void OnStopSignal(int signal_number) {
  if (JobController* controller = stopped_by_signals.load()) controller->RequestStop(signal_number);
}

}  // namespace

StatusOr<ImageMap> LocalJobs::LoadImages(const std::vector<std::string>& image_flags) const {
  ImageMap images;
  for (const std::string& flag : image_flags) COHORT_RETURN_IF_ERROR(images.AddFlag(flag));
  COHORT_RETURN_IF_ERROR(images.LoadFile(store_.home() / "images"));
  return images;
}

StatusOr<std::map<std::string, int>> LocalJobs::ReservePorts(const job::Job& job) {
  int total = 0;
  for (const auto& [type, spec] : job.replica_specs) total += spec.replicas;
  StatusOr<std::vector<int>> ports = ReserveFreePorts(total);
  if (!ports.ok()) return ports.status();
  std::map<std::string, int> by_replica;
  size_t next = 0;
  for (const auto& [type, spec] : job.replica_specs) {
    for (int index = 0; index < spec.replicas; ++index) {
      by_replica[ShortReplicaName(type, index)] = (*ports)[next++];
    }
  }
  return by_replica;
}

StatusOr<std::vector<job::LogPolicy>> LocalJobs::LoadConfigLogPolicies() const {
  const std::filesystem::path path = store_.home() / "config";
  StatusOr<std::string> text = ReadWholeFile(path, job::kMaxYamlBytes);
  if (!text.ok() && text.status().code() == Status::Code::kNotFound) {
    return std::vector<job::LogPolicy>{};
  }
  if (!text.ok()) return text.status();
  StatusOr<std::vector<job::YamlDocument>> documents = job::ReadYamlDocuments(*text, path.string());
  if (!documents.ok()) return documents.status();
  if (documents->empty() || documents->front().root.is_null()) {
    return std::vector<job::LogPolicy>{};
  }
  const nlohmann::json& root = documents->front().root;
  if (documents->size() > 1 || !root.is_object()) {
    return Status::InvalidArgument(path.string() +
                                   ": must be one mapping, e.g. logPolicies: [...]");
  }
  for (const auto& [key, value] : root.items()) {
    if (key != "logPolicies") {
      return Status::InvalidArgument(path.string() + ": unknown setting \"" + key +
                                     "\" (known: logPolicies)");
    }
  }
  if (!root.contains("logPolicies")) return std::vector<job::LogPolicy>{};
  return job::ParseLogPolicies(root["logPolicies"], path.string() + ": logPolicies");
}

StatusOr<CreatedJob> LocalJobs::Create(const job::Job& job, const ImageMap& images) {
  // An image without a command is the request's to fix (--image): InvalidArgument, as a bad spec.
  if (Status mapped = images.CheckJob(job); !mapped.ok()) {
    return Status::InvalidArgument(mapped.message());
  }
  // A broken config is reported before the job exists, not by its supervisor.
  if (StatusOr<LogRotation> rotation = LogRotation::FromEnvironment(); !rotation.ok()) {
    return rotation.status();
  }
  if (StatusOr<std::vector<job::LogPolicy>> policies = LoadConfigLogPolicies(); !policies.ok()) {
    return policies.status();
  }
  StatusOr<std::map<std::string, int>> ports = ReservePorts(job);
  if (!ports.ok()) return ports.status();
  CreatedJob created{{job.metadata.namespace_name, job.metadata.name}, SupervisorLock()};
  COHORT_RETURN_IF_ERROR(store_.CreateJob(job, &created.lock));
  Status written = store_.WriteEndpoints(created.key, *ports);
  if (written.ok()) {
    StatusOr<std::string> secret = job::NewJobSecret();
    written = secret.ok() ? store_.WriteSecret(created.key, *secret) : secret.status();
  }
  // A job that cannot start is not left behind to be reported as one whose supervisor died.
  if (!written.ok()) {
    if (Status deleted = store_.DeleteJob(created.key); !deleted.ok()) {
      return written.WithContext(
          "job " + created.key.ToString() + " could not be prepared, and its half-made directory " +
          store_.JobDirectory(created.key).string() +
          " could not be removed (remove it by hand: " + deleted.message() + ")");
    }
    return written;
  }
  return created;
}

uint64_t RunOutputBytesPerSecond() {
  const char* text = std::getenv("COHORT_RUN_OUTPUT_BYTES_PER_SECOND");
  if (text == nullptr || *text == '\0') return kDefaultRunOutputBytesPerSecond;
  char* end = nullptr;
  const unsigned long long value = std::strtoull(text, &end, 10);
  return end != nullptr && *end == '\0' ? value : kDefaultRunOutputBytesPerSecond;
}

StatusOr<job::JobStatus> LocalJobs::Supervise(CreatedJob job, const ImageMap& images,
                                              ControllerObserver observer,
                                              const LogLineCallback& on_log_line) {
  const JobKey& key = job.key;
  // Taking the lock only now would leave the job visible without a holder since its creation,
  // and any command run in that moment would mark it Failed as abandoned.
  if (!job.lock.held()) {
    return Status::FailedPrecondition("the supervisor of " + key.ToString() +
                                      " was started without the job's supervisor lock");
  }
  StatusOr<std::map<std::string, int>> ports = store_.ReadEndpoints(key);
  if (!ports.ok()) return ports.status();
  StatusOr<std::string> secret = store_.ReadSecret(key);
  if (!secret.ok()) return secret.status();

  Watchdog watchdog;
  LocalProcessBackend::Options options;
  options.logs_directory = store_.JobDirectory(key) / "logs";
  options.termination_messages_directory = store_.JobDirectory(key) / "termination";
  options.summaries_directory = store_.JobDirectory(key) / kSummariesDirectoryName;
  options.ports = std::move(*ports);
  options.secret = std::move(*secret);
  options.images = images;
  StatusOr<LogRotation> rotation = LogRotation::FromEnvironment();
  if (!rotation.ok()) return rotation.status();
  options.log_rotation = *rotation;
  options.on_process_started = [&watchdog](pid_t group) { watchdog.Watch(group); };
  // What a replica leaves running when it exits (a setsid child, a daemon, with or without the
  // job's environment) is handed to this process, which ends it (process.h).
  if (prctl(PR_SET_CHILD_SUBREAPER, 1) != 0) {
    return Status::Unavailable("cannot make the supervisor of " + key.ToString() +
                               " a child subreaper: " + ErrnoMessage(errno));
  }
  options.end_leftovers = true;
  options.is_helper = [&watchdog](pid_t child) { return child == watchdog.pid(); };
  StatusOr<std::unique_ptr<LocalProcessBackend>> backend =
      LocalProcessBackend::Create(std::move(options));
  if (!backend.ok()) return backend.status();
  LogFollower follower(store_.JobDirectory(key) / "logs");
  follower.LimitRate(RunOutputBytesPerSecond());
  if (on_log_line) {
    observer.on_tick = [&follower, &on_log_line, on_tick = std::move(observer.on_tick)] {
      follower.Poll(on_log_line);
      if (on_tick) on_tick();
    };
  }
  StatusOr<std::vector<job::LogPolicy>> config_policies = LoadConfigLogPolicies();
  if (!config_policies.ok()) return config_policies.status();
  JobController controller(store_, **backend, key, std::move(observer));
  controller.AddLogPolicies(std::move(*config_policies));
  COHORT_RETURN_IF_ERROR(controller.Load());

  COHORT_RETURN_IF_ERROR(WriteFileAtomically(store_.JobDirectory(key) / "supervisor.pid",
                                             std::to_string(getpid()) + "\n"));
  stopped_by_signals.store(&controller);
  struct sigaction action {};
  action.sa_handler = OnStopSignal;
  action.sa_flags = SA_RESTART;
  for (int signal_number : {SIGINT, SIGTERM, SIGHUP}) sigaction(signal_number, &action, nullptr);
  signal(SIGPIPE, SIG_IGN);
  Status watching = watchdog.Start(store_, key, job.lock.fd());
  StatusOr<job::JobStatus> final_status =
      watching.ok() ? controller.Run() : StatusOr<job::JobStatus>(watching);
  // Whatever the last replicas left is ended before the job is reported finished.
  (*backend)->EndLeftovers();
  watchdog.Dismiss();
  stopped_by_signals.store(nullptr);
  for (int signal_number : {SIGINT, SIGTERM, SIGHUP}) signal(signal_number, SIG_DFL);
  if (on_log_line) follower.Poll(on_log_line, /*flush_partial=*/true);
  return final_status;
}

Status LocalJobs::Detach(CreatedJob job, const std::vector<std::string>& image_flags) {
  const JobKey& key = job.key;
  std::filesystem::path directory = store_.JobDirectory(key);
  // The supervisor is this same program, detached from the terminal in its own session. It
  // inherits the job's lock, which this process has held since before the job was visible, so
  // the job never looks abandoned while its supervisor starts.
  const int lock_fd = job.lock.fd();
  std::vector<std::string> arguments = {"cohort",
                                        "supervise",
                                        key.name,
                                        "-n",
                                        key.namespace_name,
                                        "--lock-fd",
                                        std::to_string(lock_fd)};
  for (const std::string& flag : image_flags) arguments.insert(arguments.end(), {"--image", flag});
  pid_t pid = fork();
  if (pid < 0) return Status::Unavailable("cannot start the supervisor: fork failed");
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
  job.lock = SupervisorLock();
  // Return once the supervisor has taken the job over (it writes its pid), so that a failure to
  // start is reported here rather than found later.
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!std::filesystem::exists(directory / "supervisor.pid")) {
    int wait_status;
    if (waitpid(pid, &wait_status, WNOHANG) == pid) {
      // A job can finish, and with ttlSecondsAfterFinished 0 be deleted, between two looks.
      if (WIFEXITED(wait_status) && WEXITSTATUS(wait_status) == 0) break;
      return Status::Internal("the supervisor of " + key.ToString() + " exited at once; see " +
                              (directory / "supervisor.log").string());
    }
    if (std::chrono::steady_clock::now() > deadline) {
      return Status::DeadlineExceeded("timed out after 10 s waiting for the supervisor of " +
                                      key.ToString() + " to start; see " +
                                      (directory / "supervisor.log").string());
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return Status::OK();
}

StatusOr<CreatedJob> LocalJobs::Adopt(const JobKey& key, int lock_fd) {
  CreatedJob job{key, SupervisorLock()};
  COHORT_RETURN_IF_ERROR(job.lock.Adopt(lock_fd, store_.JobDirectory(key)));
  return job;
}

StatusOr<std::vector<JobKey>> LocalJobs::Lookup(const std::string& name,
                                                const std::string& namespace_name,
                                                bool all_namespaces) {
  std::vector<JobKey> keys;
  if (!name.empty()) {
    JobKey key{namespace_name, name};
    if (!store_.Exists(key)) return Status::NotFound("job " + key.ToString() + " not found");
    keys.push_back(key);
  } else {
    keys = store_.ListJobs(all_namespaces ? "" : namespace_name);
  }
  Tidy(keys);
  std::vector<JobKey> present;
  for (const JobKey& key : keys) {
    if (store_.Exists(key)) present.push_back(key);
  }
  return present;
}

void LocalJobs::Tidy(const std::vector<JobKey>& keys) {
  for (const JobKey& key : keys) {
    RecoverIfSupervisorLost(store_, key);
    StatusOr<job::JobStatus> status = store_.ReadStatus(key);
    if (!status.ok() || !job::IsFinished(*status)) continue;
    if (SupervisorLock::IsHeld(store_.JobDirectory(key))) continue;
    StatusOr<job::Job> spec = store_.ReadSpec(key);
    if (!spec.ok()) continue;
    job::ReconcileResult result = job::Reconcile(*spec, *status, {}, Clock::now());
    for (const job::Action& action : result.actions) {
      if (action.kind != job::Action::Kind::kDeleteJob) continue;
      // As the controller does (reconciler.h): a failed deletion is recorded with the job.
      if (Status deleted = store_.DeleteJob(key); !deleted.ok()) {
        IgnoreError(
            store_.AppendEvents(key,
                                {job::Event{"Warning", "FailedDeleteJob",
                                            "Error deleting: " + deleted.message(), Clock::now()}}),
            "the deletion is tried again at the next tidy; there is nowhere else to say so");
      }
    }
  }
}

bool LocalJobs::IsLive(const JobKey& key) {
  RecoverIfSupervisorLost(store_, key);
  return SupervisorLock::IsHeld(store_.JobDirectory(key));
}

Status LocalJobs::DeleteAndPurge(
    const JobKey& key, const std::function<void(const std::filesystem::path&)>& on_removed) {
  if (!store_.Exists(key)) return Status::NotFound("job " + key.ToString() + " not found");
  StatusOr<job::Job> spec = store_.ReadSpec(key);
  if (!spec.ok()) {
    return Status::FailedPrecondition(
        "job " + key.ToString() +
        " is not deleted: --purge needs its spec to know what it wrote (" +
        spec.status().message() + "); delete it without --purge");
  }
  COHORT_RETURN_IF_ERROR(Delete(key));
  return RemoveJobOutputs(JobOutputDirectories(*spec), on_removed);
}

Status LocalJobs::Delete(const JobKey& key) {
  if (!store_.Exists(key)) return Status::NotFound("job " + key.ToString() + " not found");
  std::filesystem::path directory = store_.JobDirectory(key);
  if (SupervisorLock::IsHeld(directory)) {
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
    while (SupervisorLock::IsHeld(directory)) {
      const auto now = std::chrono::steady_clock::now();
      if (supervisor <= 0 && (supervisor = read_pid()) > 0) kill(supervisor, SIGTERM);
      if (supervisor <= 0 && now > started + std::chrono::seconds(30)) {
        return Status::DeadlineExceeded("the supervisor of " + key.ToString() +
                                        " holds the job but wrote no supervisor.pid in 30 s; see " +
                                        (directory / "supervisor.log").string());
      }
      if (supervisor > 0 && now > kill_at) {
        kill(supervisor, SIGKILL);
        kill_at += std::chrono::seconds(5);
      }
      if (now > started + std::chrono::seconds(120)) {
        return Status::DeadlineExceeded("the supervisor of " + key.ToString() + " (pid " +
                                        std::to_string(supervisor) +
                                        ") still holds the job 120 s after it was told to stop");
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    // The watchdog marks and cleans up after a killed supervisor; give it a moment.
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  // Whatever still runs of the replicas (their supervisor and its watchdog both died, or a
  // replica's child left its process group) is found by the job's secret and killed before the
  // job's state, and with it the secret, is removed.
  if (StatusOr<std::string> secret = store_.ReadSecret(key); secret.ok()) {
    StatusOr<int> killed = KillJobProcesses(*secret, std::chrono::seconds(10));
    if (!killed.ok()) {
      return killed.status().WithContext("job " + key.ToString() + " is not deleted");
    }
  }
  return store_.DeleteJob(key);
}

Status LocalJobs::SetSuspended(const JobKey& key, bool suspended) {
  return store_.SetSuspended(key, suspended);
}

StatusOr<job::JobStatus> LocalJobs::Wait(const JobKey& key, double timeout_seconds) {
  auto deadline = std::chrono::steady_clock::now() +
                  std::chrono::milliseconds(static_cast<int64_t>(timeout_seconds * 1000));
  // When status.json first failed to read back in a row of failures, if it did.
  std::optional<std::chrono::steady_clock::time_point> unreadable_since;
  while (true) {
    if (!store_.Exists(key)) return Status::NotFound("job " + key.ToString() + " not found");
    RecoverIfSupervisorLost(store_, key);
    StatusOr<job::JobStatus> status = store_.ReadStatus(key);
    if (!status.ok()) {
      // Whoever rewrites the file (the supervisor, a command marking the job) may leave it
      // unreadable for a moment (a file system that is not POSIX about rename, a hand edit): only
      // a file that stays unreadable is an answer.
      const auto now = std::chrono::steady_clock::now();
      if (!unreadable_since) unreadable_since = now;
      if (now - *unreadable_since >= kUnreadableStatusPatience) {
        return status.status().WithContext(
            "waiting for job " + key.ToString() + ": its status stayed unreadable for " +
            std::to_string(
                std::chrono::duration_cast<std::chrono::seconds>(kUnreadableStatusPatience)
                    .count()) +
            " s");
      }
      if (now >= deadline) {
        return Status::DeadlineExceeded(
            "timed out after " + std::to_string(static_cast<int64_t>(timeout_seconds)) +
            " s waiting for job " + key.ToString() +
            " to finish (its status unreadable: " + status.status().message() + ")");
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      continue;
    }
    unreadable_since.reset();
    if (job::IsFinished(*status)) return status;
    if (std::chrono::steady_clock::now() >= deadline) {
      return Status::DeadlineExceeded("timed out after " +
                                      std::to_string(static_cast<int64_t>(timeout_seconds)) +
                                      " s waiting for job " + key.ToString() +
                                      " to finish (state " + job::JobState(*status) + ")");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

Status LocalJobs::CheckReplica(const JobKey& key, const std::string& replica) {
  StatusOr<std::map<std::string, int>> endpoints = store_.ReadEndpoints(key);
  if (!endpoints.ok() || endpoints->count(replica)) return Status::OK();
  std::string known;
  for (const auto& [candidate, port] : *endpoints) known += (known.empty() ? "" : ", ") + candidate;
  return Status::InvalidArgument("job " + key.ToString() + " has no replica \"" + replica +
                                 "\"; its replicas are " + known);
}

Status LocalJobs::ReadLogs(const JobKey& key, const std::string& replica, bool follow,
                           const LogLineCallback& on_line, const std::function<void()>& on_wait,
                           const LogSelection& selection) {
  std::filesystem::path logs_directory = store_.JobDirectory(key) / "logs";
  std::vector<std::string> replicas;
  if (!replica.empty()) {
    replicas.push_back(replica);
  } else {
    std::error_code error;
    for (const auto& entry : std::filesystem::directory_iterator(logs_directory, error)) {
      if (entry.path().extension() == ".log") replicas.push_back(entry.path().stem().string());
    }
    std::sort(replicas.begin(), replicas.end());
  }
  // Every replica's span is chosen before anything is printed, so that an error (no previous
  // run) comes alone. Each file is read from where its span begins, in bounded pieces.
  const bool following = follow && !selection.previous;
  struct Selected {
    std::string replica;
    FileReader file;
    LogSpan span;
  };
  std::vector<Selected> selected;
  const Time now = Clock::now();
  for (const std::string& name : replicas) {
    const std::filesystem::path path = logs_directory / (name + ".log");
    StatusOr<FileReader> file = FileReader::Open(path);
    if (file.status().code() == Status::Code::kNotFound) continue;
    if (!file.ok()) return file.status();
    struct stat info {};
    const Time last_written =
        stat(path.c_str(), &info) == 0 ? Clock::from_time_t(info.st_mtime) : now;
    StatusOr<LogSpan> span = SelectLogSpan(*file, name, selection, last_written, now);
    if (!span.ok()) return span.status();
    selected.push_back(Selected{name, std::move(*file), *span});
  }
  LogFollower follower(logs_directory, replica);
  for (const Selected& part : selected) {
    StatusOr<uint64_t> delivered =
        StreamLogLines(part.file, part.span, /*flush_partial=*/!following,
                       [&](std::string_view line) { on_line(part.replica, std::string(line)); });
    if (!delivered.ok()) return delivered.status();
    // Following goes on after the last whole line printed (or, for a selection of nothing, from
    // where the file ended when it was opened).
    follower.StartAt(part.replica, *delivered);
  }
  if (!following) return Status::OK();
  // Following ends when the job's supervisor is gone: nothing will be written any more.
  while (IsLive(key)) {
    if (on_wait) on_wait();
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    follower.Poll(on_line);
  }
  follower.Poll(on_line, /*flush_partial=*/true);
  return Status::OK();
}

StatusOr<std::map<std::string, std::string>> LocalJobs::LocalReplicaEnvironment(
    const job::Job& job, const std::string& replica_type, int index, bool* live) {
  JobKey key{job.metadata.namespace_name, job.metadata.name};
  StatusOr<std::map<std::string, int>> ports = store_.ReadEndpoints(key);
  *live = ports.ok();
  if (!*live) ports = ReservePorts(job);
  if (!ports.ok()) return ports.status();
  return ReplicaEnvironment(job, replica_type, index, *ports, "");
}

}  // namespace cohort::exec
