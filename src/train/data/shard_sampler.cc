#include "train/data/shard_sampler.h"

#include <algorithm>

#include "train/data/shuffle.h"

namespace cohort::train {

ShardSampler::ShardSampler(int64_t num_samples, int num_workers, int rank, int64_t per_worker_batch,
                           int64_t steps_per_epoch, uint64_t seed)
    : num_samples_(num_samples),
      num_workers_(num_workers),
      rank_(rank),
      per_worker_batch_(per_worker_batch),
      steps_per_epoch_(steps_per_epoch),
      orders_per_epoch_((steps_per_epoch * per_worker_batch * num_workers + num_samples - 1) /
                        num_samples),
      seed_(seed) {
  cached_[0].first = cached_[1].first = -1;
}

const std::vector<int64_t>& ShardSampler::Order(int64_t order_number) {
  for (auto& [cached_number, order] : cached_) {
    if (cached_number == order_number) return order;
  }
  auto& slot = cached_[next_slot_];
  next_slot_ = 1 - next_slot_;
  slot.first = order_number;
  slot.second = ShuffledOrder(num_samples_, seed_, order_number);
  return slot.second;
}

std::vector<int64_t> ShardSampler::BatchIndices(int64_t step) {
  std::vector<int64_t> indices;
  indices.reserve(static_cast<size_t>(per_worker_batch_));
  const int64_t epoch = step / steps_per_epoch_;
  // The position of this worker's first sample within the epoch's stream of orders.
  const int64_t first = (step % steps_per_epoch_) * global_batch() + rank_ * per_worker_batch_;
  for (int64_t position = first; position < first + per_worker_batch_; ++position) {
    const int64_t order_number = epoch * orders_per_epoch_ + position / num_samples_;
    indices.push_back(Order(order_number)[position % num_samples_]);
  }
  return indices;
}

std::pair<int64_t, int64_t> EvaluationShard(int64_t size, int num_workers, int rank) {
  const int64_t base = size / num_workers, extra = size % num_workers;
  const int64_t begin = rank * base + std::min<int64_t>(rank, extra);
  return {begin, begin + base + (rank < extra ? 1 : 0)};
}

}  // namespace cohort::train
