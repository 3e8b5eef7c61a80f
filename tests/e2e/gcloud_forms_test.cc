// gcloud ai-platform's forms through the real `cohort` binary: jobs submit training (with gcloud's
// own flags and trainer arguments after `--`), list, describe, cancel and stream-logs, on the same
// jobs as kubectl's forms, found by the ID they were submitted under; and a job that fails as AI
// Platform fails it.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>

#include "testing/cohort_runner.h"
#include "testing/wait.h"

namespace cohort::testing {
namespace {

using ::testing::ContainsRegex;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

const std::string kReplica = std::string(COHORT_SOURCE_DIR) + "/tests/e2e/replica.sh";

class GcloudFormsTest : public ::testing::Test {
 protected:
  std::string Config(const std::string& file_name, const std::string& job_id) {
    std::string spec = (job_id.empty() ? "" : "jobId: " + job_id + "\n") +
                       "trainingInput:\n  scaleTier: CUSTOM\n  masterType: n1-standard-4\n"
                       "  masterConfig: {imageUri: cohort/census}\n"
                       "  workerType: n1-standard-4\n  workerCount: 1\n";
    return sandbox_.WriteFile(file_name, spec).string();
  }
  std::string Image(int seconds) {
    return "cohort/census=env SLEEP_SECONDS=" + std::to_string(seconds) + " " + kReplica;
  }
  CohortSandbox sandbox_;
};

TEST_F(GcloudFormsTest, SubmitListDescribeAndStreamLogs) {
  std::string config = Config("config.yaml", "");
  CommandResult submit =
      sandbox_.Cohort({"ai-platform", "jobs", "submit", "training", "train_taxi_1", "--config",
                       config, "--region", "us-central1", "--image", Image(0)});
  EXPECT_EQ(submit.exit_code, 0) << submit.output;
  EXPECT_THAT(submit.output, HasSubstr("\nJob [train_taxi_1] submitted successfully.\n"));
  ASSERT_EQ(sandbox_.Cohort({"wait", "train-taxi-1", "--timeout", "60"}).exit_code, 0);
  // Without a JOB argument or jobId, the file's name names the job.
  CommandResult unnamed = sandbox_.Cohort(
      {"ai-platform", "jobs", "submit", "training", "--config", config, "--image", Image(0)});
  EXPECT_EQ(unnamed.exit_code, 0) << unnamed.output;
  EXPECT_THAT(unnamed.output, HasSubstr("Job [config] submitted successfully."));
  ASSERT_EQ(sandbox_.Cohort({"wait", "config", "--timeout", "60"}).exit_code, 0);

  CommandResult list = sandbox_.Cohort({"ai-platform", "jobs", "list", "--region=us-central1"});
  EXPECT_EQ(list.exit_code, 0) << list.output;
  EXPECT_THAT(list.output, StartsWith("JOB_ID        STATUS     CREATED\n"));
  EXPECT_THAT(list.output, ContainsRegex("train_taxi_1  SUCCEEDED  [0-9]{4}-[0-9]{2}-[0-9]{2}T"));
  CommandResult describe = sandbox_.Cohort({"ai-platform", "jobs", "describe", "train_taxi_1"});
  EXPECT_THAT(describe.output, HasSubstr("jobId: train_taxi_1\n"));
  EXPECT_THAT(describe.output, HasSubstr("state: SUCCEEDED\n"));
  EXPECT_THAT(describe.output, HasSubstr("workerCount: \"1\""));
  CommandResult logs = sandbox_.Cohort({"ai-platform", "jobs", "stream-logs", "train-taxi-1"});
  EXPECT_EQ(logs.exit_code, 0) << logs.output;
  EXPECT_THAT(logs.output, HasSubstr("[master-0] replica master-0 done"));
  CommandResult finished = sandbox_.Cohort({"ai-platform", "jobs", "cancel", "train-taxi-1"});
  EXPECT_EQ(finished.exit_code, 2);
  EXPECT_THAT(finished.output, HasSubstr("already in terminal state SUCCEEDED"));
  // The kubectl forms see the same jobs.
  EXPECT_THAT(sandbox_.Cohort({"get", "pods"}).output, HasSubstr("train-taxi-1-master-0"));
}

TEST_F(GcloudFormsTest, CancelStopsARunningJobAndKeepsItListed) {
  std::string config = Config("long.yaml", "long_job");
  CommandResult submit = sandbox_.Cohort(
      {"ai-platform", "jobs", "submit", "training", "--config", config, "--image", Image(60)});
  ASSERT_EQ(submit.exit_code, 0) << submit.output;
  EXPECT_THAT(submit.output, HasSubstr("Job [long_job] submitted"));
  CommandResult cancel = sandbox_.Cohort({"ai-platform", "jobs", "cancel", "long_job"});
  EXPECT_EQ(cancel.exit_code, 0) << cancel.output;
  EXPECT_EQ(cancel.output, "Cancelled job [long_job].\n");
  bool cancelled = WaitUntil(
      [&] {
        return sandbox_.Cohort({"ai-platform", "jobs", "list"}).output.find("CANCELLED") !=
               std::string::npos;
      },
      std::chrono::seconds(30), std::chrono::milliseconds(100));
  EXPECT_TRUE(cancelled);
  EXPECT_EQ(sandbox_.Cohort({"delete", "long-job"}).exit_code, 0);
}

// The submit line of the seminar's train-cloud-ps.sh, with --master-image-uri for the package it
// names, and a job ID with underscores that gcloud's commands find again.
TEST_F(GcloudFormsTest, TheSeminarsSubmitLineRunsAndItsIdIsFoundAgain) {
  std::string config = Config("config_ps.yaml", "");
  std::string package = (sandbox_.root() / "base" / "trainer").string();
  std::string job_dir = (sandbox_.root() / "model").string();
  CommandResult submit = sandbox_.Cohort(
      {"ai-platform", "jobs", "submit", "training", "train_tensorflow_taxi_5",
       "--job-dir=" + job_dir, "--runtime-version=2.1", "--region=us-central1",
       "--scale-tier=custom", "--module-name=trainer.task", "--package-path=" + package,
       "--python-version=3.7", "--master-image-uri=cohort/census", "--config=" + config, "--image",
       Image(0), "--", "--train-files=/data/taxi_trips_train.csv", "--num-epochs=2"});
  ASSERT_EQ(submit.exit_code, 0) << submit.output;
  EXPECT_THAT(submit.output, HasSubstr("Job [train_tensorflow_taxi_5] submitted successfully."));
  EXPECT_THAT(submit.output, HasSubstr("--module-name: ignored: the container image"));
  ASSERT_EQ(sandbox_.Cohort({"wait", "train-tensorflow-taxi-5", "--timeout", "60"}).exit_code, 0);
  EXPECT_TRUE(std::filesystem::is_directory(job_dir));

  CommandResult logs =
      sandbox_.Cohort({"ai-platform", "jobs", "stream-logs", "train_tensorflow_taxi_5"});
  EXPECT_EQ(logs.exit_code, 0) << logs.output;
  // The trainer's arguments after --, then --job-dir, in every replica.
  for (const char* replica : {"master-0", "worker-0"}) {
    EXPECT_THAT(logs.output, HasSubstr(std::string("[") + replica +
                                       "] ARGS=--train-files=/data/taxi_trips_train.csv "
                                       "--num-epochs=2 --job-dir=" +
                                       job_dir));
  }
  CommandResult list = sandbox_.Cohort({"ai-platform", "jobs", "list"});
  EXPECT_THAT(list.output, HasSubstr("train_tensorflow_taxi_5  SUCCEEDED  "));
  CommandResult describe =
      sandbox_.Cohort({"ai-platform", "jobs", "describe", "train_tensorflow_taxi_5"});
  EXPECT_EQ(describe.exit_code, 0) << describe.output;
  EXPECT_THAT(describe.output, HasSubstr("jobId: train_tensorflow_taxi_5\n"));
  CommandResult cancel =
      sandbox_.Cohort({"ai-platform", "jobs", "cancel", "train_tensorflow_taxi_5"});
  EXPECT_EQ(cancel.exit_code, 2);
  EXPECT_THAT(cancel.output, HasSubstr("already in terminal state SUCCEEDED"));
  CommandResult unknown = sandbox_.Cohort({"ai-platform", "jobs", "describe", "train_other_6"});
  EXPECT_NE(unknown.exit_code, 0);
  EXPECT_THAT(unknown.output, HasSubstr("job train_other_6 not found"));
}

TEST_F(GcloudFormsTest, WithoutConfigTheFlagsAreTheSpec) {
  CommandResult submit = sandbox_.Cohort({"ai-platform", "jobs", "submit", "training", "flags_only",
                                          "--master-image-uri", "cohort/census", "--image",
                                          Image(0), "--", "--epochs=1"});
  ASSERT_EQ(submit.exit_code, 0) << submit.output;
  ASSERT_EQ(sandbox_.Cohort({"wait", "flags-only", "--timeout", "60"}).exit_code, 0);
  CommandResult logs = sandbox_.Cohort({"ai-platform", "jobs", "stream-logs", "flags_only"});
  EXPECT_THAT(logs.output, HasSubstr("[master-0] ARGS=--epochs=1\n"));
  CommandResult nothing =
      sandbox_.Cohort({"ai-platform", "jobs", "submit", "training", "nothing_at_all"});
  EXPECT_EQ(nothing.exit_code, 2);
  EXPECT_THAT(nothing.output, HasSubstr("the job needs --config FILE, or gcloud's flags"));
}

TEST_F(GcloudFormsTest, APythonPackageWithNoImageForItSaysWhatWouldRunIt) {
  std::string config =
      sandbox_.WriteFile("basic.yaml", "trainingInput:\n  scaleTier: BASIC\n").string();
  CommandResult submit = sandbox_.Cohort({"ai-platform", "jobs", "submit", "training", "train_1",
                                          "--module-name=trainer.task", "--package-path=trainer/",
                                          "--runtime-version=2.1", "--python-version=3.7",
                                          "--config", config, "--", "--num-epochs=2"});
  EXPECT_EQ(submit.exit_code, 2) << submit.output;
  EXPECT_THAT(submit.output,
              HasSubstr("--module-name: a Python package runs on AI Platform's runtime (runtime "
                        "version 2.1, Python 3.7), and this machine has no such runtime"));
  EXPECT_THAT(submit.output, HasSubstr("--image 'trainer=python3 -m trainer.task'"));
  EXPECT_THAT(submit.output, Not(HasSubstr("not expected")));
  // A flag that is none of gcloud's is named as typed, with where the trainer's arguments go.
  CommandResult unknown = sandbox_.Cohort({"ai-platform", "jobs", "submit", "training", "train_1",
                                           "--config", config, "--num-epochs", "2"});
  EXPECT_EQ(unknown.exit_code, 2);
  EXPECT_THAT(unknown.output,
              HasSubstr("cohort: ai-platform jobs submit training does not take --num-epochs 2 "
                        "(cohort ai-platform jobs submit training --help lists its flags; the "
                        "trainer's own arguments go after --)"));
}

// AI Platform fails a job whose replica exits with its own error, at once, where a TFJob with
// OnFailure would restart it until its deadline.
TEST_F(GcloudFormsTest, AMasterThatExitsTwoFailsTheJobAtOnce) {
  std::string config =
      sandbox_
          .WriteFile("basic.yaml", "trainingInput:\n  masterConfig: {imageUri: cohort/census}\n")
          .string();
  CommandResult submit = sandbox_.Cohort(
      {"ai-platform", "jobs", "submit", "training", "train_tensorflow_taxi_7", "--config", config,
       "--image",
       "cohort/census=env FAIL_INDEX=0 FAIL_CODE=2 FAIL_MESSAGE='error: no such image' " +
           kReplica});
  ASSERT_EQ(submit.exit_code, 0) << submit.output;
  // `wait` exits 1 when the job Failed, 124 when it is still going after the timeout.
  CommandResult wait = sandbox_.Cohort({"wait", "train-tensorflow-taxi-7", "--timeout", "30"});
  EXPECT_EQ(wait.exit_code, 1) << wait.output;
  CommandResult list = sandbox_.Cohort({"ai-platform", "jobs", "list"});
  EXPECT_THAT(list.output, HasSubstr("train_tensorflow_taxi_7  FAILED  "));
  CommandResult describe =
      sandbox_.Cohort({"ai-platform", "jobs", "describe", "train_tensorflow_taxi_7"});
  EXPECT_THAT(describe.output, HasSubstr("state: FAILED\n"));
  EXPECT_THAT(describe.output, ContainsRegex("errorMessage: .?The replica master 0 exited with "
                                             "a non-zero status of 2\\."));
  EXPECT_THAT(describe.output, HasSubstr("error: no such image"));
  // Never restarted.
  CommandResult pods = sandbox_.Cohort({"get", "pods"});
  EXPECT_THAT(pods.output, ContainsRegex("train-tensorflow-taxi-7-master-0 +[0-9/]+ +Error +0 "));
  // stream-logs ends, as the job has.
  CommandResult logs =
      sandbox_.Cohort({"ai-platform", "jobs", "stream-logs", "train_tensorflow_taxi_7"});
  EXPECT_EQ(logs.exit_code, 0) << logs.output;
  EXPECT_THAT(logs.output, HasSubstr("[master-0] replica master-0 failing with 2"));
}

// A replica killed by a signal is what AI Platform restarts (a VM's maintenance, a non-permanent
// error): the job goes on.
TEST_F(GcloudFormsTest, AMasterKilledOnceIsRestartedAndTheJobSucceeds) {
  std::string config =
      sandbox_
          .WriteFile("basic.yaml", "trainingInput:\n  masterConfig: {imageUri: cohort/census}\n")
          .string();
  std::string once = (sandbox_.root() / "once").string();
  std::filesystem::create_directories(once);
  CommandResult submit = sandbox_.Cohort(
      {"ai-platform", "jobs", "submit", "training", "killed_once", "--config", config, "--image",
       "cohort/census=env FAIL_INDEX=0 FAIL_CODE=kill FAIL_ONCE_DIR=" + once + " " + kReplica});
  ASSERT_EQ(submit.exit_code, 0) << submit.output;
  CommandResult wait = sandbox_.Cohort({"wait", "killed-once", "--timeout", "60"});
  EXPECT_EQ(wait.exit_code, 0) << wait.output;
  EXPECT_THAT(sandbox_.Cohort({"ai-platform", "jobs", "list"}).output,
              HasSubstr("killed_once  SUCCEEDED  "));
}

TEST_F(GcloudFormsTest, AnUnknownJobsCommandGetsTheClosest) {
  CommandResult unknown = sandbox_.Cohort({"ai-platform", "jobs", "lst"});
  EXPECT_EQ(unknown.exit_code, 2);
  EXPECT_THAT(unknown.output, HasSubstr("unknown command \"lst\"; did you mean \"list\"?"));
}

TEST_F(GcloudFormsTest, APythonModuleWithoutAnImageSuggestsTheMapping) {
  std::string config = sandbox_
                           .WriteFile("module.yaml",
                                      "trainingInput:\n  pythonModule: trainer.task\n"
                                      "  packageUris: [gs://bucket/trainer.tar.gz]\n")
                           .string();
  CommandResult submit =
      sandbox_.Cohort({"ai-platform", "jobs", "submit", "training", "--config", config});
  EXPECT_EQ(submit.exit_code, 2);
  EXPECT_THAT(submit.output, HasSubstr("--image 'trainer=python3 -m trainer.task'"));
}

}  // namespace
}  // namespace cohort::testing
