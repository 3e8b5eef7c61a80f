#include "exec/process.h"

#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <thread>

#include "base/file.h"

namespace cohort::exec {
namespace {

// Only async-signal-safe calls between fork and exec: write what went wrong to the log and exit.
[[noreturn]] void FailInChild(int log_fd, const char* what, const char* detail) {
  const char* reason = std::strerror(errno);
  const char* parts[] = {"cohort: ", what, " ", detail, ": ", reason, "\n"};
  for (const char* part : parts) {
    ssize_t ignored = write(log_fd, part, std::strlen(part));
    (void)ignored;
  }
  _exit(127);
}

}  // namespace

StatusOr<pid_t> StartProcess(const ProcessSpec& spec) {
  if (spec.argv.empty()) return Status::InvalidArgument("no command to run");

  int log_fd = spec.output_fd >= 0
                   ? fcntl(spec.output_fd, F_DUPFD_CLOEXEC, 0)
                   : open(spec.log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (log_fd < 0) {
    return Status::IOError("cannot open log " + spec.log_path + ": " + ErrnoMessage(errno));
  }

  // Everything the child needs is prepared before fork: after it, only async-signal-safe calls.
  std::vector<char*> argv;
  for (const std::string& arg : spec.argv) argv.push_back(const_cast<char*>(arg.c_str()));
  argv.push_back(nullptr);
  std::vector<std::string> environment_strings;
  for (const auto& [name, value] : spec.environment)
    environment_strings.push_back(name + "=" + value);
  std::vector<char*> environment;
  for (std::string& entry : environment_strings) environment.push_back(entry.data());
  environment.push_back(nullptr);
  pid_t parent = getpid();

  pid_t pid = fork();
  if (pid < 0) {
    int error = errno;
    close(log_fd);
    return Status::Unavailable(std::string("fork failed: ") + ErrnoMessage(error));
  }
  if (pid == 0) {
    setpgid(0, 0);
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    // The replica adopts whatever its descendants orphan (a daemon's double fork, a setsid
    // child whose parent exited), so that while it runs they stay in its tree; once it exits
    // they pass to the supervisor, which ends them (EndLeftoverChildren). Kept across exec.
    prctl(PR_SET_CHILD_SUBREAPER, 1);
    if (getppid() != parent) _exit(137);  // the parent died before prctl took effect
    // Signals the supervisor blocks or ignores must not leak into the workload.
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    for (int signal_number : {SIGINT, SIGTERM, SIGPIPE, SIGCHLD, SIGHUP}) {
      ::signal(signal_number, SIG_DFL);
    }
    int null_fd = open("/dev/null", O_RDONLY);
    if (null_fd >= 0) dup2(null_fd, STDIN_FILENO);
    dup2(log_fd, STDOUT_FILENO);
    dup2(log_fd, STDERR_FILENO);
    if (!spec.working_directory.empty() && chdir(spec.working_directory.c_str()) != 0) {
      FailInChild(STDERR_FILENO, "cannot enter workingDir", spec.working_directory.c_str());
    }
    // execvpe searches PATH of the child's environment, as a container runtime would.
    execvpe(argv[0], argv.data(), environment.data());
    FailInChild(STDERR_FILENO, "cannot execute", argv[0]);
  }
  setpgid(pid, pid);  // also from the parent, so the group exists before we ever signal it
  close(log_fd);
  return pid;
}

void SignalProcessGroup(pid_t pid, int signal) {
  if (pid > 0) kill(-pid, signal);
}

int ExitCodeFromWaitStatus(int wait_status) {
  if (WIFEXITED(wait_status)) return WEXITSTATUS(wait_status);
  if (WIFSIGNALED(wait_status)) return 128 + WTERMSIG(wait_status);
  return 255;
}

std::vector<pid_t> ChildrenOf(pid_t parent) {
  std::vector<pid_t> children;
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator("/proc", error)) {
    const std::string name = entry.path().filename().string();
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
    // /proc/<pid>/stat: "pid (comm) state ppid ...", comm may hold spaces and parentheses.
    StatusOr<std::string> stat = ReadWholeFile(entry.path() / "stat", 4096);
    if (!stat.ok()) continue;  // gone meanwhile
    const size_t close = stat->rfind(')');
    if (close == std::string::npos) continue;
    int parent_of_entry = 0;
    char state = 0;
    if (std::sscanf(stat->c_str() + close + 1, " %c %d", &state, &parent_of_entry) != 2) continue;
    if (parent_of_entry == parent) children.push_back(static_cast<pid_t>(std::stol(name)));
  }
  return children;
}

int EndLeftoverChildren(const std::function<bool(pid_t)>& keep,
                        std::chrono::milliseconds patience) {
  int ended = 0;
  const auto deadline = std::chrono::steady_clock::now() + patience;
  // Killing one may hand its own children to this process: look again until none is left.
  while (std::chrono::steady_clock::now() < deadline) {
    std::vector<pid_t> leftovers;
    for (pid_t child : ChildrenOf(getpid())) {
      if (!keep(child)) leftovers.push_back(child);
    }
    if (leftovers.empty()) break;
    for (pid_t child : leftovers) kill(child, SIGKILL);
    for (pid_t child : leftovers) {
      // SIGKILLed: it is gone at once unless it is stuck in the kernel; reap it within bounds.
      while (waitpid(child, nullptr, WNOHANG) == 0 && std::chrono::steady_clock::now() < deadline) {
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
      ++ended;
    }
  }
  return ended;
}

bool TryReap(pid_t pid, int* exit_code, int* signal) {
  int wait_status = 0;
  pid_t result = waitpid(pid, &wait_status, WNOHANG);
  if (signal != nullptr) *signal = 0;
  if (result == pid) {
    *exit_code = ExitCodeFromWaitStatus(wait_status);
    if (signal != nullptr && WIFSIGNALED(wait_status)) *signal = WTERMSIG(wait_status);
    return true;
  }
  if (result < 0 && errno == ECHILD) {  // reaped elsewhere; treat as lost
    *exit_code = 255;
    return true;
  }
  return false;
}

}  // namespace cohort::exec
