#include "testing/host.h"

#include <cstdlib>
#include <sstream>

#include "testing/files.h"

namespace cohort::testing {

bool RunningInCi() {
  const char* value = std::getenv("CI");
  if (value == nullptr) return false;
  const std::string text = value;
  return !text.empty() && text != "0" && text != "false";
}

std::string CrossProcessReadsRefused() {
  std::string scope = ReadText("/proc/sys/kernel/yama/ptrace_scope");
  while (!scope.empty() && (scope.back() == '\n' || scope.back() == ' ')) scope.pop_back();
  // CapEff in /proc/self/status is a hexadecimal mask; CAP_SYS_PTRACE is bit 19.
  bool has_ptrace_capability = false;
  std::istringstream status(ReadText("/proc/self/status"));
  for (std::string line; std::getline(status, line);) {
    if (line.rfind("CapEff:", 0) == 0) {
      has_ptrace_capability = (std::strtoull(line.c_str() + 7, nullptr, 16) >> 19) & 1;
    }
  }
  return "the kernel refuses to let one process read another's memory (process_vm_readv): "
         "kernel.yama.ptrace_scope is " +
         (scope.empty() ? std::string("not present") : scope) + " and this process " +
         (has_ptrace_capability ? "has" : "lacks") +
         " CAP_SYS_PTRACE (ptrace_scope 0 or 1 with CAP_SYS_PTRACE lets the test run)";
}

}  // namespace cohort::testing
