// cohort-train's --same_host_path: two workers on this host move their collectives through each
// other's memory by default, and over TCP alone with the path off (flag or environment), so that
// TCP training can be measured on one machine. (--zero_skipping, which matters between hosts, is
// tested on emulated hosts: tests/e2e/hosts_training_test.cc.)
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <string>

#include "net/socket.h"
#include "testing/host.h"
#include "testing/processes.h"
#include "testing/scratch_directory.h"
#include "testing/synthetic_data.h"

namespace cohort::train {
namespace {

using cohort::testing::CommandResult;
using cohort::testing::ScratchDirectory;

const std::string kCohortTrain = std::string(COHORT_BINARY_DIR) + "/apps/cohort-train/cohort-train";

// A loopback port that was free a moment ago.
int FreePort() {
  auto listener = net::ListenTcp("127.0.0.1", 0, 1);
  if (!listener.ok()) return -1;
  return *net::LocalPort(listener->fd());
}

class SameHostPathTest : public ::testing::Test {
 protected:
  void SetUp() override {
    testing::WriteDatasetFiles(testing::MakeSyntheticDataset(64, 1, 28), scratch_.path(), "train",
                               /*gzip=*/false);
    testing::WriteDatasetFiles(testing::MakeSyntheticDataset(32, 2, 28), scratch_.path(), "t10k",
                               /*gzip=*/false);
  }

  // Runs two workers of one job for 2 steps; `flags` and `environment` go to both. Returns their
  // logs, worker 0's first; fails the test unless both exit 0.
  std::vector<std::string> TrainTwoWorkers(const std::string& flags,
                                           const std::string& environment) {
    const std::string cluster =
        "{\"cluster\":{\"worker\":[\"127.0.0.1:" + std::to_string(FreePort()) +
        "\",\"127.0.0.1:" + std::to_string(FreePort()) + "\"]},\"task\":{\"type\":\"worker\"," +
        "\"index\":";
    const std::string dir = scratch_.path().string();
    std::string script = "cd " + dir + " || exit 1; ";
    for (int worker : {0, 1}) {
      script += "TF_CONFIG='" + cluster + std::to_string(worker) +
                "}}' COHORT_JOB_SECRET=same-host-path-test COHORT_JOB_NAME=same-host-path " +
                environment + " timeout 120 " + kCohortTrain + " --data_dir " + dir +
                " --epochs 1 --steps_per_epoch 2 --per_worker_batch 8 --threads 1 " + flags +
                " > worker-" + std::to_string(worker) + ".log 2>&1 & pid" + std::to_string(worker) +
                "=$!; ";
    }
    script += "wait $pid0; first=$?; wait $pid1; echo exits $first $?";
    const CommandResult result = cohort::testing::RunCommand(script);
    std::vector<std::string> logs;
    for (int worker : {0, 1}) {
      logs.push_back(
          cohort::testing::RunCommand("cat " + dir + "/worker-" + std::to_string(worker) + ".log")
              .output);
    }
    EXPECT_NE(result.output.find("exits 0 0"), std::string::npos)
        << result.output << "\nworker 0:\n"
        << logs[0] << "\nworker 1:\n"
        << logs[1];
    return logs;
  }

  ScratchDirectory scratch_{"cohort-same-host-path"};
};

TEST_F(SameHostPathTest, OffByFlagOrEnvironmentEveryCollectiveGoesOverTcp) {
  for (const auto& [flags, environment] :
       {std::pair<std::string, std::string>{"--same_host_path=off", ""},
        std::pair<std::string, std::string>{"", "COHORT_SAME_HOST_PATH=off"}}) {
    for (const std::string& log : TrainTwoWorkers(flags, environment)) {
      EXPECT_NE(log.find("collectives over TCP (same-host path off)"), std::string::npos)
          << flags << environment << ":\n"
          << log;
    }
  }
}

TEST_F(SameHostPathTest, OnByDefaultWorkersOnOneHostReadEachOthersMemory) {
  const std::vector<std::string> logs = TrainTwoWorkers("", "");
  for (const std::string& log : logs) {
    if (log.find("same-host path unavailable") != std::string::npos) {
      COHORT_SKIP_OR_FAIL_IN_CI(cohort::testing::CrossProcessReadsRefused());
    }
    EXPECT_NE(log.find("collectives over same-host memory and TCP"), std::string::npos) << log;
  }
}

TEST(SameHostPathFlag, RefusesValuesOtherThanOnAndOff) {
  CommandResult result = cohort::testing::RunCommand(kCohortTrain + " --same_host_path=maybe");
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_NE(result.output.find("--same_host_path: maybe not in {on,off}"), std::string::npos)
      << result.output;
  result = cohort::testing::RunCommand("COHORT_SAME_HOST_PATH=maybe " + kCohortTrain);
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_NE(result.output.find("maybe not in {on,off}"), std::string::npos) << result.output;
}

TEST(ZeroSkippingFlag, RefusesValuesOtherThanOnAndOff) {
  CommandResult result = cohort::testing::RunCommand(kCohortTrain + " --zero_skipping=no");
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_NE(result.output.find("--zero_skipping: no not in {on,off}"), std::string::npos)
      << result.output;
  result = cohort::testing::RunCommand("COHORT_ZERO_SKIPPING=no " + kCohortTrain);
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_NE(result.output.find("no not in {on,off}"), std::string::npos) << result.output;
}

}  // namespace
}  // namespace cohort::train
