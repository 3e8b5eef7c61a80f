// A MultiWorkerMirrored training of the flagship model (cohort-train, the CNN) by two workers on
// two emulated hosts (tests/testing/emulated_cluster.h): each worker on its own host, both
// listening on the same port, reaching each other by the service names Kubernetes would give
// them. A few steps on a tiny synthetic data set: seconds, not a measurement. And zero skipping,
// which only encodes what crosses hosts.
#include <gtest/gtest.h>

#include <string>

#include "testing/emulated_cluster.h"
#include "testing/host.h"
#include "testing/processes.h"
#include "testing/scratch_directory.h"
#include "testing/synthetic_data.h"

namespace cohort::testing {
namespace {

using namespace std::chrono_literals;

const std::string kCohortTrain = std::string(COHORT_BINARY_DIR) + "/apps/cohort-train/cohort-train";

class TrainingOnEmulatedHosts : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::string missing = MissingForEmulatedHosts(); !missing.empty()) {
      COHORT_SKIP_OR_FAIL_IN_CI("emulated hosts need what this machine lacks: " + missing);
    }
    train::testing::WriteDatasetFiles(train::testing::MakeSyntheticDataset(64, 1, 28), data_,
                                      "train", /*gzip=*/false);
    train::testing::WriteDatasetFiles(train::testing::MakeSyntheticDataset(32, 2, 28), data_,
                                      "t10k", /*gzip=*/false);
  }

  // Runs worker i of two on host-i with `environment` and `flags`, both by host name; returns
  // their output, worker 0's first, once both have exited 0 (or fails the test).
  std::vector<std::string> TrainOnTwoHosts(const std::string& environment,
                                           const std::string& flags) {
    EmulatedClusterOptions options;
    options.hosts = 2;
    options.aliases = {{0, {"smoke-worker-0.default.svc"}}, {1, {"smoke-worker-1.default.svc"}}};
    auto cluster = EmulatedCluster::Create(options);
    EXPECT_TRUE(cluster.ok()) << cluster.status().ToString();
    if (!cluster.ok()) return {};
    std::vector<std::unique_ptr<HostProcess>> workers;
    for (int worker : {0, 1}) {
      const std::string tf_config =
          "{\"cluster\":{\"worker\":[\"smoke-worker-0.default.svc:2222\","
          "\"smoke-worker-1.default.svc:2222\"]},\"task\":{\"type\":\"worker\",\"index\":" +
          std::to_string(worker) + "}}";
      auto started = (*cluster)->Start(
          worker, "TF_CONFIG='" + tf_config +
                      "' COHORT_JOB_NAME=smoke COHORT_JOB_SECRET=hosts-training-test " +
                      environment + " exec " + kCohortTrain + " --data_dir " + data_ +
                      " --epochs 1 --steps_per_epoch 3 --per_worker_batch 8 --threads 1"
                      " --startup_timeout_s 60 " +
                      flags);
      EXPECT_TRUE(started.ok()) << started.status().ToString();
      if (!started.ok()) return {};
      workers.push_back(std::move(started).value());
    }
    std::vector<std::string> logs;
    for (int worker : {0, 1}) {
      EXPECT_EQ(workers[worker]->Wait(180s), 0) << "worker " << worker << ":\n"
                                                << workers[worker]->Output();
      logs.push_back(workers[worker]->Output());
    }
    return logs;
  }

  ScratchDirectory scratch_{"cohort-hosts-training"};
  const std::string data_ = scratch_.path().string();
};

TEST_F(TrainingOnEmulatedHosts, TwoWorkersOnTwoHostsTrainTheFlagshipByHostName) {
  const std::vector<std::string> logs = TrainOnTwoHosts("", "");
  ASSERT_EQ(logs.size(), 2u);
  for (int worker : {0, 1}) {
    const std::string& log = logs[worker];
    EXPECT_NE(log.find("worker " + std::to_string(worker) + " of 2"), std::string::npos) << log;
    // The same-host path is on, and honestly unavailable between hosts.
    EXPECT_NE(log.find("collectives over TCP (same-host path unavailable)"), std::string::npos)
        << log;
    EXPECT_NE(log.find("test accuracy"), std::string::npos) << log;
  }
}

// Zero skipping (collective/zero_skipping.h, cohort-train --zero_skipping): the CNN's gradient is
// largely exact zeros (its dense layer sits behind a ReLU), so between hosts the workers send
// fewer bytes with it; the encoding is lossless, so the chief saves the same weights, bit for bit.
TEST_F(TrainingOnEmulatedHosts, ZeroSkippingSendsFewerBytesForTheSameWeights) {
  auto megabytes_sent = [](const std::string& log) {
    const std::string before = "this worker sent ";
    const size_t at = log.find(before);
    EXPECT_NE(at, std::string::npos) << log;
    return at == std::string::npos ? 0.0 : std::stod(log.substr(at + before.size()));
  };
  const std::vector<std::string> on = TrainOnTwoHosts("", "--saved_model_path " + data_ + "/on");
  const std::vector<std::string> off =
      TrainOnTwoHosts("COHORT_ZERO_SKIPPING=off", "--saved_model_path " + data_ + "/off");
  ASSERT_EQ(on.size(), 2u);
  ASSERT_EQ(off.size(), 2u);
  for (int worker : {0, 1}) {
    EXPECT_EQ(on[worker].find("zero skipping off"), std::string::npos) << on[worker];
    EXPECT_NE(off[worker].find("; zero skipping off;"), std::string::npos) << off[worker];
    EXPECT_LT(megabytes_sent(on[worker]), 0.8 * megabytes_sent(off[worker])) << on[worker] << "\n"
                                                                             << off[worker];
  }
  const CommandResult same =
      RunCommand("cmp " + data_ + "/on/weights.pt " + data_ + "/off/weights.pt");
  EXPECT_EQ(same.exit_code, 0) << same.output;
}

}  // namespace
}  // namespace cohort::testing
