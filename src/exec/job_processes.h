// The processes of a local job, found and stopped without its supervisor.
//
// A supervisor stops its replicas' process groups, and its watchdog does when the supervisor
// dies (supervisor_loss.h). When both are gone (both SIGKILLed, the machine's OOM killer), a
// replica's children may still run: PR_SET_PDEATHSIG reaches only the replica process itself.
// `cohort delete` and the commands that notice a lost supervisor then find what is left by the
// job's secret: every replica starts with COHORT_JOB_SECRET=<the job's random 256-bit secret> in
// its environment (replica_environment.h), and everything it starts inherits it, in its process
// group or not. A pid is never signalled on a guess: only a process whose environment carries
// the secret now is killed, so a pid reused by another program is left alone.
//
//   StatusOr<int> killed = KillJobProcesses(secret, std::chrono::seconds(5));
//
// A process that cleared its environment before exec (env -i) is not found; one of another user
// cannot be read and is not either.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <string>
#include <vector>

#include "base/status.h"

namespace cohort::exec {

// Whether the NUL-separated environment block `environment` (as /proc/PID/environ holds it) sets
// COHORT_JOB_SECRET to `secret` exactly. False for an empty secret.
bool EnvironmentCarriesSecret(const std::string& environment, const std::string& secret);

// The processes, other than this one, whose environment carries `secret`.
std::vector<pid_t> FindJobProcesses(const std::string& secret);

// SIGKILLs every process FindJobProcesses finds until none is left, for at most `timeout`.
// Returns how many processes it killed; DeadlineExceeded, naming the pids, when some remain.
StatusOr<int> KillJobProcesses(const std::string& secret, std::chrono::milliseconds timeout);

}  // namespace cohort::exec
