// ShardSampler: which training samples each worker uses at each global step.
//
// The training data is read as an endless stream: pass 0 in ShuffledOrder(size, seed, 0), then
// pass 1 in its own order, and so on. Global step s consumes the next global batch, stream
// positions [s*G, (s+1)*G) with G = per_worker_batch * num_workers, and worker r takes the slice
// [s*G + r*B, s*G + (r+1)*B). Hence:
//   - within a pass every sample is used by exactly one worker, and the workers' slices of a pass
//     are disjoint and cover it (global batches may straddle two passes, so no sample is dropped
//     and every batch is full);
//   - N workers at batch B see, at each step, exactly the samples one worker at batch N*B sees, so
//     their averaged gradients are equal (the equivalence the tests check);
//   - the batch of any step is a pure function of (seed, step): resuming at step S needs no saved
//     iterator state, only S.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

namespace cohort::train {

class ShardSampler {
 public:
  ShardSampler(int64_t num_samples, int num_workers, int rank, int64_t per_worker_batch,
               uint64_t seed);

  // This worker's sample indices at global step `step` (per_worker_batch of them). Not
  // thread-safe: it caches the orders of the passes it last used.
  std::vector<int64_t> BatchIndices(int64_t step);

  int64_t global_batch() const { return per_worker_batch_ * num_workers_; }
  int64_t per_worker_batch() const { return per_worker_batch_; }

  // The number of global steps in one pass over the data, rounded down (Keras's default
  // steps_per_epoch for a data set that is not repeated).
  int64_t StepsPerPass() const { return num_samples_ / global_batch(); }

 private:
  const std::vector<int64_t>& OrderOfPass(int64_t pass);

  int64_t num_samples_;
  int num_workers_;
  int rank_;
  int64_t per_worker_batch_;
  uint64_t seed_;
  // The last two passes used: a batch straddles at most two.
  std::pair<int64_t, std::vector<int64_t>> cached_[2];
  int next_slot_ = 0;
};

// The contiguous part [begin, end) of an evaluation set of `size` samples that worker `rank` of
// `num_workers` evaluates; the parts are disjoint, cover the set and differ in size by at most 1.
std::pair<int64_t, int64_t> EvaluationShard(int64_t size, int num_workers, int rank);

}  // namespace cohort::train
