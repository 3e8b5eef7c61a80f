// Processes for tests: is one still running, wait for a child with a bound, and which processes a
// job has started (found by the environment their supervisor gave them).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <map>
#include <string>
#include <vector>

namespace cohort::testing {

// True while a process with this pid exists and is not a zombie waiting to be reaped.
bool ProcessAlive(pid_t pid);

// Waits for `pid` (a child of this process) for at most `timeout` and reaps it; returns its exit
// code (128 + N when signal N ended it), or -1 when it is still running.
int WaitForChild(pid_t pid, std::chrono::milliseconds timeout);

// The pids of the running processes (this user's, zombies excluded) whose environment holds every
// NAME=VALUE of `environment`, e.g. {{"COHORT_HOME", home}, {"COHORT_JOB_NAME", "pausable"}}.
std::vector<pid_t> ProcessesWithEnvironment(const std::map<std::string, std::string>& environment);

}  // namespace cohort::testing
