// ShardSampler: which training samples each worker uses at each global step.
//
// Epoch e reads the data in its own seeded order, ShuffledOrder(size, seed, e). Step t of the epoch
// consumes the next global batch, epoch positions [t*G, (t+1)*G) with G = per_worker_batch *
// num_workers, and worker r takes the slice [t*G + r*B, t*G + (r+1)*B). Hence:
//   - within an epoch no sample is used twice, and each one used is used by exactly one worker:
//     the workers' slices are disjoint. An epoch of steps_per_epoch * G <= size samples leaves out
//     the rest (Keras's drop_remainder: every batch is full, so every worker does the same work);
//     a longer epoch goes on into further orders of its own, as a repeated data set would;
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
               int64_t steps_per_epoch, uint64_t seed);

  // This worker's sample indices at global step `step` (per_worker_batch of them), where global
  // step s is step s % steps_per_epoch of epoch s / steps_per_epoch. Not thread-safe: it caches
  // the orders it last used.
  std::vector<int64_t> BatchIndices(int64_t step);

  int64_t global_batch() const { return per_worker_batch_ * num_workers_; }
  int64_t per_worker_batch() const { return per_worker_batch_; }

 private:
  const std::vector<int64_t>& Order(int64_t order_number);

  int64_t num_samples_;
  int num_workers_;
  int rank_;
  int64_t per_worker_batch_;
  int64_t steps_per_epoch_;
  // How many orders one epoch reads: 1 unless an epoch is longer than the data set.
  int64_t orders_per_epoch_;
  uint64_t seed_;
  // The last two orders used: a batch straddles at most two.
  std::pair<int64_t, std::vector<int64_t>> cached_[2];
  int next_slot_ = 0;
};

// The contiguous part [begin, end) of an evaluation set of `size` samples that worker `rank` of
// `num_workers` evaluates; the parts are disjoint, cover the set and differ in size by at most 1.
std::pair<int64_t, int64_t> EvaluationShard(int64_t size, int num_workers, int rank);

}  // namespace cohort::train
