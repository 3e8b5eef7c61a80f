// gcloud ai-platform's forms through the real `cohort` binary: jobs submit training, list,
// describe, cancel and stream-logs, on the same jobs as kubectl's forms.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "testing/cohort_runner.h"
#include "testing/wait.h"

namespace cohort::testing {
namespace {

using ::testing::ContainsRegex;
using ::testing::HasSubstr;
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
  EXPECT_THAT(submit.output, HasSubstr("\nJob [train-taxi-1] submitted successfully.\n"));
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
  EXPECT_THAT(list.output, ContainsRegex("train-taxi-1  SUCCEEDED  [0-9]{4}-[0-9]{2}-[0-9]{2}T"));
  CommandResult describe = sandbox_.Cohort({"ai-platform", "jobs", "describe", "train-taxi-1"});
  EXPECT_THAT(describe.output, HasSubstr("jobId: train-taxi-1\n"));
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
  EXPECT_THAT(submit.output, HasSubstr("Job [long-job] submitted"));
  CommandResult cancel = sandbox_.Cohort({"ai-platform", "jobs", "cancel", "long-job"});
  EXPECT_EQ(cancel.exit_code, 0) << cancel.output;
  EXPECT_EQ(cancel.output, "Cancelled job [long-job].\n");
  bool cancelled = WaitUntil(
      [&] {
        return sandbox_.Cohort({"ai-platform", "jobs", "list"}).output.find("CANCELLED") !=
               std::string::npos;
      },
      std::chrono::seconds(30), std::chrono::milliseconds(100));
  EXPECT_TRUE(cancelled);
  EXPECT_EQ(sandbox_.Cohort({"delete", "long-job"}).exit_code, 0);
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
