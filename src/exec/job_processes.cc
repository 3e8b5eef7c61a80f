#include "exec/job_processes.h"

#include <unistd.h>

#include <cctype>
#include <csignal>
#include <filesystem>
#include <set>
#include <thread>

#include "base/file.h"

namespace cohort::exec {
namespace {

// The kernel bounds a process's environment (and arguments) by the stack limit; far below this.
constexpr size_t kMaxEnvironmentBytes = size_t{16} << 20;

bool IsPidName(const std::string& name) {
  if (name.empty()) return false;
  for (char c : name) {
    if (!std::isdigit(static_cast<unsigned char>(c))) return false;
  }
  return true;
}

}  // namespace

bool EnvironmentCarriesSecret(const std::string& environment, const std::string& secret) {
  if (secret.empty()) return false;
  const std::string wanted = "COHORT_JOB_SECRET=" + secret;
  size_t start = 0;
  while (start < environment.size()) {
    size_t end = environment.find('\0', start);
    if (end == std::string::npos) end = environment.size();
    if (environment.compare(start, end - start, wanted) == 0) return true;
    start = end + 1;
  }
  return false;
}

std::vector<pid_t> FindJobProcesses(const std::string& secret) {
  std::vector<pid_t> found;
  if (secret.empty()) return found;
  const pid_t self = getpid();
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator("/proc", error)) {
    const std::string name = entry.path().filename().string();
    if (!IsPidName(name)) continue;
    const pid_t pid = static_cast<pid_t>(std::stol(name));
    if (pid == self) continue;
    // Gone meanwhile, another user's or a kernel thread: unreadable or empty, and not the job's.
    StatusOr<std::string> environment =
        ReadWholeFile(entry.path() / "environ", kMaxEnvironmentBytes);
    if (environment.ok() && EnvironmentCarriesSecret(*environment, secret)) found.push_back(pid);
  }
  return found;
}

StatusOr<int> KillJobProcesses(const std::string& secret, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  std::set<pid_t> killed;
  while (true) {
    std::vector<pid_t> left = FindJobProcesses(secret);
    // A killed process keeps its environment until its parent reaps it: a zombie is done.
    std::vector<pid_t> alive;
    for (pid_t pid : left) {
      StatusOr<std::string> stat = ReadWholeFile("/proc/" + std::to_string(pid) + "/stat", 4096);
      const size_t paren = stat.ok() ? stat->rfind(')') : std::string::npos;
      const bool zombie =
          paren != std::string::npos && paren + 2 < stat->size() && (*stat)[paren + 2] == 'Z';
      if (!zombie) alive.push_back(pid);
    }
    if (alive.empty()) return static_cast<int>(killed.size());
    if (std::chrono::steady_clock::now() >= deadline) {
      std::string pids;
      for (pid_t pid : alive) pids += (pids.empty() ? "" : ", ") + std::to_string(pid);
      return Status::DeadlineExceeded("processes of the job still run " +
                                      std::to_string(timeout.count()) + " ms after SIGKILL: pids " +
                                      pids);
    }
    for (pid_t pid : alive) {
      if (kill(pid, SIGKILL) == 0) killed.insert(pid);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

}  // namespace cohort::exec
