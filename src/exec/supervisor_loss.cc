#include "exec/supervisor_loss.h"

#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>
#include <set>

#include "base/file.h"
#include "exec/job_processes.h"
#include "exec/supervisor_lock.h"
#include "job/job_kind.h"
#include "job/reconciler.h"

namespace cohort::exec {

Status MarkSupervisorLost(JobStore& store, const JobKey& key, const std::string& supervisor,
                          const std::string& aftermath) {
  StatusOr<job::JobStatus> status = store.ReadStatus(key);
  if (!status.ok()) return status.status();
  if (job::IsFinished(*status)) return Status::OK();
  Time now = Clock::now();
  StatusOr<job::Job> spec = store.ReadSpec(key);
  const job::JobKind& kind =
      spec.ok() ? *spec->job_kind : *job::KindRegistry::Default().kinds().front();
  std::string message =
      kind.name() + " " + key.ToString() + " has failed because its Cohort supervisor " +
      (supervisor.empty() ? "" : supervisor + " ") + "died before the job finished" +
      (aftermath.empty() ? "" : "; " + aftermath) + ".";
  job::SetCondition(*status, job::kConditionFailed, "True", kind.Reason(job::kConditionFailed),
                    message, now);
  status->completion_time = now;
  for (auto& [type, replica_status] : status->replica_statuses) {
    replica_status.failed += replica_status.active;
    replica_status.active = 0;
  }
  COHORT_RETURN_IF_ERROR(store.WriteStatus(key, *status));
  return store.AppendEvents(key, {job::Event{"Warning", "SupervisorLost", message, now}});
}

bool RecoverIfSupervisorLost(JobStore& store, const JobKey& key) {
  StatusOr<job::JobStatus> status = store.ReadStatus(key);
  if (!status.ok() || job::IsFinished(*status)) return false;
  if (SupervisorLock::IsHeld(store.JobDirectory(key))) return false;
  std::string pid;
  if (StatusOr<std::string> text = ReadWholeFile(store.JobDirectory(key) / "supervisor.pid");
      text.ok()) {
    pid = "(pid " + text->substr(0, text->find('\n')) + ")";
  }
  // What the replicas left behind when the watchdog died too (their children: the replicas
  // themselves died with the supervisor), found by the job's secret.
  std::string aftermath;
  if (StatusOr<std::string> secret = store.ReadSecret(key); secret.ok()) {
    StatusOr<int> killed = KillJobProcesses(*secret, std::chrono::seconds(5));
    if (!killed.ok()) {
      aftermath = killed.status().message();
    } else if (*killed > 0) {
      aftermath = std::to_string(*killed) + " process" + (*killed == 1 ? " was" : "es were") +
                  " left of its replicas and killed";
    }
  }
  return MarkSupervisorLost(store, key, pid, aftermath).ok();
}

namespace {

// The watchdog's whole life: collect process groups until the pipe closes. "done" first means
// the supervisor finished cleanly; otherwise it died, and the watchdog cleans up after it.
[[noreturn]] void RunWatchdog(int read_fd, JobStore store, const JobKey& key, pid_t supervisor) {
  std::set<pid_t> groups;
  bool dismissed = false;
  std::string buffer;
  char chunk[256];
  while (true) {
    ssize_t n = read(read_fd, chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    buffer.append(chunk, static_cast<size_t>(n));
    size_t newline;
    while ((newline = buffer.find('\n')) != std::string::npos) {
      std::string line = buffer.substr(0, newline);
      buffer.erase(0, newline + 1);
      if (line == "done") {
        dismissed = true;
      } else {
        groups.insert(static_cast<pid_t>(std::atoi(line.c_str())));
      }
    }
  }
  if (!dismissed) {
    for (pid_t group : groups) kill(-group, SIGKILL);
    IgnoreError(
        MarkSupervisorLost(store, key, "(pid " + std::to_string(supervisor) + ")",
                           "its watchdog killed the replicas' process groups"),
        "the next command that finds the lock free marks the job again (RecoverIfSupervisorLost)");
  }
  _exit(0);
}

}  // namespace

Status Watchdog::Start(JobStore store, JobKey key, int close_in_child) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0)
    return Status::Unavailable(std::string("pipe: ") + ErrnoMessage(errno));
  pid_t supervisor = getpid();
  pid_t pid = fork();
  if (pid < 0) return Status::Unavailable(std::string("fork: ") + ErrnoMessage(errno));
  if (pid == 0) {
    close(fds[1]);
    if (close_in_child >= 0) close(close_in_child);
    // Its own process group, so a Ctrl-C or a kill of the supervisor's group leaves it alive to
    // clean up; it ignores the signals a terminal sends.
    setpgid(0, 0);
    signal(SIGINT, SIG_IGN);
    signal(SIGHUP, SIG_IGN);
    signal(SIGTERM, SIG_IGN);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    RunWatchdog(fds[0], std::move(store), key, supervisor);
  }
  close(fds[0]);
  pipe_fd_ = fds[1];
  pid_ = pid;
  return Status::OK();
}

void Watchdog::Watch(pid_t process_group) {
  if (pipe_fd_ < 0) return;
  std::string line = std::to_string(process_group) + "\n";
  ssize_t ignored = write(pipe_fd_, line.data(), line.size());
  (void)ignored;
}

void Watchdog::Dismiss() {
  if (pipe_fd_ < 0) return;
  ssize_t ignored = write(pipe_fd_, "done\n", 5);
  (void)ignored;
  close(pipe_fd_);
  pipe_fd_ = -1;
  int wait_status;
  waitpid(pid_, &wait_status, 0);
}

Watchdog::~Watchdog() { Dismiss(); }

}  // namespace cohort::exec
