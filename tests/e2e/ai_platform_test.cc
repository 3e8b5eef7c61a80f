// End-to-end tests of AI Platform job specs through `cohort`: the taxi example in both forms is
// the same job, and an AI Platform spec runs to the end like any TFJob.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <sstream>

#include "testing/cohort_runner.h"

namespace cohort::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

const std::string kSource = COHORT_SOURCE_DIR;
const std::string kTaxiTFJob = kSource + "/examples/taxi/tfjob.yaml";
const std::string kTaxiAiPlatform = kSource + "/examples/taxi/ai-platform.yaml";

// The output without cohort's warnings, which differ between the forms by design.
std::string WithoutWarnings(const std::string& output) {
  std::istringstream lines(output);
  std::string kept;
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("cohort: warning: ", 0) != 0) kept += line + "\n";
  }
  return kept;
}

class AiPlatformCliTest : public ::testing::Test {
 protected:
  CohortSandbox sandbox_;
};

TEST_F(AiPlatformCliTest, ValidateSaysWhichTFJobTheTaxiSpecBecame) {
  CommandResult tfjob = sandbox_.Cohort({"validate", kTaxiTFJob});
  EXPECT_EQ(tfjob.exit_code, 0) << tfjob.output;
  EXPECT_THAT(tfjob.output,
              HasSubstr("valid TFJob default/taxi (1 Chief, 1 Evaluator, 2 PS, 3 Worker)"));
  CommandResult ai_platform = sandbox_.Cohort({"validate", kTaxiAiPlatform});
  EXPECT_EQ(ai_platform.exit_code, 0) << ai_platform.output;
  EXPECT_THAT(ai_platform.output,
              HasSubstr("valid AI Platform job spec, as TFJob default/taxi (1 Chief, 1 Evaluator, "
                        "2 PS, 3 Worker)"));
  EXPECT_THAT(ai_platform.output,
              HasSubstr("ai-platform.yaml:26:11: trainingInput.region: ignored by a local run"));
}

// `text` with every `from` replaced by `to`.
std::string ReplaceAll(std::string text, const std::string& from, const std::string& to) {
  for (size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size())) {
    text.replace(at, from.size(), to);
  }
  return text;
}

// The two forms are the same job but for how failures end it: the AI Platform form fails as AI
// Platform does (ExitCode, backoffLimit 5), the TFJob keeps its OnFailure.
TEST_F(AiPlatformCliTest, TheTaxiSpecConvertsToTheTaxiTFJob) {
  CommandResult from_tfjob = sandbox_.Cohort({"convert", kTaxiTFJob});
  CommandResult from_ai_platform = sandbox_.Cohort({"convert", kTaxiAiPlatform});
  ASSERT_EQ(from_tfjob.exit_code, 0) << from_tfjob.output;
  ASSERT_EQ(from_ai_platform.exit_code, 0) << from_ai_platform.output;
  EXPECT_THAT(from_ai_platform.output, HasSubstr("kind: TFJob"));
  EXPECT_THAT(from_ai_platform.output, HasSubstr("    backoffLimit: 5\n"));
  EXPECT_THAT(from_ai_platform.output, Not(HasSubstr("restartPolicy: OnFailure")));
  std::string failing_as_tfjob =
      ReplaceAll(ReplaceAll(WithoutWarnings(from_ai_platform.output), "    backoffLimit: 5\n", ""),
                 "restartPolicy: ExitCode", "restartPolicy: OnFailure");
  EXPECT_EQ(failing_as_tfjob, WithoutWarnings(from_tfjob.output));
}

