#include "train/data/batch_prefetcher.h"

namespace cohort::train {
namespace {

// How long the producer waits for room before it rechecks whether it should stop.
constexpr std::chrono::milliseconds kProducerPoll{200};

}  // namespace

BatchPrefetcher::BatchPrefetcher(const BatchSource& source, ShardSampler sampler,
                                 int64_t first_step, int64_t end_step, size_t depth)
    : source_(source),
      sampler_(std::move(sampler)),
      first_step_(first_step),
      end_step_(end_step),
      next_step_(first_step),
      queue_(depth) {
  thread_ = std::thread([this] { Produce(); });
}

BatchPrefetcher::~BatchPrefetcher() {
  queue_.Close();
  thread_.join();
}

void BatchPrefetcher::Produce() {
  for (int64_t step = first_step_; step < end_step_; ++step) {
    StatusOr<Batch> batch = source_.Gather(sampler_.BatchIndices(step));
    const bool failed = !batch.ok();
    if (failed) {
      batch = batch.status().WithContext("gathering the batch of step " + std::to_string(step));
    } else {
      batch->step = step;
    }
    while (true) {
      auto result = queue_.Push(std::move(batch), kProducerPoll);
      if (result == BoundedQueue<StatusOr<Batch>>::PushResult::kPushed) break;
      if (result == BoundedQueue<StatusOr<Batch>>::PushResult::kClosed) return;
      // Timed out: the consumer is busy with a long step; the batch was not moved from.
    }
    if (failed) break;
  }
  queue_.Close();
}

StatusOr<Batch> BatchPrefetcher::Next(std::chrono::milliseconds timeout) {
  if (next_step_ >= end_step_) {
    return Status::FailedPrecondition("no batch after step " + std::to_string(end_step_ - 1));
  }
  auto batch = queue_.Pop(timeout);
  if (!batch) {
    return Status::DeadlineExceeded("the prefetch thread produced no batch for step " +
                                    std::to_string(next_step_) + " within " +
                                    std::to_string(timeout.count()) + " ms");
  }
  ++next_step_;
  return std::move(*batch);
}

}  // namespace cohort::train
