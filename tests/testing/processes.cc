#include "testing/processes.h"

#include <signal.h>
#include <sys/wait.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <filesystem>
#include <thread>

#include "testing/files.h"

namespace cohort::testing {

CommandResult RunCommand(const std::string& command) {
  CommandResult result;
  std::FILE* pipe = ::popen((command + " 2>&1").c_str(), "r");
  if (pipe == nullptr) return result;
  std::array<char, 4096> buffer;
  while (size_t n = std::fread(buffer.data(), 1, buffer.size(), pipe)) {
    result.output.append(buffer.data(), n);
  }
  const int status = ::pclose(pipe);
  if (WIFEXITED(status)) {
    result.exit_code = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    result.exit_code = 128 + WTERMSIG(status);
  }
  return result;
}

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

int WaitForChildOrSignal(pid_t pid, std::chrono::milliseconds timeout, int signal) {
  const int exit_code = WaitForChild(pid, timeout);
  if (exit_code == -1) {
    kill(pid, signal);
    waitpid(pid, nullptr, 0);
  }
  return exit_code;
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

std::string ShellQuote(const std::string& text) {
  std::string quoted = "'";
  for (char c : text) {
    if (c == '\'') {
      quoted += "'\\''";
    } else {
      quoted += c;
    }
  }
  return quoted + "'";
}

}  // namespace cohort::testing
