#include "kube/operator/work_queue.h"

#include <algorithm>

namespace cohort::kube {

WorkQueue::WorkQueue(std::function<Time()> clock, std::chrono::milliseconds poll)
    : clock_(std::move(clock)), poll_(poll) {}

void WorkQueue::Add(const std::string& key) { AddAt(key, clock_()); }

void WorkQueue::AddAt(const std::string& key, Time when) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (shut_down_) return;
    auto [it, inserted] = queued_.emplace(key, when);
    if (!inserted) it->second = std::min(it->second, when);
  }
  changed_.notify_all();
}

void WorkQueue::AddRateLimited(const std::string& key) {
  int failures = 0;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    failures = failures_[key]++;
  }
  constexpr int kMaximumSeconds = 300;
  int seconds = 1;
  for (int doubling = 0; doubling < failures && seconds < kMaximumSeconds; ++doubling) {
    seconds *= 2;
  }
  AddAt(key, clock_() + std::chrono::seconds(std::min(seconds, kMaximumSeconds)));
}

void WorkQueue::Forget(const std::string& key) {
  std::lock_guard<std::mutex> lock(mutex_);
  failures_.erase(key);
}

std::optional<std::string> WorkQueue::Get(std::chrono::milliseconds timeout) {
  const auto give_up = std::chrono::steady_clock::now() + timeout;
  std::unique_lock<std::mutex> lock(mutex_);
  while (!shut_down_) {
    const Time now = clock_();
    std::optional<Time> next_due;
    for (auto it = queued_.begin(); it != queued_.end(); ++it) {
      if (processing_.count(it->first)) continue;
      if (it->second <= now) {
        std::string key = it->first;
        queued_.erase(it);
        processing_.insert(key);
        return key;
      }
      next_due = next_due ? std::min(*next_due, it->second) : it->second;
    }
    const auto steady_now = std::chrono::steady_clock::now();
    if (steady_now >= give_up) return std::nullopt;
    auto wait = std::min<std::chrono::steady_clock::duration>(poll_, give_up - steady_now);
    if (next_due) {
      wait = std::min<std::chrono::steady_clock::duration>(
          wait, std::max<Clock::duration>(*next_due - now, std::chrono::milliseconds(1)));
    }
    changed_.wait_for(lock, wait);
  }
  return std::nullopt;
}

void WorkQueue::Done(const std::string& key) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    processing_.erase(key);
  }
  changed_.notify_all();
}

void WorkQueue::ShutDown() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    shut_down_ = true;
  }
  changed_.notify_all();
}

size_t WorkQueue::Size() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return queued_.size();
}

int WorkQueue::Failures(const std::string& key) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto found = failures_.find(key);
  return found == failures_.end() ? 0 : found->second;
}

}  // namespace cohort::kube
