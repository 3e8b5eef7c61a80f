// RateLimiter: "has enough time passed?", the bound on how often progress is printed or logged.
//
//   RateLimiter every_10s(std::chrono::seconds(10));   // or with a fake clock in tests
//   if (every_10s.Ready()) PrintProgress();
//
// The interval is measured from Restart() (the construction, or the start of an epoch), so the
// first Ready() comes one interval after it, then at most one per interval. A zero interval is
// never ready.
#pragma once

#include <chrono>
#include <functional>
#include <utility>

namespace cohort::train {

class RateLimiter {
 public:
  using Clock = std::chrono::steady_clock;
  using Now = std::function<Clock::time_point()>;

  explicit RateLimiter(Clock::duration interval, Now now = Clock::now)
      : interval_(interval), now_(std::move(now)), last_(now_()) {}

  // True when at least one interval has passed since the last true (or Restart); it then starts
  // the next interval.
  bool Ready() {
    if (interval_ <= Clock::duration::zero()) return false;
    const Clock::time_point now = now_();
    if (now - last_ < interval_) return false;
    last_ = now;
    return true;
  }

  void Restart() { last_ = now_(); }
  Clock::duration interval() const { return interval_; }

 private:
  Clock::duration interval_;
  Now now_;
  Clock::time_point last_;
};

}  // namespace cohort::train
