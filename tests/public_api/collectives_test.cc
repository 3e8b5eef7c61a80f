// cohort/collectives.h with real worker processes: gradients averaged during backward, the
// chief's parameters, buffers and optimizer state broadcast, tensors reduced, shared and gathered,
// and a model that differs between workers named at the first broadcast.
#include "cohort/collectives.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <fstream>

#include "api_test_support.h"
#include "cohort/status.h"

namespace cohort {
namespace {

using api_testing::Report;
using api_testing::TestStrategyOptions;
using api_testing::Workers;

struct NetImpl : torch::nn::Module {
  explicit NetImpl(int hidden = 8) {
    fc1 = register_module("fc1", torch::nn::Linear(4, hidden));
    norm = register_module("norm", torch::nn::BatchNorm1d(hidden));
    fc2 = register_module("fc2", torch::nn::Linear(hidden, 1));
  }
  torch::Tensor forward(torch::Tensor x) { return fc2(torch::relu(norm(fc1(x)))); }
  torch::nn::Linear fc1{nullptr}, fc2{nullptr};
  torch::nn::BatchNorm1d norm{nullptr};
};
TORCH_MODULE(Net);

struct EmptyImpl : torch::nn::Module {};
TORCH_MODULE(Empty);

std::string Values(const torch::Tensor& tensor) {
  std::string text;
  const torch::Tensor flat = tensor.flatten().to(torch::kFloat64);
  for (int64_t i = 0; i < flat.numel(); ++i) text += std::to_string(flat[i].item<double>()) + " ";
  return text;
}

TEST(Collectives, TensorsAreReducedBroadcastAndGathered) {
  const auto outcomes = Workers(3, [](const Cluster& cluster) {
    MultiWorkerMirrored strategy(cluster, TestStrategyOptions());
    const auto rank = static_cast<double>(strategy.rank());
    torch::Tensor sum = torch::full({3}, rank + 1, torch::kFloat64);
    AllReduce(strategy, sum);
    torch::Tensor maximum = torch::full({2}, static_cast<int64_t>(rank * 10), torch::kInt64);
    AllReduce(strategy, maximum, ReduceOp::kMax);
    torch::Tensor shared = torch::full({2}, static_cast<float>(rank + 5));
    Broadcast(strategy, shared, /*root=*/2);
    const torch::Tensor gathered = AllGather(strategy, torch::full({2}, static_cast<int>(rank)));
    Barrier(strategy);
    Report("sum " + Values(sum));
    Report("max " + Values(maximum));
    Report("shared " + Values(shared));
    Report("gathered " + Values(gathered));
    return 0;
  });
  for (const auto& outcome : outcomes) {
    ASSERT_EQ(outcome.exit_code, 0) << outcome.report;
    EXPECT_NE(outcome.report.find("sum 6.000000 6.000000 6.000000"), std::string::npos)
        << outcome.report;
    EXPECT_NE(outcome.report.find("max 20.000000 20.000000"), std::string::npos);
    EXPECT_NE(outcome.report.find("shared 7.000000 7.000000"), std::string::npos);
    EXPECT_NE(outcome.report.find("gathered 0.000000 0.000000 1.000000 1.000000 2.000000 2.000000"),
              std::string::npos);
  }
}

TEST(Collectives, TheChiefsParametersBuffersAndOptimizerStateReachEveryWorker) {
  const auto outcomes = Workers(3, [](const Cluster& cluster) {
    MultiWorkerMirrored strategy(cluster, TestStrategyOptions());
    torch::manual_seed(100 + strategy.rank());  // every worker draws other weights
    Net net;
    torch::optim::Adam optimizer(net->parameters(), 0.01);
    // The chief has trained a step: Adam has moments, batch norm running statistics.
    if (strategy.is_chief()) {
      net->train();
      optimizer.zero_grad();
      net->forward(torch::randn({8, 4})).sum().backward();
      optimizer.step();
    }
    BroadcastFromChief(strategy, *net);
    BroadcastFromChief(strategy, optimizer);
    Report("weight " + Values(net->fc1->weight));
    Report("running_mean " + Values(net->norm->running_mean));
    // The same next step everywhere gives the same weights only if the Adam state matched.
    optimizer.zero_grad();
    torch::manual_seed(7);
    net->forward(torch::randn({8, 4})).sum().backward();
    optimizer.step();
    Report("after " + Values(net->fc2->weight));
    return 0;
  });
  for (const auto& outcome : outcomes) ASSERT_EQ(outcome.exit_code, 0) << outcome.report;
  EXPECT_EQ(outcomes[1].report, outcomes[0].report);
  EXPECT_EQ(outcomes[2].report, outcomes[0].report);
  EXPECT_EQ(outcomes[0].report.find("running_mean 0.000000 0.000000 0.000000"), std::string::npos)
      << "the chief's running statistics did not move: " << outcomes[0].report;
}

TEST(Collectives, GradientsAreTheMeanOverWorkers) {
  const auto outcomes = Workers(2, [](const Cluster& cluster) {
    MultiWorkerMirrored strategy(cluster, TestStrategyOptions());
    torch::nn::Linear linear(3, 2);
    BroadcastFromChief(strategy, *linear);
    // Tiny buckets: one per parameter, so that sums start during backward.
    GradientAllReduce all_reduce(strategy, *linear, /*bucket_bytes=*/4);
    const torch::Tensor x = torch::full({1, 3}, static_cast<float>(strategy.rank() + 1));
    all_reduce.BeginStep();
    linear->forward(x).sum().backward();
    all_reduce.FinishStep();
    // d(sum)/d(weight) = x per output row: the mean of x over ranks 1 and 2 is 1.5.
    Report("grad " + Values(linear->weight.grad()));
    Report("buckets " + std::to_string(all_reduce.num_buckets()));
    return 0;
  });
  for (const auto& outcome : outcomes) {
    ASSERT_EQ(outcome.exit_code, 0) << outcome.report;
    EXPECT_NE(outcome.report.find("grad 1.500000 1.500000 1.500000 1.500000 1.500000 1.500000"),
              std::string::npos)
        << outcome.report;
    EXPECT_NE(outcome.report.find("buckets 2"), std::string::npos) << outcome.report;
  }
}

TEST(Collectives, AModelThatDiffersBetweenWorkersIsNamedOnEveryWorker) {
  const auto outcomes = Workers(3, [](const Cluster& cluster) {
    MultiWorkerMirrored strategy(cluster, TestStrategyOptions());
    Net net(cluster.rank() == 2 ? 16 : 8);  // worker 2 built a wider model
    BroadcastFromChief(strategy, *net);
    return 0;
  });
  for (const auto& outcome : outcomes) {
    EXPECT_EQ(outcome.exit_code, 1) << outcome.report;
    EXPECT_NE(outcome.report.find("the model differs between workers"), std::string::npos)
        << outcome.report;
    EXPECT_NE(outcome.report.find("fc1.weight"), std::string::npos) << outcome.report;
    EXPECT_NE(outcome.report.find("worker:2"), std::string::npos) << outcome.report;
  }
  EXPECT_NE(outcomes[2].report.find("[16, 4]"), std::string::npos) << outcomes[2].report;
}

TEST(Collectives, AModuleWithoutParametersIsRefused) {
  MultiWorkerMirrored strategy(Cluster::FromTfConfig(""), TestStrategyOptions());
  Empty empty;
  try {
    GradientAllReduce all_reduce(strategy, *empty);
    FAIL() << "no error";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("has no parameters"), std::string::npos)
        << error.what();
  }
  EXPECT_THROW(BroadcastFromChief(strategy, *empty), Error);
}

TEST(Collectives, SaveModuleWritesWhatLoadModuleReads) {
  api_testing::TempDir dir;
  Net saved, loaded;
  SaveModule(*saved, dir / "model/weights.pt");
  LoadModule(*loaded, dir / "model/weights.pt");
  EXPECT_TRUE(torch::equal(saved->fc1->weight, loaded->fc1->weight));
  try {
    LoadModule(*loaded, dir / "missing.pt");
    FAIL() << "no error";
  } catch (const Error& error) {
    EXPECT_EQ(error.code(), ErrorCode::kNotFound);
  }
}

// A module saved with SaveModule carries its SHA-256 beside it; flipped bytes are named, never
// loaded (a user's own checkpoint, as examples/custom-loop writes one).
TEST(Collectives, LoadModuleRefusesFlippedBytes) {
  api_testing::TempDir dir;
  Net saved, loaded;
  const std::filesystem::path path = dir / "checkpoint.pt";
  SaveModule(*saved, path);
  std::ifstream checksum(path.string() + ".sha256");
  std::string hex, name;
  checksum >> hex >> name;
  EXPECT_EQ(hex.size(), 64u);
  EXPECT_EQ(name, "checkpoint.pt");
  {
    std::fstream file(path, std::ios::in | std::ios::out | std::ios::binary);
    file.seekg(64);
    const char byte = static_cast<char>(file.get() ^ 0x5a);
    file.seekp(64);
    file.put(byte);
  }
  try {
    LoadModule(*loaded, path);
    FAIL() << "flipped bytes were loaded";
  } catch (const Error& error) {
    EXPECT_EQ(error.code(), ErrorCode::kFailedPrecondition);
    EXPECT_NE(std::string(error.what()).find("checksum mismatch"), std::string::npos)
        << error.what();
  }
}

}  // namespace
}  // namespace cohort
