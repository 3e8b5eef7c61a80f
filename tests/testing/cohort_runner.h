// Helpers for integration tests that drive the real `cohort` binary in a private COHORT_HOME.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "testing/files.h"
#include "testing/processes.h"
#include "testing/scratch_directory.h"

namespace cohort::testing {

// A scratch COHORT_HOME and working directory, removed afterwards.
class CohortSandbox {
 public:
  CohortSandbox();
  ~CohortSandbox();

  const std::filesystem::path& root() const { return scratch_.path(); }
  std::filesystem::path home() const { return root() / "home"; }

  // Runs `cohort ARGS...` to completion, killing it after `timeout`.
  CommandResult Cohort(const std::vector<std::string>& arguments,
                       std::chrono::seconds timeout = std::chrono::seconds(60)) const;

  // Starts `cohort ARGS...` without waiting; output goes to `output_file`.
  pid_t StartCohort(const std::vector<std::string>& arguments,
                    const std::filesystem::path& output_file) const;

  // Writes a file under root() and returns its path.
  std::filesystem::path WriteFile(const std::string& name, const std::string& contents) const;

  // Reads the pids that replica.sh wrote to PID_DIR (root()/pids), by replica ("worker-1").
  std::map<std::string, pid_t> ReplicaPids() const;
  // The same for the background children that replica.sh starts with BACKGROUND_CHILD_SECONDS.
  std::map<std::string, pid_t> BackgroundChildPids() const;
  // The same for the children that replica.sh starts with SETSID_CHILD_SECONDS (their own
  // session, without COHORT_JOB_SECRET).
  std::map<std::string, pid_t> SetsidChildPids() const;

 private:
  std::map<std::string, pid_t> PidFiles(const std::string& extension) const;

  ScratchDirectory scratch_{"cohort-sandbox"};
};

// The same, but a `pid` still running after `timeout` gets SIGTERM (so that `cohort run` stops its
// replicas) and is reaped: nothing outlives the test.
int WaitForChildOrStop(pid_t pid, std::chrono::seconds timeout);

// The pid of the trainer process (cohort-train, or the taxi example's taxi-train) that runs
// replica `type`-`index` of job `job`, found by the environment its supervisor gave it; -1 if none
// runs.
pid_t FindTrainerProcess(const std::string& job, const std::string& type, int index);

// A TFJob manifest running tests/e2e/replica.sh. `replicas` is the YAML under
// tfReplicaSpecs; `run_policy` the YAML under runPolicy and `spec_fields` more YAML under spec
// (either may be empty).
std::string Manifest(const std::string& name, const std::string& replicas,
                     const std::string& run_policy = "", const std::string& spec_fields = "");

// The YAML of one replica spec using replica.sh, with `environment` as its env.
std::string ReplicaSpec(const std::string& type, int replicas, const std::string& restart_policy,
                        const std::map<std::string, std::string>& environment = {});

}  // namespace cohort::testing
