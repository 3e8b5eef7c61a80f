// A MultiWorkerMirrored training of the flagship model (cohort-train, the CNN) by two workers on
// two emulated hosts (tests/testing/emulated_cluster.h): each worker on its own host, both
// listening on the same port, reaching each other by the service names Kubernetes would give
// them. A few steps on a tiny synthetic data set: seconds, not a measurement.
#include <gtest/gtest.h>

#include <string>

#include "testing/emulated_cluster.h"
#include "testing/host.h"
#include "testing/scratch_directory.h"
#include "testing/synthetic_data.h"

namespace cohort::testing {
namespace {

using namespace std::chrono_literals;

const std::string kCohortTrain = std::string(COHORT_BINARY_DIR) + "/apps/cohort-train/cohort-train";

TEST(TrainingOnEmulatedHosts, TwoWorkersOnTwoHostsTrainTheFlagshipByHostName) {
  if (std::string missing = MissingForEmulatedHosts(); !missing.empty()) {
    if (RunningInCi()) FAIL() << "emulated hosts need what this machine lacks: " << missing;
    GTEST_SKIP() << "emulated hosts need what this machine lacks: " << missing;
  }
  ScratchDirectory scratch("cohort-hosts-training");
  const std::string data = scratch.path().string();
  train::testing::WriteDatasetFiles(train::testing::MakeSyntheticDataset(64, 1, 28), data, "train",
                                    /*gzip=*/false);
  train::testing::WriteDatasetFiles(train::testing::MakeSyntheticDataset(32, 2, 28), data, "t10k",
                                    /*gzip=*/false);

  EmulatedClusterOptions options;
  options.hosts = 2;
  options.aliases = {{0, {"smoke-worker-0.default.svc"}}, {1, {"smoke-worker-1.default.svc"}}};
  auto cluster = EmulatedCluster::Create(options);
  ASSERT_TRUE(cluster.ok()) << cluster.status().ToString();

  std::vector<std::unique_ptr<HostProcess>> workers;
  for (int worker : {0, 1}) {
    const std::string tf_config =
        "{\"cluster\":{\"worker\":[\"smoke-worker-0.default.svc:2222\","
        "\"smoke-worker-1.default.svc:2222\"]},\"task\":{\"type\":\"worker\",\"index\":" +
        std::to_string(worker) + "}}";
    auto started = (*cluster)->Start(
        worker, "TF_CONFIG='" + tf_config +
                    "' COHORT_JOB_NAME=smoke COHORT_JOB_SECRET=hosts-training-test exec " +
                    kCohortTrain + " --data_dir " + data +
                    " --epochs 1 --steps_per_epoch 3 --per_worker_batch 8 --threads 1"
                    " --startup_timeout_s 60");
    ASSERT_TRUE(started.ok()) << started.status().ToString();
    workers.push_back(std::move(started).value());
  }
  for (int worker : {0, 1}) {
    EXPECT_EQ(workers[worker]->Wait(180s), 0) << "worker " << worker << ":\n"
                                              << workers[worker]->Output();
  }
  for (int worker : {0, 1}) {
    const std::string log = workers[worker]->Output();
    EXPECT_NE(log.find("worker " + std::to_string(worker) + " of 2"), std::string::npos) << log;
    // The same-host path is on, and honestly unavailable between hosts.
    EXPECT_NE(log.find("collectives over TCP (same-host path unavailable)"), std::string::npos)
        << log;
    EXPECT_NE(log.find("test accuracy"), std::string::npos) << log;
  }
}

}  // namespace
}  // namespace cohort::testing
