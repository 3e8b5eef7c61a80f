// DynamicBatcher: many requests' instances through one forward pass, on a bounded pool of
// threads, as TensorFlow Serving's batching does (max_batch_size, batch_timeout_micros).
//
//   DynamicBatcher batcher(model, {.max_batch = 32, .max_wait = 2ms, .threads = 1});
//   StatusOr<std::shared_ptr<PendingPrediction>> pending = batcher.Submit(std::move(request));
//   StatusOr<std::vector<nlohmann::json>> predictions = (*pending)->Wait(30s);
//
// A worker takes the oldest request and adds the requests queued behind it, in order, while
// they have the same instance shape and the batch stays within max_batch instances, waiting
// for more at most max_wait after the oldest one arrived; then it runs the batch and hands each
// request its predictions. A request larger than max_batch runs alone. With max_batch 1 nothing
// waits: every request is its own batch (batch-1 serving).
//
// Bounds: at most max_queued_instances instances wait (Submit is Unavailable beyond, the
// server's 503), at most max_batch go through the model at once per thread, `threads` workers.
// The destructor stops taking requests and returns once every queued one is answered, so a
// model version swapped out finishes what it was given.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>
#include <vector>

#include "base/status.h"
#include "serve/servable.h"

namespace cohort::serve {

struct BatcherOptions {
  int64_t max_batch = 32;
  std::chrono::microseconds max_wait{2000};
  int threads = 1;
  int64_t max_queued_instances = 8192;
};

// One request's decoded instances, all of one shape.
struct PredictionRequest {
  std::vector<int64_t> shape;  // of one instance
  int64_t count = 0;
  std::vector<float> values;  // count * prod(shape)
};

// The answer to one submitted request, filled by a worker.
class PendingPrediction {
 public:
  // The predictions, or the model's error; DeadlineExceeded when `timeout` passes first.
  StatusOr<std::vector<nlohmann::json>> Wait(std::chrono::milliseconds timeout);
  void Fulfil(StatusOr<std::vector<nlohmann::json>> result);

 private:
  std::mutex mutex_;
  std::condition_variable done_;
  bool fulfilled_ = false;
  StatusOr<std::vector<nlohmann::json>> result_ = Status::Internal("not answered");
};

class DynamicBatcher {
 public:
  // Called after each batch with its size (the server's batch-size histogram).
  using BatchObserver = std::function<void(int64_t instances)>;

  DynamicBatcher(std::shared_ptr<Servable> model, BatcherOptions options,
                 BatchObserver observer = nullptr);
  ~DynamicBatcher();
  DynamicBatcher(const DynamicBatcher&) = delete;
  DynamicBatcher& operator=(const DynamicBatcher&) = delete;

  // Queues `request`; Unavailable when the queue holds max_queued_instances already, or the
  // batcher is stopping; InvalidArgument for an empty request.
  StatusOr<std::shared_ptr<PendingPrediction>> Submit(PredictionRequest request);

  const BatcherOptions& options() const { return options_; }

 private:
  struct Queued {
    PredictionRequest request;
    std::shared_ptr<PendingPrediction> pending;
    std::chrono::steady_clock::time_point arrived;
  };
  void Work();
  // Takes the next batch from the queue (lock held); empty once stopping with nothing queued.
  std::vector<Queued> NextBatch(std::unique_lock<std::mutex>& lock);
  void Run(std::vector<Queued>& batch);

  const std::shared_ptr<Servable> model_;
  const BatcherOptions options_;
  const BatchObserver observer_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<Queued> queue_;
  int64_t queued_instances_ = 0;
  bool stopping_ = false;
  std::vector<std::thread> workers_;
};

}  // namespace cohort::serve
