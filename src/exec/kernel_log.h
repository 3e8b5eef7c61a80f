// What the kernel's own log says about a process: whether its OOM killer killed it.
//
// A replica killed by SIGKILL may have been killed by anyone; Cohort says "OOM-killed" only when
// the kernel says so: a record of /dev/kmsg, written after the process started, naming its pid
// ("Out of memory: Killed process 1234 (python3) ...", "Memory cgroup out of memory: Killed
// process 1234 ...", "oom-kill:...,task=python3,pid=1234,uid=0"). Where the log cannot be read
// (kernel.dmesg_restrict without CAP_SYSLOG, no /dev/kmsg in a container), nothing is claimed.
//
// Only the replica's own process is recognised: the kernel's record names a pid, not its
// process group, so the OOM kill of a child (a shell script's python) shows as that child's
// death, which the replica's exit code reports as the replica saw it.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

namespace cohort::exec {

// At most this much of the kernel's log is read (its ring buffer is usually 256 KiB to 1 MiB).
inline constexpr size_t kMaxKernelLogBytes = 4 * 1024 * 1024;

// The pid that one /dev/kmsg record ("<priority>,<sequence>,<microseconds>,<flags>;<text>")
// says the OOM killer killed, and when (microseconds since boot, CLOCK_MONOTONIC); nullopt for
// any other record.
struct OomKill {
  pid_t pid = 0;
  int64_t at_microseconds = 0;
};
std::optional<OomKill> ParseOomKillRecord(const std::string& record);

// Whether the kernel's log records an OOM kill of `pid` at or after `since_microseconds`
// (CLOCK_MONOTONIC, as std::chrono::steady_clock gives it). False when the log cannot be read.
bool KernelLogRecordsOomKill(pid_t pid, int64_t since_microseconds);

}  // namespace cohort::exec
