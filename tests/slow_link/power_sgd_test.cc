// PowerSgdReducer (train/power_sgd.h): the approximation improves with rank, error feedback loses
// nothing over time, and every rank applies the same bits.
#include "train/power_sgd.h"

#include <gtest/gtest.h>
#include <torch/nn/functional/loss.h>
#include <torch/optim/sgd.h>
#include <torch/types.h>
#include <torch/utils.h>

#include <cstring>

#include "thread_group.h"
#include "train/models.h"
#include "train/test_support.h"

namespace cohort::train {
namespace {

// A [rows, cols] matrix whose singular values fall by 0.3 one after the other (1, 0.3, 0.09, ...).
torch::Tensor DecayingSpectrum(int64_t rows, int64_t cols, uint64_t seed) {
  torch::manual_seed(seed);
  const int64_t count = std::min(rows, cols);
  torch::Tensor u = std::get<0>(torch::linalg_qr(torch::randn({rows, count})));
  torch::Tensor v = std::get<0>(torch::linalg_qr(torch::randn({cols, count})));
  torch::Tensor values = torch::pow(torch::full({count}, 0.3), torch::arange(count));
  return torch::mm(u * values, v.t());
}

// The relative error of one compressed step on `gradient` with `rank`, alone (one worker).
double OneStepError(const torch::Tensor& gradient, int rank) {
  torch::Tensor parameter = torch::zeros_like(gradient);
  parameter.mutable_grad() = gradient.clone();
  SingleProcessStrategy alone;
  PowerSgdReducer reducer({parameter}, &alone,
                          {.rank = rank, .start_step = 0, .warm_start = false});
  EXPECT_TRUE(reducer.compresses(0));
  const Status status = reducer.Reduce(0, std::chrono::seconds(5));
  EXPECT_TRUE(status.ok()) << status.ToString();
  return ((parameter.grad() - gradient).norm() / gradient.norm()).item<double>();
}

TEST(PowerSgd, ReconstructionErrorFallsWithRank) {
  testing::UseOneComputeThread();
  const torch::Tensor gradient = DecayingSpectrum(64, 48, 7);
  double previous = 1e9;
  for (int rank : {1, 2, 4, 8}) {
    const double error = OneStepError(gradient, rank);
    EXPECT_LT(error, previous) << "rank " << rank;
    previous = error;
  }
  // Rank 8 keeps all but about 0.3^8 of the largest singular value.
  EXPECT_LT(previous, 0.01);
}

TEST(PowerSgd, CompressesMatricesOnlyAndAveragesVectorsExactly) {
  testing::UseOneComputeThread();
  torch::Tensor matrix = torch::zeros({64, 48});
  torch::Tensor bias = torch::zeros({64});
  torch::Tensor small = torch::zeros({2, 3});  // rank 2 would not halve it
  torch::manual_seed(1);
  const torch::Tensor bias_gradient = torch::randn({64});
  matrix.mutable_grad() = torch::randn({64, 48});
  bias.mutable_grad() = bias_gradient.clone();
  small.mutable_grad() = torch::randn({2, 3});
  SingleProcessStrategy alone;
  PowerSgdReducer reducer({matrix, bias, small}, &alone, {.rank = 2, .start_step = 0});
  EXPECT_TRUE(reducer.compresses(0));
  EXPECT_FALSE(reducer.compresses(1));
  EXPECT_FALSE(reducer.compresses(2));
  EXPECT_EQ(reducer.uncompressed_floats(), 64u * 48 + 64 + 6);
  EXPECT_EQ(reducer.compressed_floats(), (64u + 48) * 2 + 64 + 6);
  ASSERT_TRUE(reducer.Reduce(0, std::chrono::seconds(5)).ok());
  EXPECT_TRUE(torch::equal(bias.grad(), bias_gradient));
}

TEST(PowerSgd, ErrorFeedbackMakesTheAppliedSumConvergeToTheGradientSum) {
  testing::UseOneComputeThread();
  // Gradients of full rank: a fixed part and noise. Rank 1 misses most of each one, but what it
  // misses is carried into the next step, so the sum of what was applied trails the sum of the
  // gradients by one bounded error, ever smaller beside the growing sum.
  torch::manual_seed(3);
  const torch::Tensor fixed = torch::randn({32, 24});
  torch::Tensor parameter = torch::zeros({32, 24});
  SingleProcessStrategy alone;
  PowerSgdReducer reducer({parameter}, &alone, {.rank = 1, .start_step = 0});
  torch::Tensor gradient_sum = torch::zeros({32, 24});
  torch::Tensor applied_sum = torch::zeros({32, 24});
  std::vector<double> relative_gaps;
  for (int step = 0; step < 400; ++step) {
    const torch::Tensor gradient = fixed + torch::randn({32, 24});
    parameter.mutable_grad() = gradient.clone();
    ASSERT_TRUE(reducer.Reduce(step, std::chrono::seconds(5)).ok());
    gradient_sum += gradient;
    applied_sum += parameter.grad();
    relative_gaps.push_back(
        ((applied_sum - gradient_sum).norm() / gradient_sum.norm()).item<double>());
  }
  EXPECT_GT(relative_gaps[0], 0.3);  // one step alone is a poor approximation
  EXPECT_LT(relative_gaps[399], relative_gaps[9] / 4);
  EXPECT_LT(relative_gaps[399], 0.05);
}

// Two ranks with different data: after every step (uncompressed before start_step, compressed
// from it on), both hold the same weights, bit for bit.
TEST(PowerSgd, EveryRankAppliesTheSameBits) {
  testing::UseOneComputeThread();
  constexpr int kRanks = 2, kSteps = 6;
  std::vector<torch::nn::Sequential> models;
  for (int rank = 0; rank < kRanks; ++rank) {
    torch::manual_seed(11);
    auto model = MakeModel("bn_cnn", {12, 12, 4});
    ASSERT_TRUE(model.ok());
    models.push_back(*model);
  }
  std::vector<torch::Tensor> images, labels;
  for (int rank = 0; rank < kRanks; ++rank) {
    torch::manual_seed(100 + rank);
    images.push_back(torch::rand({8, 1, 12, 12}));
    labels.push_back(torch::randint(0, 4, {8}, torch::kInt64));
  }
  testing::ThreadGroup group(kRanks);
  std::vector<std::vector<torch::Tensor>> weights(kRanks);  // by rank: after each step, flat
  std::vector<Status> results(kRanks);
  group.Run([&](int rank) {
    torch::nn::Sequential& model = models[rank];
    torch::optim::SGD optimizer(model->parameters(), torch::optim::SGDOptions(0.1));
    PowerSgdReducer reducer(model->parameters(), group.strategy(rank),
                            {.rank = 2, .start_step = 2});
    for (int step = 0; step < kSteps; ++step) {
      optimizer.zero_grad();
      torch::nn::functional::cross_entropy(model->forward(images[rank]), labels[rank]).backward();
      results[rank] = reducer.Reduce(step, std::chrono::seconds(30));
      if (!results[rank].ok()) return;
      optimizer.step();
      torch::NoGradGuard no_grad;
      std::vector<torch::Tensor> flat;
      for (const auto& parameter : model->parameters()) flat.push_back(parameter.reshape({-1}));
      weights[rank].push_back(torch::cat(flat).clone());
    }
  });
  for (const Status& status : results) ASSERT_TRUE(status.ok()) << status.ToString();
  ASSERT_EQ(weights[0].size(), static_cast<size_t>(kSteps));
  for (int step = 0; step < kSteps; ++step) {
    const torch::Tensor& first = weights[0][step];
    const torch::Tensor& second = weights[1][step];
    ASSERT_EQ(first.numel(), second.numel());
    EXPECT_EQ(std::memcmp(first.data_ptr<float>(), second.data_ptr<float>(),
                          static_cast<size_t>(first.numel()) * sizeof(float)),
              0)
        << "step " << step;
  }
  // The steps changed the weights (the test compares something that moves).
  EXPECT_FALSE(torch::equal(weights[0][kSteps - 1], weights[0][0]));
}

TEST(PowerSgd, RefusesRanksAndStartStepsOutOfRange) {
  EXPECT_FALSE(CheckPowerSgdOptions({.rank = 0}).ok());
  EXPECT_FALSE(CheckPowerSgdOptions({.rank = 65}).ok());
  EXPECT_FALSE(CheckPowerSgdOptions({.rank = 2, .start_step = -1}).ok());
  EXPECT_TRUE(CheckPowerSgdOptions({.rank = 4, .start_step = 0}).ok());
}

}  // namespace
}  // namespace cohort::train
