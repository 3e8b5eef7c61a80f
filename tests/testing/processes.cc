#include "testing/processes.h"

#include <signal.h>
#include <sys/wait.h>

#include <algorithm>
#include <filesystem>
#include <thread>

#include "testing/files.h"

namespace cohort::testing {

bool ProcessAlive(pid_t pid) {
  if (pid <= 0 || kill(pid, 0) != 0) return false;
  std::string stat = ReadText("/proc/" + std::to_string(pid) + "/stat");
  size_t close_paren = stat.rfind(')');
  return close_paren == std::string::npos || close_paren + 2 >= stat.size() ||
         stat[close_paren + 2] != 'Z';
}

int WaitForChild(pid_t pid, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (true) {
    int status = 0;
    if (waitpid(pid, &status, WNOHANG) == pid) {
      if (WIFEXITED(status)) return WEXITSTATUS(status);
      return 128 + WTERMSIG(status);
    }
    if (std::chrono::steady_clock::now() >= deadline) return -1;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

std::vector<pid_t> ProcessesWithEnvironment(const std::map<std::string, std::string>& environment) {
  std::vector<pid_t> pids;
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator("/proc", error)) {
    const std::string name = entry.path().filename().string();
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::string variables = ReadText(entry.path() / "environ");
    std::replace(variables.begin(), variables.end(), '\0', '\n');
    variables = "\n" + variables;
    bool matches = true;
    for (const auto& [variable, value] : environment) {
      if (variables.find("\n" + variable + "=" + value + "\n") == std::string::npos) {
        matches = false;
        break;
      }
    }
    const pid_t pid = static_cast<pid_t>(std::stol(name));
    if (matches && ProcessAlive(pid)) pids.push_back(pid);
  }
  return pids;
}

}  // namespace cohort::testing
