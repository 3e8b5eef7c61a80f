#include "train/data/shard_sampler.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <numeric>
#include <set>

#include "train/data/shuffle.h"

namespace cohort::train {
namespace {

TEST(ShuffledOrder, IsAPermutationFixedBySeedAndPass) {
  const auto order = ShuffledOrder(1000, 7, 0);
  std::vector<int64_t> sorted = order;
  std::sort(sorted.begin(), sorted.end());
  std::vector<int64_t> identity(1000);
  std::iota(identity.begin(), identity.end(), 0);
  EXPECT_EQ(sorted, identity);
  EXPECT_NE(order, identity);
  EXPECT_EQ(order, ShuffledOrder(1000, 7, 0));
  EXPECT_NE(order, ShuffledOrder(1000, 7, 1));
  EXPECT_NE(order, ShuffledOrder(1000, 8, 0));
}

// The sharding property: within each epoch no sample is used twice, whatever the batch and worker
// counts, and an epoch that fits in the data set leaves out fewer samples than one global batch.
TEST(ShardSampler, NoSampleIsUsedTwiceInAnEpoch) {
  constexpr int64_t kSamples = 103;  // prime: batches never line up with the end of the data
  for (int workers : {1, 2, 3, 5}) {
    for (int64_t batch : {1, 4, 7}) {
      const int64_t global = workers * batch;
      const int64_t steps_per_epoch = kSamples / global;
      constexpr int kEpochs = 3;
      // (epoch, sample) -> how many times some worker used it.
      std::map<std::pair<int64_t, int64_t>, int> uses;
      for (int rank = 0; rank < workers; ++rank) {
        ShardSampler sampler(kSamples, workers, rank, batch, steps_per_epoch, 42);
        for (int64_t step = 0; step < kEpochs * steps_per_epoch; ++step) {
          const auto indices = sampler.BatchIndices(step);
          ASSERT_EQ(static_cast<int64_t>(indices.size()), batch);
          for (int64_t sample : indices) ++uses[{step / steps_per_epoch, sample}];
        }
      }
      for (int epoch = 0; epoch < kEpochs; ++epoch) {
        int64_t used = 0;
        for (int64_t sample = 0; sample < kSamples; ++sample) {
          const int count = uses[{epoch, sample}];
          ASSERT_LE(count, 1) << "epoch " << epoch << " sample " << sample << " workers " << workers
                              << " batch " << batch;
          used += count;
        }
        EXPECT_EQ(used, steps_per_epoch * global);
        EXPECT_GT(used, kSamples - global);
      }
    }
  }
}

// Each epoch has an order of its own: the second epoch does not replay the first.
TEST(ShardSampler, EachEpochIsShuffledAnew) {
  ShardSampler sampler(100, 2, 0, 10, 5, 7);
  EXPECT_NE(sampler.BatchIndices(0), sampler.BatchIndices(5));
  EXPECT_EQ(sampler.BatchIndices(5), ShardSampler(100, 2, 0, 10, 5, 7).BatchIndices(5));
}

// An epoch longer than the data set reads one whole order, then the next: every sample is used
// once per pass within the epoch, by exactly one worker.
TEST(ShardSampler, AnEpochLongerThanTheDataSetUsesEverySampleOncePerPass) {
  constexpr int64_t kSamples = 30;
  constexpr int kWorkers = 2;
  constexpr int64_t kBatch = 5, kStepsPerEpoch = 9;  // 90 samples: three passes per epoch
  for (int64_t epoch = 0; epoch < 2; ++epoch) {
    std::map<int64_t, int> uses;
    for (int rank = 0; rank < kWorkers; ++rank) {
      ShardSampler sampler(kSamples, kWorkers, rank, kBatch, kStepsPerEpoch, 3);
      for (int64_t step = epoch * kStepsPerEpoch; step < (epoch + 1) * kStepsPerEpoch; ++step) {
        for (int64_t sample : sampler.BatchIndices(step)) ++uses[sample];
      }
    }
    ASSERT_EQ(static_cast<int64_t>(uses.size()), kSamples);
    for (const auto& [sample, count] : uses) EXPECT_EQ(count, 3) << "sample " << sample;
  }
}

// N workers at batch B see, step by step, the samples one worker sees at batch N*B.
TEST(ShardSampler, WorkersSplitTheSingleProcessGlobalBatch) {
  ShardSampler single(500, 1, 0, 30, 16, 9);
  std::vector<ShardSampler> workers;
  for (int rank = 0; rank < 3; ++rank) workers.emplace_back(500, 3, rank, 10, 16, 9);
  for (int64_t step = 0; step < 40; ++step) {
    std::vector<int64_t> joined;
    for (auto& worker : workers) {
      const auto part = worker.BatchIndices(step);
      joined.insert(joined.end(), part.begin(), part.end());
    }
    EXPECT_EQ(joined, single.BatchIndices(step)) << "step " << step;
  }
}

TEST(ShardSampler, BatchesArePureFunctionsOfTheStep) {
  ShardSampler forward(200, 2, 1, 16, 6, 3), random_access(200, 2, 1, 16, 6, 3);
  std::vector<std::vector<int64_t>> in_order;
  for (int64_t step = 0; step < 30; ++step) in_order.push_back(forward.BatchIndices(step));
  for (int64_t step : {29, 3, 17, 0, 12}) {
    EXPECT_EQ(random_access.BatchIndices(step), in_order[step]);
  }
}

TEST(EvaluationShard, PartsAreDisjointAndCoverTheSet) {
  for (int workers : {1, 2, 3, 7}) {
    int64_t next = 0;
    for (int rank = 0; rank < workers; ++rank) {
      const auto [begin, end] = EvaluationShard(100, workers, rank);
      EXPECT_EQ(begin, next);
      EXPECT_LE(end - begin, 100 / workers + 1);
      EXPECT_GE(end - begin, 100 / workers);
      next = end;
    }
    EXPECT_EQ(next, 100);
  }
}

}  // namespace
}  // namespace cohort::train
