// taxi-train's command line: --help documents every flag, bad flags exit 2 saying why, and
// --bad_rows decides what a malformed row of the taxi data does.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "taxi/taxi_dataset.h"
#include "testing/processes.h"
#include "testing/scratch_directory.h"

namespace {

namespace fs = std::filesystem;

using cohort::testing::CommandResult;

// Runs `environment taxi-train arguments`, standard error with the output.
CommandResult RunTaxiTrain(const std::string& arguments, const std::string& environment = "") {
  return cohort::testing::RunCommand(environment + std::string(COHORT_BINARY_DIR) +
                                     "/examples/taxi/taxi-train " + arguments);
}

TEST(TaxiTrainCli, HelpDocumentsEveryFlag) {
  const CommandResult result = RunTaxiTrain("--help");
  EXPECT_EQ(result.exit_code, 0);
  for (const char* flag : {"--epochs",
                           "--per_worker_batch",
                           "--saved_model_path",
                           "--checkpoint_path",
                           "--model",
                           "--data_dir",
                           "--learning_rate",
                           "--wide_learning_rate",
                           "--tensorboard_dir",
                           "--seed",
                           "--threads",
                           "--startup_timeout_s",
                           "--sync_timeout_s",
                           "--mode",
                           "--bad_rows",
                           "--max_staleness",
                           "--checkpoint_every_steps",
                           "--ps_retry_timeout_s",
                           "--ps_request_timeout_s",
                           "--ps_timeout_s",
                           "--evaluator_timeout_s",
                           "--evaluate",
                           "--model_path",
                           "TF_CONFIG",
                           "138"}) {
    EXPECT_NE(result.output.find(flag), std::string::npos) << flag;
  }
}

TEST(TaxiTrainCli, BadFlagsExitWithTwoAndSayWhy) {
  CommandResult result = RunTaxiTrain("--sync_timeout_s=0");
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_NE(result.output.find("--sync_timeout_s: expected a positive number, got \"0\""),
            std::string::npos)
      << result.output;

  result = RunTaxiTrain("--model=cnn --data_dir=/tmp");
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_NE(result.output.find("--model: cnn not in {wide_deep}"), std::string::npos)
      << result.output;

  // A sync push is answered when its step completes: a request timeout within the sync timeout
  // would mistake every slow sync step for a partitioned ps.
  result =
      RunTaxiTrain("--mode=sync --sync_timeout_s=30 --ps_request_timeout_s=10 --data_dir=/tmp");
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_NE(result.output.find("--ps_request_timeout_s 10 must be more than --sync_timeout_s 30"),
            std::string::npos)
      << result.output;

  result = RunTaxiTrain("--model=wide_deep --epochs=1");
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_NE(result.output.find("taxi-train needs --data_dir DIR"), std::string::npos)
      << result.output;
}

// A generated taxi data set whose eval.csv has one bad fare on its third line, as the chief of a
// parameter-server job reads it before it connects anywhere (the ps it names never answers).
// The path flags that take a bucket check it before anything starts: with no credentials the
// error names the flag, the URL and what to set. --data_dir, where the data set is generated,
// refuses a URL naming the flag, instead of becoming a directory named "s3:".
TEST(TaxiTrainCli, StorageUrlsAreCheckedOrRefusedNamingTheFlag) {
  for (const std::string& flag :
       std::vector<std::string>{"--saved_model_path", "--checkpoint_path", "--tensorboard_dir"}) {
    const CommandResult result = RunTaxiTrain(flag + "=s3://bucket/taxi");
    EXPECT_EQ(result.exit_code, 2) << result.output;
    EXPECT_NE(result.output.find(flag + ": s3://bucket/taxi: no S3 credentials: set "
                                        "AWS_ACCESS_KEY_ID"),
              std::string::npos)
        << result.output;
  }
  const CommandResult result = RunTaxiTrain("--data_dir=s3://bucket/taxi");
  EXPECT_EQ(result.exit_code, 2) << result.output;
  EXPECT_NE(result.output.find("--data_dir: \"s3://bucket/taxi\" is a URL (s3://), and taxi-train "
                               "reads and writes only file system paths"),
            std::string::npos)
      << result.output;
  EXPECT_FALSE(fs::exists("s3:")) << "a URL became a local directory";
}

TEST(TaxiTrainCli, BadRowsOfTheTaxiDataFailOrAreSkippedByFlag) {
  const cohort::testing::ScratchDirectory scratch("cohort-bad-rows");
  const fs::path data = scratch.path();
  ASSERT_TRUE(cohort::taxi::EnsureTaxiDataset(data.string(), {}).ok());
  const fs::path eval = data / cohort::taxi::kTaxiEvalFile;
  std::stringstream text;
  text << std::ifstream(eval).rdbuf();
  std::string csv = text.str();
  const size_t third_line = csv.find('\n', csv.find('\n') + 1) + 1;
  // The fare, the second column in the header's order, becomes "x<fare>".
  csv.insert(csv.find(',', third_line) + 1, "x");
  std::ofstream(eval, std::ios::trunc) << csv;

  const std::string tf_config =
      R"(TF_CONFIG='{"cluster":{"chief":["localhost:1"],"ps":["localhost:9"]},)"
      R"("task":{"type":"chief","index":0}}' )";
  const std::string arguments =
      "--model=wide_deep --threads=1 --ps_retry_timeout_s=1 --data_dir=" + data.string();
  const CommandResult failed = RunTaxiTrain(arguments + " --bad_rows=fail", tf_config);
  EXPECT_EQ(failed.exit_code, 1) << failed.output;
  EXPECT_NE(failed.output.find(eval.string() + ":3:"), std::string::npos) << failed.output;
  EXPECT_NE(failed.output.find("is not a number"), std::string::npos) << failed.output;

  const CommandResult skipped = RunTaxiTrain(arguments + " --bad_rows=skip", tf_config);
  EXPECT_NE(skipped.output.find("skipped 1 malformed rows of " + eval.string()), std::string::npos)
      << skipped.output;
  EXPECT_NE(skipped.output.find(eval.string() + ":3:"), std::string::npos) << skipped.output;
  // Past the data, the chief then looks for its ps, which is not there.
  EXPECT_NE(skipped.exit_code, 0) << skipped.output;
  EXPECT_NE(skipped.output.find("ps:0"), std::string::npos) << skipped.output;
}

// Without ps tasks there is no parameter-server job to be part of.
TEST(TaxiTrainCli, AClusterWithoutPsTasksIsRefused) {
  const CommandResult result = RunTaxiTrain(
      "--data_dir=/nonexistent/taxi",
      R"(TF_CONFIG='{"cluster":{"worker":["localhost:1"]},"task":{"type":"worker","index":0}}' )");
  EXPECT_EQ(result.exit_code, 1) << result.output;
  EXPECT_NE(result.output.find("TF_CONFIG's cluster has no ps tasks"), std::string::npos)
      << result.output;
}

}  // namespace
