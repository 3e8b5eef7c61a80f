// What the src/exec unit tests share: a scratch COHORT_HOME and jobs written as YAML.
#pragma once

#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "job/common_types.h"
#include "job/spec_parser.h"
#include "testing/files.h"
#include "testing/processes.h"
#include "testing/scratch_directory.h"

namespace cohort::exec {

// The shared test helpers (tests/testing) under the names these tests use: a fresh scratch
// directory removed afterwards, a whole file, and whether a process still runs.
using ScratchDirectory = cohort::testing::ScratchDirectory;

inline std::string ReadWhole(const std::filesystem::path& path) {
  return cohort::testing::ReadText(path);
}

inline bool ProcessRuns(pid_t pid) { return cohort::testing::ProcessAlive(pid); }

// A defaulted, validated job from a manifest; fails the test when it is not valid.
inline job::Job JobFromYaml(const std::string& yaml) {
  StatusOr<job::Job> job = job::LoadJob(yaml, "job.yaml");
  EXPECT_TRUE(job.ok()) << job.status().ToString();
  return job.ok() ? *job : job::Job{};
}

// A job named `name` with `workers` Worker replicas that run `/bin/sh -c script`.
inline job::Job ShellJob(const std::string& name, int workers, const std::string& script,
                         const std::string& run_policy = "",
                         int termination_grace_period_seconds = 30) {
  std::ostringstream yaml;
  yaml << "apiVersion: kubeflow.org/v1\nkind: TFJob\nmetadata: {name: " << name << "}\nspec:\n";
  if (!run_policy.empty()) yaml << "  runPolicy: " << run_policy << "\n";
  yaml << "  tfReplicaSpecs:\n    Worker:\n      replicas: " << workers
       << "\n      template:\n        spec:\n"
       << "          terminationGracePeriodSeconds: " << termination_grace_period_seconds << "\n"
       << "          containers:\n"
       << "            - name: tensorflow\n              image: test\n"
       << "              command: [/bin/sh, -c, '" << script << "']\n";
  return JobFromYaml(yaml.str());
}

}  // namespace cohort::exec