TEST_F(AiPlatformCliTest, EveryTaxiReplicaGetsTheSameTfConfigInBothForms) {
  for (const char* replica :
       {"chief-0", "evaluator-0", "ps-0", "ps-1", "worker-0", "worker-1", "worker-2"}) {
    CommandResult from_tfjob =
        sandbox_.Cohort({"tfconfig", kTaxiTFJob, "--replica", replica, "--kubernetes"});
    CommandResult from_ai_platform =
        sandbox_.Cohort({"tfconfig", kTaxiAiPlatform, "--replica", replica, "--kubernetes"});
    EXPECT_EQ(from_ai_platform.exit_code, 0) << from_ai_platform.output;
    EXPECT_THAT(from_tfjob.output, HasSubstr("\"cluster\":{\"chief\":[\"taxi-chief-0.default.svc"))
        << replica;
    EXPECT_EQ(WithoutWarnings(from_ai_platform.output), WithoutWarnings(from_tfjob.output))
        << replica;
  }
}

TEST_F(AiPlatformCliTest, AnAiPlatformSpecRunsToSucceededWithMasterInTfConfig) {
  std::string spec =
      "jobId: Census_Local\n"
      "trainingInput:\n"
      "  scaleTier: CUSTOM\n"
      "  masterType: n1-standard-4\n"
      "  masterConfig: {imageUri: cohort/census}\n"
      "  workerType: n1-standard-4\n"
      "  workerCount: 2\n"
      "  parameterServerType: n1-standard-4\n"
      "  parameterServerCount: 1\n"
      "  args: [--epochs=1]\n";
  // Every replica waits until all four (master, two workers, parameter server) have started and
  // printed their arguments, so that the master, whose exit ends the job and stops the others,
  // cannot finish before the workers have printed theirs.
  const std::string pid_dir = (sandbox_.root() / "pids").string();
  CommandResult run =
      sandbox_.Cohort({"run", sandbox_.WriteFile("census.yaml", spec).string(), "--image",
                       "cohort/census=env PID_DIR=" + pid_dir + " WAIT_FOR_REPLICAS=4 " + kSource +
                           "/tests/e2e/replica.sh"});
  EXPECT_EQ(run.exit_code, 0) << run.output;
  EXPECT_THAT(run.output, HasSubstr("[master-0] ARGS=--epochs=1"));
  EXPECT_THAT(run.output, HasSubstr("[worker-1] ARGS=--epochs=1"));
  EXPECT_THAT(run.output, HasSubstr(R"("task":{"type":"master","index":0})"));
  EXPECT_THAT(run.output, HasSubstr("job default/census-local is Succeeded"));
  CommandResult describe = sandbox_.Cohort({"describe", "census-local"});
  EXPECT_THAT(describe.output, HasSubstr("Created pod: census-local-master-0"));
}

TEST_F(AiPlatformCliTest, ABrokenSpecIsRejectedWithLineColumnAndFieldPath) {
  std::string spec =
      "jobId: broken\n"
      "trainingInput:\n"
      "  scaleTier: CUSTOM\n"
      "  workerCount: \"-1\"\n";
  std::string path = sandbox_.WriteFile("broken.yaml", spec).string();
  for (const char* command : {"validate", "run", "convert"}) {
    CommandResult result = sandbox_.Cohort({command, path});
    EXPECT_EQ(result.exit_code, 2) << command;
    EXPECT_THAT(result.output, HasSubstr("broken.yaml:4:16: trainingInput.workerCount: \"-1\" "
                                         "must be a non-negative integer"))
        << command;
  }
  EXPECT_THAT(sandbox_.Cohort({"get"}).output, HasSubstr("No resources found"));
}

TEST_F(AiPlatformCliTest, NameFlagNamesASpecWithoutJobId) {
  std::string spec = "trainingInput:\n  masterConfig: {imageUri: cohort/census}\n";
  std::string path = sandbox_.WriteFile("anonymous.yaml", spec).string();
  CommandResult unnamed = sandbox_.Cohort({"validate", path});
  EXPECT_EQ(unnamed.exit_code, 2);
  EXPECT_THAT(unnamed.output, HasSubstr("the job has no name: set jobId, or pass --name NAME"));
  CommandResult named = sandbox_.Cohort({"validate", path, "--name", "census"});
  EXPECT_EQ(named.exit_code, 0) << named.output;
  EXPECT_THAT(named.output, HasSubstr("as TFJob default/census (1 Master)"));
}

}  // namespace
}  // namespace cohort::testing
