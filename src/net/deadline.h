// Deadline: a point in steady time that a wait must not pass.
//
// Every blocking step in src/net (connect, handshake, poll) takes a Deadline rather than a
// duration, so that a sequence of steps shares one budget: the startup timeout covers every retry
// of every connection, not each attempt separately.
#pragma once

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstdio>
#include <string>

namespace cohort::net {

using SteadyClock = std::chrono::steady_clock;

class Deadline {
 public:
  // A deadline `duration` from now. Durations too large to represent mean "never".
  static Deadline After(std::chrono::nanoseconds duration) {
    SteadyClock::time_point now = SteadyClock::now();
    if (duration >= SteadyClock::time_point::max() - now) return Never();
    return Deadline(now + duration);
  }
  static Deadline At(SteadyClock::time_point time) { return Deadline(time); }
  static Deadline Never() { return Deadline(SteadyClock::time_point::max()); }

  bool IsNever() const { return time_ == SteadyClock::time_point::max(); }
  bool Expired() const { return !IsNever() && SteadyClock::now() >= time_; }
  SteadyClock::time_point time() const { return time_; }

  // The earlier of two deadlines.
  Deadline Min(Deadline other) const { return Deadline(std::min(time_, other.time_)); }

  // Milliseconds left, rounded up, as poll() wants them: -1 for never, 0 once expired.
  int PollTimeoutMs() const {
    if (IsNever()) return -1;
    auto left = time_ - SteadyClock::now();
    if (left <= std::chrono::nanoseconds::zero()) return 0;
    auto ms = std::chrono::ceil<std::chrono::milliseconds>(left).count();
    return static_cast<int>(std::min<long long>(ms, INT_MAX));
  }

 private:
  explicit Deadline(SteadyClock::time_point time) : time_(time) {}
  SteadyClock::time_point time_;
};

// Seconds as a short human string for error messages: "30 s", "0.25 s".
inline std::string FormatSeconds(std::chrono::nanoseconds duration) {
  double seconds = std::chrono::duration<double>(duration).count();
  char text[32];
  if (seconds == static_cast<long long>(seconds)) {
    std::snprintf(text, sizeof(text), "%lld s", static_cast<long long>(seconds));
  } else {
    std::snprintf(text, sizeof(text), "%.3g s", seconds);
  }
  return text;
}

}  // namespace cohort::net
