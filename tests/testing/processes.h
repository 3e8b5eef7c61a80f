// Processes for tests: run a command and keep what it printed, is one still running, wait for a
// child with a bound, and which processes a job has started (found by the environment their
// supervisor gave them).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <map>
#include <string>
#include <vector>

namespace cohort::testing {

// How a command ended and everything it printed.
struct CommandResult {
  int exit_code = -1;      // 128 + N when signal N ended it; -1 when it did not start
  std::string output;      // standard output and standard error, interleaved as printed
  bool timed_out = false;  // it ran past the caller's timeout and was killed
};

// Runs `command` with /bin/sh, standard error joined to standard output, and waits for it, e.g.
//   RunCommand("FOO=1 " + binary + " --help").
CommandResult RunCommand(const std::string& command);

// `text` in single quotes for /bin/sh, for a command line given to RunCommand.
std::string ShellQuote(const std::string& text);

// True while a process with this pid exists and is not a zombie waiting to be reaped.
bool ProcessAlive(pid_t pid);

// Waits for `pid` (a child of this process) for at most `timeout` and reaps it; returns its exit
// code (128 + N when signal N ended it), or -1 when it is still running.
int WaitForChild(pid_t pid, std::chrono::milliseconds timeout);

// The same, but a `pid` still running after `timeout` gets `signal` (SIGKILL; SIGTERM to let it
// stop what it started) and is reaped, and -1 is returned: nothing outlives the test.
int WaitForChildOrSignal(pid_t pid, std::chrono::milliseconds timeout, int signal);

// The pids of the running processes (this user's, zombies excluded) whose environment holds every
// NAME=VALUE of `environment`, e.g. {{"COHORT_HOME", home}, {"COHORT_JOB_NAME", "pausable"}}.
std::vector<pid_t> ProcessesWithEnvironment(const std::map<std::string, std::string>& environment);

}  // namespace cohort::testing
