// BatchPrefetcher: prepares the next training batches on a background thread.
//
// While the trainer runs step s, the prefetcher gathers steps s+1 .. s+depth from a BatchSource,
// so reading and decoding never stall the compute (tf.data's prefetch). Which samples a step gets
// is the ShardSampler's choice; the prefetcher only asks the source for them, in step order.
#pragma once

#include <chrono>
#include <cstdint>
#include <thread>

#include "base/status.h"
#include "train/data/batch_source.h"
#include "train/data/bounded_queue.h"
#include "train/data/shard_sampler.h"

namespace cohort::train {

class BatchPrefetcher {
 public:
  // Starts producing the batches of global steps [first_step, end_step). `source` must outlive
  // the prefetcher.
  BatchPrefetcher(const BatchSource& source, ShardSampler sampler, int64_t first_step,
                  int64_t end_step, size_t depth);
  // Stops and joins the thread, even if batches were left unconsumed.
  ~BatchPrefetcher();

  BatchPrefetcher(const BatchPrefetcher&) = delete;
  BatchPrefetcher& operator=(const BatchPrefetcher&) = delete;

  // The next batch, in step order, with Batch::step set. DeadlineExceeded if none arrives within
  // `timeout`; FailedPrecondition when every batch up to end_step has been handed out; the
  // source's error, naming the step, when it could not gather one (no batch follows it).
  StatusOr<Batch> Next(std::chrono::milliseconds timeout);

 private:
  void Produce();

  const BatchSource& source_;
  ShardSampler sampler_;
  const int64_t first_step_;
  const int64_t end_step_;
  int64_t next_step_;
  BoundedQueue<StatusOr<Batch>> queue_;
  std::thread thread_;
};

}  // namespace cohort::train
