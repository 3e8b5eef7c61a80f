// BatchPrefetcher: prepares the next training batches on a background thread.
//
// While the trainer runs step s, the prefetcher gathers and normalises the images of steps s+1 ..
// s+depth, so decoding never stalls the compute (tf.data's prefetch). Batches are plain host
// arrays; the trainer wraps them as tensors without copying.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <thread>
#include <vector>

#include "base/status.h"
#include "train/data/bounded_queue.h"
#include "train/data/image_dataset.h"
#include "train/data/shard_sampler.h"

namespace cohort::train {

// One worker's batch at one global step: images as float32 in [0, 1], shape
// [batch, 1, rows, cols] in row-major order, and their class labels.
struct HostBatch {
  int64_t step = 0;
  std::vector<float> images;
  std::vector<int64_t> labels;
};

// Gathers the samples of `indices` from `dataset` into a batch.
HostBatch GatherBatch(const ImageDataset& dataset, const std::vector<int64_t>& indices,
                      int64_t step);

class BatchPrefetcher {
 public:
  // Starts producing the batches of global steps [first_step, end_step). `dataset` must outlive
  // the prefetcher.
  BatchPrefetcher(const ImageDataset& dataset, ShardSampler sampler, int64_t first_step,
                  int64_t end_step, size_t depth);
  // Stops and joins the thread, even if batches were left unconsumed.
  ~BatchPrefetcher();

  BatchPrefetcher(const BatchPrefetcher&) = delete;
  BatchPrefetcher& operator=(const BatchPrefetcher&) = delete;

  // The next batch, in step order. DeadlineExceeded if none arrives within `timeout`;
  // FailedPrecondition when every batch up to end_step has been handed out.
  StatusOr<HostBatch> Next(std::chrono::milliseconds timeout);

 private:
  void Produce();

  const ImageDataset& dataset_;
  ShardSampler sampler_;
  const int64_t first_step_;
  const int64_t end_step_;
  int64_t next_step_;
  BoundedQueue<HostBatch> queue_;
  std::thread thread_;
};

}  // namespace cohort::train
