// cohort/data.h: sources, the torch::data adapter, MNIST files, and the per-worker batches with
// their check that every worker yields the same number of batches.
#include "cohort/data.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <filesystem>
#include <set>

#include "api_test_support.h"
#include "cohort/status.h"
#include "cohort/strategy.h"

namespace cohort {
namespace {

using api_testing::Report;
using api_testing::TestStrategyOptions;
using api_testing::Workers;

// A torch::data dataset of the user's own: sample i is [i, i] with target i.
class Squares : public torch::data::datasets::Dataset<Squares> {
 public:
  explicit Squares(int64_t size) : size_(size) {}
  torch::data::Example<> get(size_t index) override {
    const auto value = static_cast<float>(index);
    return {torch::full({2}, value), torch::tensor(static_cast<int64_t>(index))};
  }
  torch::optional<size_t> size() const override { return static_cast<size_t>(size_); }

 private:
  int64_t size_;
};

TEST(Data, TensorSourceGathersTheAskedSamplesInOrder) {
  TensorSource source(torch::arange(10).reshape({5, 2}), torch::arange(5));
  EXPECT_EQ(source.size(), 5);
  const Batch batch = source.Get({3, 0});
  EXPECT_EQ(batch.size(), 2);
  EXPECT_EQ(batch.targets[0].item<int64_t>(), 3);
  EXPECT_EQ(batch.targets[1].item<int64_t>(), 0);
  EXPECT_EQ(batch.inputs[0][1].item<int64_t>(), 7);
}

TEST(Data, TensorSourceRefusesInputsAndTargetsOfDifferentLengths) {
  try {
    TensorSource source(torch::zeros({5, 2}), torch::zeros({4}));
    FAIL() << "no error";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("inputs hold 5 samples, the targets 4"),
              std::string::npos)
        << error.what();
  }
}

TEST(Data, DatasetSourceStacksATorchDataset) {
  DatasetSource<Squares> source(Squares(7));
  EXPECT_EQ(source.size(), 7);
  const Batch batch = source.Get({6, 2});
  EXPECT_EQ(batch.inputs.sizes(), (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(batch.inputs[0][0].item<float>(), 6.0f);
  EXPECT_EQ(batch.targets[1].item<int64_t>(), 2);
}

TEST(Data, LoadMnistReadsFashionMnist) {
  const std::string dir = "/usr/share/datasets/fashion-mnist";
  // Debian's dataset-fashion-mnist, which scripts/setup.sh installs with the build's packages.
  ASSERT_TRUE(std::filesystem::exists(dir))
      << dir << " is not installed: apt-get install dataset-fashion-mnist (scripts/setup.sh does)";
  const TensorSource test = LoadMnist(dir, "test");
  EXPECT_EQ(test.size(), 10000);
  EXPECT_EQ(test.inputs().sizes(), (std::vector<int64_t>{10000, 1, 28, 28}));
  EXPECT_LE(test.inputs().max().item<float>(), 1.0f);
  EXPECT_EQ(test.targets().max().item<int64_t>(), 9);
}

TEST(Data, LoadMnistNamesTheMissingDirectory) {
  try {
    LoadMnist("/nonexistent/cohort-mnist", "train");
    FAIL() << "no error";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("/nonexistent/cohort-mnist"), std::string::npos)
        << error.what();
  }
}

TEST(Data, ShardedBatchesAloneCoverAnEpochOnce) {
  MultiWorkerMirrored strategy(Cluster::FromTfConfig(""), TestStrategyOptions());
  TensorSource source(torch::arange(20).reshape({20, 1}), torch::arange(20));
  ShardedBatches batches(strategy, source, /*per_worker_batch=*/4, /*seed=*/3);
  EXPECT_EQ(batches.steps_per_epoch(), 5);
  std::set<int64_t> seen;
  for (int64_t step = 0; step < batches.steps_per_epoch(); ++step) {
    const Batch batch = batches.Get(0, step);
    for (int64_t i = 0; i < batch.size(); ++i) seen.insert(batch.targets[i].item<int64_t>());
  }
  EXPECT_EQ(seen.size(), 20u);
  EXPECT_THROW(batches.Get(0, 5), Error);
}

TEST(Data, WorkersGetDisjointShares) {
  const auto outcomes = Workers(2, [](const Cluster& cluster) {
    MultiWorkerMirrored strategy(cluster, TestStrategyOptions());
    TensorSource source(torch::arange(16).reshape({16, 1}), torch::arange(16));
    ShardedBatches batches(strategy, source, 4, 9);
    std::string ids;
    for (int64_t step = 0; step < batches.steps_per_epoch(); ++step) {
      const Batch batch = batches.Get(1, step);
      for (int64_t i = 0; i < batch.size(); ++i) {
        ids += std::to_string(batch.targets[i].item<int64_t>()) + " ";
      }
    }
    Report(ids);
    return 0;
  });
  ASSERT_EQ(outcomes[0].exit_code, 0) << outcomes[0].report;
  ASSERT_EQ(outcomes[1].exit_code, 0) << outcomes[1].report;
  std::set<std::string> all;
  size_t total = 0;
  for (const auto& outcome : outcomes) {
    std::istringstream in(outcome.report);
    for (std::string id; in >> id; ++total) all.insert(id);
  }
  EXPECT_EQ(total, 16u);
  EXPECT_EQ(all.size(), 16u);  // no sample twice in an epoch
}

TEST(Data, DifferentBatchCountsPerWorkerAreNamed) {
  const auto outcomes = Workers(2, [](const Cluster& cluster) {
    MultiWorkerMirrored strategy(cluster, TestStrategyOptions());
    // Worker 1 loaded a shorter file.
    const int64_t samples = cluster.rank() == 0 ? 64 : 48;
    TensorSource source(torch::zeros({samples, 1}), torch::zeros({samples}));
    ShardedBatches batches(strategy, source, 8, 1);
    return 0;
  });
  for (const auto& outcome : outcomes) {
    EXPECT_EQ(outcome.exit_code, 1);
    EXPECT_NE(outcome.report.find("worker:0 4 batches (64 samples), worker:1 3 batches (48 "
                                  "samples)"),
              std::string::npos)
        << outcome.report;
  }
}

}  // namespace
}  // namespace cohort
