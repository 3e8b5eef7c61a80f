// Starting, signalling and reaping a replica's process.
//
// Each replica runs in its own process group, so that stopping it reaches every process the
// replica started (a shell script's children included). The child also asks the kernel to
// SIGKILL it if its parent dies (PR_SET_PDEATHSIG): together with the watchdog (watchdog.h) this
// means no replica outlives its supervisor.
//
// A process can leave the group (setsid, setpgid) and drop the job's environment. To end those
// too, each replica is a child subreaper (PR_SET_CHILD_SUBREAPER): what its descendants orphan
// is re-parented to it rather than to init, so the replica's tree holds every process it started.
// When the replica exits, the kernel hands that tree to the nearest subreaper above, the
// supervisor (LocalJobs makes itself one), whose only children are then its replicas, its
// watchdog and those leftovers: EndLeftoverChildren kills and reaps the leftovers. (cgroups v2
// would contain them without the supervisor, but need a delegated, writable hierarchy that a
// user's machine or a container seldom gives; the subreaper needs nothing.)
#pragma once

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "base/status.h"

namespace cohort::exec {

struct ProcessSpec {
  std::vector<std::string> argv;                   // argv[0] is looked up in PATH
  std::map<std::string, std::string> environment;  // the whole environment of the child
  std::string working_directory;                   // "" = inherit
  std::string log_path;                            // stdout and stderr are appended here
  // Or, when not -1, stdout and stderr are this descriptor (a pipe to the supervisor, which
  // writes the log itself: replica_log.h); log_path is then unused.
  int output_fd = -1;
};

// Forks and execs `spec`. Returns the child's pid, which is also its process group id. A command
// that cannot be executed (not found, not executable) makes the child exit with 127 after
// writing the reason to the log, as a shell does, so the failure is visible in `cohort logs`.
StatusOr<pid_t> StartProcess(const ProcessSpec& spec);

// Sends `signal` to the whole process group `pid`. A group that is already gone is not an error.
void SignalProcessGroup(pid_t pid, int signal);

// The exit code as a shell and Kubernetes report it: the exit status, or 128 + N for a death by
// signal N (SIGKILL = 137).
int ExitCodeFromWaitStatus(int wait_status);

// The pids of the processes whose parent is `parent`, from /proc.
std::vector<pid_t> ChildrenOf(pid_t parent);

// SIGKILLs and reaps every child of this process that `keep` does not claim, again and again
// while killing one hands its children to this process (as it does when this process is a
// subreaper), for at most `patience`. Returns how many it ended.
int EndLeftoverChildren(const std::function<bool(pid_t)>& keep, std::chrono::milliseconds patience);

// Reaps `pid` if it has exited. Returns true and sets `exit_code` when it has, and `signal` (when
// not null) to the signal that killed it, 0 when it exited by itself (a shell's exit 137 is not
// a SIGKILL).
bool TryReap(pid_t pid, int* exit_code, int* signal = nullptr);

}  // namespace cohort::exec
