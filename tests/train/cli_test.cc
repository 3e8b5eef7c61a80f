// cohort-train's command line: exit status 2 and a clear message for bad flags, --help for all.
#include <gtest/gtest.h>

#include <string>

#include "testing/processes.h"

namespace {

using cohort::testing::CommandResult;

CommandResult RunCohortTrain(const std::string& arguments) {
  return cohort::testing::RunCommand(std::string(COHORT_BINARY_DIR) +
                                     "/apps/cohort-train/cohort-train " + arguments);
}

TEST(CohortTrainCli, HelpDocumentsEveryFlag) {
  const CommandResult result = RunCohortTrain("--help");
  EXPECT_EQ(result.exit_code, 0);
  for (const char* flag :
       {"--epochs", "--steps_per_epoch", "--per_worker_batch", "--saved_model_path",
        "--checkpoint_path", "--model", "--data_dir", "--learning_rate", "--optimizer",
        "--tensorboard_dir", "--seed", "--threads", "--evaluate", "--model_path",
        "--gradient_compression", "TF_CONFIG", "138"}) {
    EXPECT_NE(result.output.find(flag), std::string::npos) << flag;
  }
}

TEST(CohortTrainCli, BadFlagsExitWithTwoAndSayWhy) {
  CommandResult result = RunCohortTrain("--epochs=abc");
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_NE(result.output.find("--epochs: expected a positive integer, got \"abc\""),
            std::string::npos)
      << result.output;

  result = RunCohortTrain("--no_such_flag=1");
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_NE(result.output.find("--no_such_flag"), std::string::npos) << result.output;

  result = RunCohortTrain("--optimizer rmsprop");
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_NE(result.output.find("--optimizer: rmsprop not in {sgd,adam}"), std::string::npos)
      << result.output;

  result = RunCohortTrain("--gradient_compression bf17");
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_NE(result.output.find("--gradient_compression: expected none, bf16 or fp16, got \"bf17\""),
            std::string::npos)
      << result.output;

  result = RunCohortTrain("--evaluate");
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_NE(result.output.find("--evaluate needs --model_path DIR"), std::string::npos);

  result = RunCohortTrain("--peer_timeout_s=1");
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_NE(result.output.find("--peer_timeout_s: expected a number of seconds >= 3, got \"1\""),
            std::string::npos)
      << result.output;
}

TEST(CohortTrainCli, AMissingDataDirectoryIsAPermanentFailure) {
  const CommandResult result = RunCohortTrain("--data_dir /nonexistent/fashion --epochs 1");
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_NE(result.output.find("data directory /nonexistent/fashion does not exist"),
            std::string::npos)
      << result.output;
}

// The wide & deep taxi model moved to its own program: asking cohort-train for it says where.
TEST(CohortTrainCli, TheTaxiModelSaysItMovedToTaxiTrain) {
  for (const char* arguments : {"--model=wide_deep --mode=sync", "--model wide_deep"}) {
    const CommandResult result = RunCohortTrain(arguments);
    EXPECT_EQ(result.exit_code, 2) << arguments;
    EXPECT_NE(result.output.find("--model=wide_deep: the wide & deep taxi model and "
                                 "parameter-server training moved to the taxi example's own "
                                 "program, taxi-train"),
              std::string::npos)
        << result.output;
  }
}

}  // namespace
