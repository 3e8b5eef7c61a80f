#include "ps/step_clock.h"

namespace cohort::ps {

std::pair<cluster::TaskId, int64_t> StepClock::Slowest() const {
  auto slowest = steps_.begin();
  for (auto it = steps_.begin(); it != steps_.end(); ++it) {
    if (it->second < slowest->second) slowest = it;
  }
  return *slowest;
}

StatusOr<int64_t> StepClock::Advance(const cluster::TaskId& worker, int64_t steps_done,
                                     int64_t max_lead, net::Deadline deadline) {
  if (max_lead < 0) {
    return Status::InvalidArgument("max_lead " + std::to_string(max_lead) + " is negative");
  }
  std::unique_lock<std::mutex> lock(mutex_);
  auto known = steps_.find(worker);
  if (known == steps_.end() && !steps_.empty()) {
    // A newcomer starts level with the slowest live worker (see the header).
    steps_done = std::max(steps_done, Slowest().second);
  }
  steps_[worker] = steps_done;
  changed_.notify_all();
  while (true) {
    if (stopped_) return Status::Unavailable("the parameter server is shutting down");
    auto mine = steps_.find(worker);
    if (mine == steps_.end()) steps_[worker] = steps_done;
    auto [slowest, slowest_steps] = Slowest();
    if (steps_[worker] - slowest_steps <= max_lead) return slowest_steps;
    if (deadline.Expired()) {
      return Status::DeadlineExceeded(
          worker.ToString() + " has done " + std::to_string(steps_[worker]) + " steps, more than " +
          std::to_string(max_lead) + " ahead of " + slowest.ToString() + " (" +
          std::to_string(slowest_steps) + " steps), and waited for it until the deadline");
    }
    ++waiting_;
    if (deadline.IsNever()) {
      changed_.wait(lock);
    } else {
      changed_.wait_until(lock, deadline.time());
    }
    --waiting_;
  }
}

void StepClock::Forget(const cluster::TaskId& worker) {
  std::lock_guard<std::mutex> lock(mutex_);
  steps_.erase(worker);
  changed_.notify_all();
}

int StepClock::waiting() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return waiting_;
}

void StepClock::Stop() {
  std::lock_guard<std::mutex> lock(mutex_);
  stopped_ = true;
  changed_.notify_all();
}

}  // namespace cohort::ps
