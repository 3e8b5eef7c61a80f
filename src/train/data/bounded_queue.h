// BoundedQueue: a fixed-capacity FIFO between one producer thread and its consumers.
//
// Every wait takes a timeout, so neither side can hang forever on a partner that died or stopped;
// Close() wakes both sides at once and makes further pushes fail.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <mutex>
#include <optional>

namespace cohort::train {

template <typename T>
class BoundedQueue {
 public:
  enum class PushResult { kPushed, kTimedOut, kClosed };

  explicit BoundedQueue(size_t capacity) : capacity_(capacity == 0 ? 1 : capacity) {}

  // Appends `item`, waiting up to `timeout` for room. `item` is moved from only when it was
  // pushed, so a caller can retry with the same item after a timeout.
  PushResult Push(T&& item, std::chrono::milliseconds timeout) {
    std::unique_lock lock(mutex_);
    if (!not_full_.wait_for(lock, timeout, [&] { return closed_ || items_.size() < capacity_; })) {
      return PushResult::kTimedOut;
    }
    if (closed_) return PushResult::kClosed;
    items_.push_back(std::move(item));
    not_empty_.notify_one();
    return PushResult::kPushed;
  }

  // Removes the oldest item, waiting up to `timeout` for one. nullopt on a timeout, or when the
  // queue is closed and drained.
  std::optional<T> Pop(std::chrono::milliseconds timeout) {
    std::unique_lock lock(mutex_);
    if (!not_empty_.wait_for(lock, timeout, [&] { return closed_ || !items_.empty(); })) {
      return std::nullopt;
    }
    if (items_.empty()) return std::nullopt;
    T item = std::move(items_.front());
    items_.pop_front();
    not_full_.notify_one();
    return item;
  }

  // Refuses further pushes and wakes every waiter. Items already queued can still be popped.
  void Close() {
    std::lock_guard lock(mutex_);
    closed_ = true;
    not_full_.notify_all();
    not_empty_.notify_all();
  }

  bool closed() const {
    std::lock_guard lock(mutex_);
    return closed_;
  }

 private:
  const size_t capacity_;
  mutable std::mutex mutex_;
  std::condition_variable not_full_;
  std::condition_variable not_empty_;
  std::deque<T> items_;
  bool closed_ = false;
};

}  // namespace cohort::train
