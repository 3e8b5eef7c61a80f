#include "train/shard_sampler.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <numeric>
#include <set>

#include "train/shuffle.h"

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

// The sharding property: within each pass over the data, every sample is used by exactly one
// worker, whatever the batch and worker counts (including global batches that straddle passes).
TEST(ShardSampler, EverySampleIsUsedByExactlyOneWorkerPerPass) {
  constexpr int64_t kSamples = 103;  // prime: batches never line up with the end of a pass
  for (int workers : {1, 2, 3, 5}) {
    for (int64_t batch : {1, 4, 7}) {
      const int64_t global = workers * batch;
      const int64_t passes = 3;
      const int64_t steps = passes * kSamples / global;
      // (pass, sample) -> how many times some worker used it.
      std::map<std::pair<int64_t, int64_t>, int> uses;
      for (int rank = 0; rank < workers; ++rank) {
        ShardSampler sampler(kSamples, workers, rank, batch, 42);
        for (int64_t step = 0; step < steps; ++step) {
          const auto indices = sampler.BatchIndices(step);
          ASSERT_EQ(static_cast<int64_t>(indices.size()), batch);
          for (int64_t j = 0; j < batch; ++j) {
            const int64_t position = step * global + rank * batch + j;
            ++uses[{position / kSamples, indices[j]}];
          }
        }
      }
      // Every complete pass covers every sample exactly once.
      for (int64_t pass = 0; pass < steps * global / kSamples; ++pass) {
        for (int64_t sample = 0; sample < kSamples; ++sample) {
          ASSERT_EQ((uses[{pass, sample}]), 1) << "pass " << pass << " sample " << sample
                                               << " workers " << workers << " batch " << batch;
        }
      }
    }
  }
}

// N workers at batch B see, step by step, the samples one worker sees at batch N*B.
TEST(ShardSampler, WorkersSplitTheSingleProcessGlobalBatch) {
  ShardSampler single(500, 1, 0, 30, 9);
  std::vector<ShardSampler> workers;
  for (int rank = 0; rank < 3; ++rank) workers.emplace_back(500, 3, rank, 10, 9);
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
  ShardSampler forward(200, 2, 1, 16, 3), random_access(200, 2, 1, 16, 3);
  std::vector<std::vector<int64_t>> in_order;
  for (int64_t step = 0; step < 30; ++step) in_order.push_back(forward.BatchIndices(step));
  for (int64_t step : {29, 3, 17, 0, 12}) {
    EXPECT_EQ(random_access.BatchIndices(step), in_order[step]);
  }
  EXPECT_EQ(forward.StepsPerPass(), 200 / 32);
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
