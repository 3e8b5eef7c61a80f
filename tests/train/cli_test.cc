// cohort-train's command line: exit status 2 and a clear message for bad flags, --help for all;
// --bad_rows decides what a malformed row of the taxi data does.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "train/taxi_dataset.h"

namespace {

struct Result {
  int exit_code = -1;
  std::string output;
};

Result RunCohortTrain(const std::string& arguments) {
  const std::string command =
      std::string(COHORT_BINARY_DIR) + "/apps/cohort-train/cohort-train " + arguments + " 2>&1";
  Result result;
  std::FILE* pipe = ::popen(command.c_str(), "r");
  std::array<char, 4096> buffer;
  while (size_t n = std::fread(buffer.data(), 1, buffer.size(), pipe)) {
    result.output.append(buffer.data(), n);
  }
  const int status = ::pclose(pipe);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return result;
}

TEST(CohortTrainCli, HelpDocumentsEveryFlag) {
  const Result result = RunCohortTrain("--help");
  EXPECT_EQ(result.exit_code, 0);
  for (const char* flag : {"--epochs", "--steps_per_epoch", "--per_worker_batch",
                           "--saved_model_path", "--checkpoint_path", "--model", "--data_dir",
                           "--learning_rate", "--optimizer", "--tensorboard_dir", "--seed",
                           "--threads", "--evaluate", "--model_path", "TF_CONFIG", "138"}) {
    EXPECT_NE(result.output.find(flag), std::string::npos) << flag;
  }
}

TEST(CohortTrainCli, BadFlagsExitWithTwoAndSayWhy) {
  Result result = RunCohortTrain("--epochs=abc");
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

  result = RunCohortTrain("--evaluate");
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_NE(result.output.find("--evaluate needs --model_path DIR"), std::string::npos);

  result = RunCohortTrain("--peer_timeout_s=1");
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_NE(result.output.find("--peer_timeout_s: expected a number of seconds >= 3, got \"1\""),
            std::string::npos)
      << result.output;
  result = RunCohortTrain("--sync_timeout_s=0");
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_NE(result.output.find("--sync_timeout_s: expected a positive number, got \"0\""),
            std::string::npos)
      << result.output;
}

TEST(CohortTrainCli, AMissingDataDirectoryIsAPermanentFailure) {
  const Result result = RunCohortTrain("--data_dir /nonexistent/fashion --epochs 1");
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_NE(result.output.find("data directory /nonexistent/fashion does not exist"),
            std::string::npos)
      << result.output;
}

// A generated taxi data set whose eval.csv has one bad fare on its third line, as the chief of a
// parameter-server job reads it before it connects anywhere (the ps it names never answers).
TEST(CohortTrainCli, BadRowsOfTheTaxiDataFailOrAreSkippedByFlag) {
  namespace fs = std::filesystem;
  const fs::path data = fs::temp_directory_path() / ("cohort-bad-rows-" + std::to_string(getpid()));
  ASSERT_TRUE(cohort::train::EnsureTaxiDataset(data.string(), {}).ok());
  const fs::path eval = data / cohort::train::kTaxiEvalFile;
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
  const std::string command = tf_config + std::string(COHORT_BINARY_DIR) +
                              "/apps/cohort-train/cohort-train --model=wide_deep --threads=1 "
                              "--ps_retry_timeout_s=1 --data_dir=" +
                              data.string();
  auto run = [&](const std::string& bad_rows) {
    Result result;
    std::FILE* pipe = ::popen((command + " --bad_rows=" + bad_rows + " 2>&1").c_str(), "r");
    std::array<char, 4096> buffer;
    while (size_t n = std::fread(buffer.data(), 1, buffer.size(), pipe)) {
      result.output.append(buffer.data(), n);
    }
    const int status = ::pclose(pipe);
    result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    return result;
  };
  const Result failed = run("fail");
  EXPECT_EQ(failed.exit_code, 1) << failed.output;
  EXPECT_NE(failed.output.find(eval.string() + ":3:"), std::string::npos) << failed.output;
  EXPECT_NE(failed.output.find("is not a number"), std::string::npos) << failed.output;

  const Result skipped = run("skip");
  EXPECT_NE(skipped.output.find("skipped 1 malformed rows of " + eval.string()), std::string::npos)
      << skipped.output;
  EXPECT_NE(skipped.output.find(eval.string() + ":3:"), std::string::npos) << skipped.output;
  // Past the data, the chief then looks for its ps, which is not there.
  EXPECT_NE(skipped.exit_code, 0) << skipped.output;
  EXPECT_NE(skipped.output.find("ps:0"), std::string::npos) << skipped.output;
  fs::remove_all(data);
}

}  // namespace
