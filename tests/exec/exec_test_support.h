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

namespace cohort::exec {

// A fresh directory under /tmp, removed with everything in it afterwards.
class ScratchDirectory {
 public:
  ScratchDirectory() {
    char pattern[] = "/tmp/cohort-exec-test-XXXXXX";
    path_ = mkdtemp(pattern);
  }
  ~ScratchDirectory() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

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

inline std::string ReadWhole(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// True while `pid` exists and is not a zombie waiting to be reaped.
inline bool ProcessRuns(pid_t pid) {
  if (pid <= 0 || kill(pid, 0) != 0) return false;
  std::string stat = ReadWhole("/proc/" + std::to_string(pid) + "/stat");
  size_t close_paren = stat.rfind(')');
  return close_paren == std::string::npos || close_paren + 2 >= stat.size() ||
         stat[close_paren + 2] != 'Z';
}

}  // namespace cohort::exec
