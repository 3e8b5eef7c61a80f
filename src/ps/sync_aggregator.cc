#include "ps/sync_aggregator.h"

#include <algorithm>

#include "net/deadline.h"

namespace cohort::ps {

StatusOr<std::shared_ptr<SyncAggregator::Round>> SyncAggregator::JoinRound(
    const std::string& key, const cluster::TaskId& worker, int64_t step, PushOutcome* outcome) {
  if (stopped_) return Status::Unavailable("the parameter server is shutting down");
  if (step < 0) {
    return Status::InvalidArgument("sync step " + std::to_string(step) + " is negative");
  }
  std::shared_ptr<Round>& round = rounds_[key];
  if (!round) {
    round = std::make_shared<Round>();
    round->step = step;
  }
  if (step < round->step) {
    outcome->dropped = true;
    outcome->step = round->step;
    return std::shared_ptr<Round>();
  }
  if (step > round->step) {
    // This server lost count (it restarted): follow the workers. Whoever waits on the old round
    // learns that it was abandoned.
    round->done = true;
    round->applied = false;
    changed_.notify_all();
    round = std::make_shared<Round>();
    round->step = step;
  }
  if (std::find(round->contributors.begin(), round->contributors.end(), worker) !=
      round->contributors.end()) {
    return Status::FailedPrecondition(worker.ToString() + " pushed twice for sync step " +
                                      std::to_string(step) + " of " + key);
  }
  if (round->contributors.empty()) round->first_arrival = std::chrono::steady_clock::now();
  round->contributors.push_back(worker);
  return round;
}

std::string SyncAggregator::Missing(const Round& round) const {
  std::string missing;
  for (const cluster::TaskId& worker : options_.workers) {
    if (std::find(round.contributors.begin(), round.contributors.end(), worker) ==
        round.contributors.end()) {
      missing += (missing.empty() ? "" : ", ") + worker.ToString();
    }
  }
  return missing;
}

StatusOr<PushOutcome> SyncAggregator::AwaitRound(
    std::unique_lock<std::mutex>& lock, const std::string& key, const std::shared_ptr<Round>& round,
    const std::function<Status(Round&)>& apply_average) {
  const size_t expected = std::max<size_t>(1, options_.workers.size());
  const auto give_up = round->first_arrival + options_.timeout;
  while (!round->done) {
    if (stopped_) return Status::Unavailable("the parameter server is shutting down");
    const bool full = round->contributors.size() >= expected;
    const bool late = std::chrono::steady_clock::now() >= give_up;
    if (!round->closing && (full || late)) {
      round->closing = true;
      if (!full && options_.log) {
        options_.log("sync step " + std::to_string(round->step) + " of " + key + " applied with " +
                     std::to_string(round->contributors.size()) + " of " +
                     std::to_string(expected) + " workers after " +
                     net::FormatSeconds(options_.timeout) + "; missing: " + Missing(*round));
      }
      // Close the round to newcomers (they are now late), then apply outside the lock.
      auto next = std::make_shared<Round>();
      next->step = round->step + 1;
      rounds_[key] = next;
      lock.unlock();
      Status applied = apply_average(*round);
      lock.lock();
      round->done = true;
      round->applied = applied.ok();
      round->status = applied;
      changed_.notify_all();
      break;
    }
    if (round->closing) {
      changed_.wait(lock);  // another contributor is applying this step
    } else {
      changed_.wait_until(lock, give_up);
    }
  }
  if (!round->status.ok()) return round->status;
  PushOutcome outcome;
  outcome.dropped = !round->applied;
  outcome.step = round->step + 1;
  if (outcome.dropped) outcome.step = rounds_[key]->step;
  return outcome;
}

StatusOr<PushOutcome> SyncAggregator::ContributeDense(
    const std::string& key, const cluster::TaskId& worker, int64_t step, const float* gradient,
    size_t count, const std::function<Status(const float*)>& apply) {
  std::unique_lock<std::mutex> lock(mutex_);
  PushOutcome stale;
  auto round = JoinRound(key, worker, step, &stale);
  if (!round.ok()) return round.status();
  if (!*round) return stale;
  std::vector<float>& sum = (*round)->dense_sum;
  if (sum.empty()) {
    sum.assign(gradient, gradient + count);
  } else if (sum.size() != count) {
    return Status::InvalidArgument(worker.ToString() + " pushed " + std::to_string(count) +
                                   " values for sync step " + std::to_string(step) + " of " + key +
                                   ", others pushed " + std::to_string(sum.size()));
  } else {
    for (size_t i = 0; i < count; ++i) sum[i] += gradient[i];
  }
  return AwaitRound(lock, key, *round, [&](Round& full) {
    const float scale = 1.0f / static_cast<float>(full.contributors.size());
    for (float& value : full.dense_sum) value *= scale;
    return apply(full.dense_sum.data());
  });
}

StatusOr<PushOutcome> SyncAggregator::ContributeRows(
    const std::string& key, const cluster::TaskId& worker, int64_t step, const int64_t* ids,
    size_t count, size_t row_width, const float* gradient,
    const std::function<Status(const int64_t*, size_t, const float*)>& apply) {
  std::unique_lock<std::mutex> lock(mutex_);
  PushOutcome stale;
  auto round = JoinRound(key, worker, step, &stale);
  if (!round.ok()) return round.status();
  if (!*round) return stale;
  Round& target = **round;
  for (size_t i = 0; i < count; ++i) {
    auto [it, inserted] = target.row_index.emplace(ids[i], target.row_ids.size());
    if (inserted) {
      target.row_ids.push_back(ids[i]);
      target.row_sum.insert(target.row_sum.end(), gradient + i * row_width,
                            gradient + (i + 1) * row_width);
    } else {
      float* total = target.row_sum.data() + it->second * row_width;
      for (size_t column = 0; column < row_width; ++column) {
        total[column] += gradient[i * row_width + column];
      }
    }
  }
  return AwaitRound(lock, key, *round, [&](Round& full) {
    const float scale = 1.0f / static_cast<float>(full.contributors.size());
    for (float& value : full.row_sum) value *= scale;
    return apply(full.row_ids.data(), full.row_ids.size(), full.row_sum.data());
  });
}

void SyncAggregator::Stop() {
  std::lock_guard<std::mutex> lock(mutex_);
  stopped_ = true;
  changed_.notify_all();
}

}  // namespace cohort::ps
