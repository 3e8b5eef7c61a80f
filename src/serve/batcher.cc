#include "serve/batcher.h"

namespace cohort::serve {

StatusOr<std::vector<nlohmann::json>> PendingPrediction::Wait(std::chrono::milliseconds timeout) {
  std::unique_lock lock(mutex_);
  if (!done_.wait_for(lock, timeout, [&] { return fulfilled_; })) {
    return Status::DeadlineExceeded("no prediction within " + std::to_string(timeout.count()) +
                                    " ms (the model's queue is long; retry later)");
  }
  return result_;
}

void PendingPrediction::Fulfil(StatusOr<std::vector<nlohmann::json>> result) {
  {
    std::lock_guard lock(mutex_);
    result_ = std::move(result);
    fulfilled_ = true;
  }
  done_.notify_all();
}

DynamicBatcher::DynamicBatcher(std::shared_ptr<Servable> model, BatcherOptions options,
                               BatchObserver observer)
    : model_(std::move(model)), options_(options), observer_(std::move(observer)) {
  for (int i = 0; i < std::max(1, options_.threads); ++i) workers_.emplace_back([this] { Work(); });
}

DynamicBatcher::~DynamicBatcher() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  changed_.notify_all();
  for (std::thread& worker : workers_) worker.join();
}

StatusOr<std::shared_ptr<PendingPrediction>> DynamicBatcher::Submit(PredictionRequest request) {
  if (request.count <= 0) return Status::InvalidArgument("a request with no instances");
  auto pending = std::make_shared<PendingPrediction>();
  {
    std::lock_guard lock(mutex_);
    if (stopping_) return Status::Unavailable("the model version is being unloaded; retry");
    if (queued_instances_ + request.count > options_.max_queued_instances) {
      return Status::Unavailable("the model's queue is full (" + std::to_string(queued_instances_) +
                                 " instances waiting, at most " +
                                 std::to_string(options_.max_queued_instances) + "); retry later");
    }
    queued_instances_ += request.count;
    queue_.push_back({std::move(request), pending, std::chrono::steady_clock::now()});
  }
  changed_.notify_one();
  return pending;
}

std::vector<DynamicBatcher::Queued> DynamicBatcher::NextBatch(std::unique_lock<std::mutex>& lock) {
  std::vector<Queued> batch;
  changed_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
  if (queue_.empty()) return batch;  // stopping, and nothing left to answer
  batch.push_back(std::move(queue_.front()));
  queue_.pop_front();
  int64_t instances = batch.front().request.count;
  const auto deadline = batch.front().arrived + options_.max_wait;
  while (instances < options_.max_batch) {
    if (!queue_.empty()) {
      Queued& next = queue_.front();
      if (next.request.shape != batch.front().request.shape ||
          instances + next.request.count > options_.max_batch) {
        break;
      }
      instances += next.request.count;
      batch.push_back(std::move(next));
      queue_.pop_front();
      continue;
    }
    if (stopping_) break;
    // Wait for more until the oldest request has waited max_wait.
    if (changed_.wait_until(lock, deadline) == std::cv_status::timeout && queue_.empty()) break;
  }
  queued_instances_ -= instances;
  // Another worker may start on what is left behind.
  if (!queue_.empty()) changed_.notify_one();
  return batch;
}

void DynamicBatcher::Run(std::vector<Queued>& batch) {
  int64_t instances = 0;
  for (const Queued& queued : batch) instances += queued.request.count;
  StatusOr<std::vector<nlohmann::json>> predictions = Status::Internal("not run");
  if (batch.size() == 1) {
    const PredictionRequest& request = batch.front().request;
    predictions = model_->Predict(request.values, request.count, request.shape);
  } else {
    std::vector<float> values;
    size_t total = 0;
    for (const Queued& queued : batch) total += queued.request.values.size();
    values.reserve(total);
    for (const Queued& queued : batch) {
      values.insert(values.end(), queued.request.values.begin(), queued.request.values.end());
    }
    predictions = model_->Predict(values, instances, batch.front().request.shape);
  }
  if (observer_) observer_(instances);
  if (predictions.ok() && static_cast<int64_t>(predictions->size()) != instances) {
    predictions = Status::Internal("the model gave " + std::to_string(predictions->size()) +
                                   " predictions for " + std::to_string(instances) + " instances");
  }
  size_t offset = 0;
  for (Queued& queued : batch) {
    if (!predictions.ok()) {
      queued.pending->Fulfil(predictions.status());
      continue;
    }
    const auto begin = predictions->begin() + static_cast<std::ptrdiff_t>(offset);
    offset += static_cast<size_t>(queued.request.count);
    queued.pending->Fulfil(std::vector<nlohmann::json>(
        std::make_move_iterator(begin),
        std::make_move_iterator(predictions->begin() + static_cast<std::ptrdiff_t>(offset))));
  }
}

void DynamicBatcher::Work() {
  for (;;) {
    std::vector<Queued> batch;
    {
      std::unique_lock lock(mutex_);
      batch = NextBatch(lock);
    }
    if (batch.empty()) return;
    Run(batch);
  }
}

}  // namespace cohort::serve
