// LocalSgdAverager (train/local_sgd.h): the workers agree exactly at every H-th step and only
// there, the outer Nesterov step is the hand-computed one, and buffers are averaged.
#include "train/local_sgd.h"

#include <gtest/gtest.h>
#include <torch/nn/modules/batchnorm.h>
#include <torch/nn/modules/linear.h>
#include <torch/optim/sgd.h>
#include <torch/types.h>
#include <torch/utils.h>

#include <cstring>

#include "thread_group.h"
#include "train/test_support.h"

namespace cohort::train {
namespace {

bool SameBits(const torch::Tensor& a, const torch::Tensor& b) {
  return a.numel() == b.numel() && std::memcmp(a.data_ptr<float>(), b.data_ptr<float>(),
                                               static_cast<size_t>(a.numel()) * sizeof(float)) == 0;
}

torch::Tensor Flat(torch::nn::Module& module) {
  torch::NoGradGuard no_grad;
  std::vector<torch::Tensor> flat;
  for (const auto& parameter : module.parameters()) flat.push_back(parameter.reshape({-1}));
  return torch::cat(flat).clone();
}

TEST(LocalSgd, PlainAveragingAgreesExactlyEveryHSteps) {
  testing::UseOneComputeThread();
  constexpr int kRanks = 2, kH = 3, kSteps = 6;
  std::vector<torch::nn::Linear> models;
  for (int rank = 0; rank < kRanks; ++rank) {
    torch::manual_seed(5);
    models.emplace_back(4, 3);
  }
  testing::ThreadGroup group(kRanks);
  // By rank: the weights after each local step, and after each synchronization.
  std::vector<std::vector<torch::Tensor>> after_step(kRanks), after_sync(kRanks);
  std::vector<Status> results(kRanks);
  group.Run([&](int rank) {
    torch::nn::Linear& model = models[rank];
    torch::optim::SGD optimizer(model->parameters(), torch::optim::SGDOptions(0.1));
    LocalSgdAverager averager(
        model.get(), group.strategy(rank),
        {.sync_every_steps = kH, .outer_learning_rate = 1, .outer_momentum = 0});
    torch::Tensor inputs = torch::full({2, 4}, 1.0 + rank);  // each rank its own data
    for (int step = 1; step <= kSteps; ++step) {
      optimizer.zero_grad();
      model->forward(inputs * step).square().mean().backward();
      optimizer.step();
      after_step[rank].push_back(Flat(*model));
      if (step % kH == 0) {
        double skipped = -1;
        results[rank] = averager.Synchronize(std::chrono::seconds(30), 0, &skipped);
        if (!results[rank].ok()) return;
        EXPECT_EQ(skipped, 0);
        after_sync[rank].push_back(Flat(*model));
      }
    }
  });
  for (const Status& status : results) ASSERT_TRUE(status.ok()) << status.ToString();
  ASSERT_EQ(after_sync[0].size(), 2u);
  for (int step = 0; step < kSteps; ++step) {
    // Between synchronizations each rank has weights of its own.
    EXPECT_FALSE(SameBits(after_step[0][step], after_step[1][step])) << "step " << step + 1;
  }
  for (int sync = 0; sync < 2; ++sync) {
    const int step = (sync + 1) * kH - 1;
    EXPECT_TRUE(SameBits(after_sync[0][sync], after_sync[1][sync])) << "synchronization " << sync;
    const torch::Tensor mean = (after_step[0][step] + after_step[1][step]) / 2;
    EXPECT_TRUE(torch::allclose(after_sync[0][sync], mean, 1e-6, 1e-6))
        << after_sync[0][sync] << "\nversus the mean\n"
        << mean;
  }
}

TEST(LocalSgd, OuterStepIsNesterovSgdOnTheAveragedChange) {
  testing::UseOneComputeThread();
  constexpr double kLearningRate = 0.7, kMomentum = 0.9;
  std::vector<torch::nn::Linear> models;
  for (int rank = 0; rank < 2; ++rank)
    models.emplace_back(torch::nn::LinearOptions(2, 1).bias(false));
  const torch::Tensor anchor = torch::tensor({{1.0f, -2.0f}});
  // By round: each rank's weights after its local steps.
  const std::vector<std::vector<torch::Tensor>> local = {
      {torch::tensor({{0.5f, -1.0f}}), torch::tensor({{0.25f, 0.5f}})},
      {torch::tensor({{0.7f, -1.4f}}), torch::tensor({{-0.05f, 0.1f}})}};
  testing::ThreadGroup group(2);
  std::vector<std::vector<torch::Tensor>> results(2);
  std::vector<double> skipped(2, -1);
  group.Run([&](int rank) {
    torch::NoGradGuard no_grad;
    torch::nn::Linear& model = models[rank];
    model->weight.copy_(anchor);
    LocalSgdAverager averager(
        model.get(), group.strategy(rank),
        {.sync_every_steps = 4, .outer_learning_rate = kLearningRate, .outer_momentum = kMomentum});
    for (int round = 0; round < 2; ++round) {
      model->weight.copy_(local[round][rank]);
      // Rank 0 skipped one non-finite step in the first round, rank 1 two.
      const double mine = round == 0 ? rank + 1 : 0;
      double total = -1;
      ASSERT_TRUE(averager.Synchronize(std::chrono::seconds(30), mine, &total).ok());
      if (round == 0) skipped[rank] = total;
      results[rank].push_back(model->weight.clone());
    }
  });
  // By hand: delta = anchor - mean(local); v = m v + delta; theta = anchor - lr (delta + m v).
  torch::Tensor theta = anchor.clone();
  torch::Tensor velocity = torch::zeros_like(anchor);
  for (int round = 0; round < 2; ++round) {
    const torch::Tensor delta = theta - (local[round][0] + local[round][1]) / 2;
    velocity = kMomentum * velocity + delta;
    theta = theta - kLearningRate * (delta + kMomentum * velocity);
    for (int rank = 0; rank < 2; ++rank) {
      EXPECT_TRUE(torch::allclose(results[rank][round], theta, 1e-6, 1e-6))
          << "round " << round << " rank " << rank << ": " << results[rank][round] << " versus "
          << theta;
    }
  }
  // Round 1 by the numbers: the mean of (0.5, -1) and (0.25, 0.5) is (0.375, -0.25), so delta =
  // (0.625, -1.75) and theta = (1, -2) - 0.7 * 1.9 * delta = (0.16875, 0.3275).
  EXPECT_TRUE(torch::allclose(results[0][0], torch::tensor({{0.16875f, 0.3275f}}), 1e-6, 1e-6))
      << results[0][0];
  EXPECT_EQ(skipped[0], 3);
  EXPECT_EQ(skipped[1], 3);
}

TEST(LocalSgd, AveragesBatchNormStatisticsAtEachSynchronization) {
  testing::UseOneComputeThread();
  std::vector<torch::nn::BatchNorm1d> models;
  for (int rank = 0; rank < 2; ++rank) models.emplace_back(3);
  testing::ThreadGroup group(2);
  group.Run([&](int rank) {
    torch::NoGradGuard no_grad;
    auto& model = models[rank];
    LocalSgdAverager averager(model.get(), group.strategy(rank), {.sync_every_steps = 1});
    model->running_mean.fill_(rank == 0 ? 1.0 : 3.0);
    double total = 0;
    ASSERT_TRUE(averager.Synchronize(std::chrono::seconds(30), 0, &total).ok());
  });
  EXPECT_TRUE(torch::equal(models[0]->running_mean, torch::full({3}, 2.0f)));
  EXPECT_TRUE(torch::equal(models[1]->running_mean, torch::full({3}, 2.0f)));
}

TEST(LocalSgd, RefusesOptionsOutOfRange) {
  EXPECT_FALSE(CheckLocalSgdOptions({.sync_every_steps = 0}).ok());
  EXPECT_FALSE(CheckLocalSgdOptions({.sync_every_steps = 4, .outer_learning_rate = 0}).ok());
  EXPECT_FALSE(CheckLocalSgdOptions({.sync_every_steps = 4, .outer_momentum = 1}).ok());
  EXPECT_TRUE(CheckLocalSgdOptions({.sync_every_steps = 4}).ok());
}

}  // namespace
}  // namespace cohort::train
