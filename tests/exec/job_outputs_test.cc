// The directories a job declares as its own (exec/job_outputs.h): the examples' manifests give
// each job a directory of its own, two jobs of different names never share one, and only the
// forms that clearly declare one count.
#include "exec/job_outputs.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "exec/replica_environment.h"
#include "exec_test_support.h"
#include "job/job_file.h"
#include "job/variable_references.h"
#include "testing/files.h"

namespace cohort::exec {
namespace {

namespace fs = std::filesystem;
using ::testing::ElementsAre;

const std::string kSourceDir = std::string(COHORT_TEST_DATA_DIR) + "/../..";

job::Job Example(const std::string& file, const std::string& name) {
  StatusOr<job::JobFile> loaded = job::LoadJobFromFile(kSourceDir + "/examples/" + file, {});
  EXPECT_TRUE(loaded.ok()) << loaded.status().ToString();
  if (!loaded.ok()) return job::Job{};
  job::Job job = loaded->job;
  job.metadata.name = name;
  return job;
}

// Every absolute path a replica of `job` is given in its args, once expanded as it starts.
std::set<std::string> ExpandedPaths(const job::Job& job) {
  std::set<std::string> paths;
  for (const auto& [type, spec] : job.replica_specs) {
    const job::Container* container = job.job_kind->MainContainer(spec.template_spec);
    for (const std::string& arg :
         job::ExpandVariableReferences(container->args, ArgumentVariables(job, type, 0, {}))) {
      const std::string value =
          arg.find('=') == std::string::npos ? arg : arg.substr(arg.find('=') + 1);
      if (!value.empty() && value[0] == '/') paths.insert(value);
    }
  }
  return paths;
}

// Two jobs of one example under different names: every output path of each is under its own
// declared directory, and no path is shared but the taxi data, an input.
TEST(JobOutputsTest, TheExamplesGiveEveryJobItsOwnDirectory) {
  for (const std::string file : {"mnist/tfjob.yaml", "taxi/tfjob.yaml", "taxi/ai-platform.yaml",
                                 "custom-loop/tfjob.yaml", "custom-model/tfjob.yaml"}) {
    SCOPED_TRACE(file);
    const job::Job first = Example(file, "run-1");
    const job::Job second = Example(file, "run-2");
    const std::vector<fs::path> first_directories = JobOutputDirectories(first);
    const std::vector<fs::path> second_directories = JobOutputDirectories(second);
    ASSERT_EQ(first_directories.size(), 1u);
    ASSERT_EQ(second_directories.size(), 1u);
    EXPECT_EQ(first_directories[0].filename(), "run-1");
    EXPECT_EQ(second_directories[0].filename(), "run-2");
    EXPECT_EQ(first_directories[0].parent_path(), second_directories[0].parent_path());
    const std::set<std::string> first_paths = ExpandedPaths(first);
    const std::set<std::string> second_paths = ExpandedPaths(second);
    ASSERT_FALSE(first_paths.empty());
    for (const std::string& path : first_paths) {
      if (path.ends_with("/data")) continue;  // the taxi data set, shared on purpose
      EXPECT_TRUE(path.starts_with(first_directories[0].string() + "/") ||
                  path == first_directories[0].string())
          << path << " is outside " << first_directories[0];
      EXPECT_EQ(second_paths.count(path), 0u) << path << " is shared";
    }
  }
}

TEST(JobOutputsTest, OnlyAWholeComponentOfAnAbsolutePathDeclaresADirectory) {
  job::Job job = JobFromYaml(R"(apiVersion: kubeflow.org/v1
kind: TFJob
metadata: {name: mine}
spec:
  tfReplicaSpecs:
    Worker:
      template:
        spec:
          containers:
            - name: tensorflow
              image: test
              command: [train, /out/$(COHORT_JOB_NAME)]
              args:
                - --a=/runs/./x/../$(COHORT_JOB_NAME)/ckpt
                - --b=/runs/$(COHORT_JOB_NAME)/ckpt
                - --c=/runs/$(COHORT_JOB_NAME)
                - --d=relative/$(COHORT_JOB_NAME)
                - --e=/tmp/run-$(COHORT_JOB_NAME)
                - --f=/$(COHORT_JOB_NAME)
                - --g=$(HOME)/$(COHORT_JOB_NAME)
                - --h=/x/$$(COHORT_JOB_NAME)
                - --i=/x/$(COHORT_JOB_NAME)-old
                - sh -c 'rm -rf /y/$(COHORT_JOB_NAME)'
                - /models//$(COHORT_JOB_NAME)/
)");
  EXPECT_THAT(JobOutputDirectories(job),
              ElementsAre(fs::path("/out/mine"), fs::path("/runs/mine"), fs::path("/models/mine")));
}

TEST(JobOutputsTest, RemovesWhatExistsAndSaysSo) {
  ScratchDirectory scratch;
  const fs::path kept = scratch.path() / "other-job";
  const fs::path declared = scratch.path() / "mine";
  fs::create_directories(declared / "ckpt");
  fs::create_directories(kept);
  cohort::testing::WriteText(declared / "ckpt" / "step-1", "x");
  // A link in the declared place is removed, not followed.
  fs::create_directory_symlink(kept, scratch.path() / "linked");
  std::vector<fs::path> removed;
  Status status =
      RemoveJobOutputs({declared, scratch.path() / "never-written", scratch.path() / "linked"},
                       [&](const fs::path& path) { removed.push_back(path); });
  ASSERT_TRUE(status.ok()) << status.ToString();
  EXPECT_THAT(removed, ElementsAre(declared, scratch.path() / "linked"));
  EXPECT_FALSE(fs::exists(declared));
  EXPECT_TRUE(fs::is_directory(kept));
}

}  // namespace
}  // namespace cohort::exec
