#include "train/data/batch_prefetcher.h"

namespace cohort::train {
namespace {

// How long the producer waits for room before it rechecks whether it should stop.
constexpr std::chrono::milliseconds kProducerPoll{200};

}  // namespace

HostBatch GatherBatch(const ImageDataset& dataset, const std::vector<int64_t>& indices,
                      int64_t step) {
  HostBatch batch;
  batch.step = step;
  const int64_t pixels = dataset.image_bytes();
  batch.images.resize(indices.size() * static_cast<size_t>(pixels));
  batch.labels.resize(indices.size());
  float* out = batch.images.data();
  for (size_t i = 0; i < indices.size(); ++i) {
    const uint8_t* in = dataset.pixels.data() + indices[i] * pixels;
    for (int64_t p = 0; p < pixels; ++p) *out++ = static_cast<float>(in[p]) * (1.0f / 255.0f);
    batch.labels[i] = dataset.labels[indices[i]];
  }
  return batch;
}

BatchPrefetcher::BatchPrefetcher(const ImageDataset& dataset, ShardSampler sampler,
                                 int64_t first_step, int64_t end_step, size_t depth)
    : dataset_(dataset),
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
    HostBatch batch = GatherBatch(dataset_, sampler_.BatchIndices(step), step);
    while (true) {
      auto result = queue_.Push(std::move(batch), kProducerPoll);
      if (result == BoundedQueue<HostBatch>::PushResult::kPushed) break;
      if (result == BoundedQueue<HostBatch>::PushResult::kClosed) return;
      // Timed out: the consumer is busy with a long step; the batch was not moved from.
    }
  }
  queue_.Close();
}

StatusOr<HostBatch> BatchPrefetcher::Next(std::chrono::milliseconds timeout) {
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
