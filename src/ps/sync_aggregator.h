// SyncAggregator: synchronous training on a parameter server. Each step, every worker pushes one
// gradient; the server averages them and applies the average once.
//
// A push carries the step it was computed for. Contributions to one key (a dense row range, or an
// embedding table) are summed until every expected worker has contributed, then the average is
// applied and every contributor's push returns; that return is the step barrier, so a worker's
// next pull sees the update.
//
// Stragglers are bounded by `timeout`, counted from the first contribution to the step. When it
// passes, the step is applied with the gradients that did arrive (averaged over them, as
// TensorFlow's SyncReplicasOptimizer does with replicas_to_aggregate below the number of
// workers), and the log names the workers that were missing. Training goes on without them,
// which is what a user wants when a worker dies mid-job: the others slow down by at most
// `timeout` per step instead of failing or hanging. A gradient that arrives for a step already
// applied is dropped (it is stale); its push returns "dropped" with the step now being collected,
// and the worker adopts that step. A restarted worker, which does not know the step, therefore
// loses its first gradient and then runs in step with the others.
//
// A push for a step ahead of the one being collected (the server restarted and lost its count)
// moves the key forward to that step; contributions to the abandoned step are dropped.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "base/status.h"
#include "cluster/cluster_spec.h"
#include "ps/protocol.h"

namespace cohort::ps {

struct SyncOptions {
  // The workers expected each step.
  std::vector<cluster::TaskId> workers;
  // How long a step waits for its last gradient after its first arrived.
  std::chrono::milliseconds timeout{30000};
  std::function<void(const std::string&)> log;
};

class SyncAggregator {
 public:
  explicit SyncAggregator(SyncOptions options) : options_(std::move(options)) {}

  // A dense gradient of `count` floats from `worker` for `step` of `key`. Blocks until the step is
  // applied with `apply(average)` (run exactly once per step, by one of the contributors) or the
  // aggregator stops. Returns what happened to this gradient.
  StatusOr<PushOutcome> ContributeDense(const std::string& key, const cluster::TaskId& worker,
                                        int64_t step, const float* gradient, size_t count,
                                        const std::function<Status(const float*)>& apply);

  // The same for embedding rows: gradients for the same id are summed across workers, then
  // divided by the number of contributors. `apply(ids, count, gradient)`.
  StatusOr<PushOutcome> ContributeRows(
      const std::string& key, const cluster::TaskId& worker, int64_t step, const int64_t* ids,
      size_t count, size_t row_width, const float* gradient,
      const std::function<Status(const int64_t*, size_t, const float*)>& apply);

  // Ends every wait with Unavailable; later contributions fail at once.
  void Stop();

 private:
  struct Round {
    int64_t step = 0;
    std::vector<cluster::TaskId> contributors;
    std::chrono::steady_clock::time_point first_arrival;
    std::vector<float> dense_sum;
    std::map<int64_t, size_t> row_index;  // id -> row of row_sum
    std::vector<int64_t> row_ids;
    std::vector<float> row_sum;
    bool closing = false;  // a contributor is applying it
    bool done = false;
    bool applied = false;  // false when abandoned
    Status status;
  };

  // Finds the round collecting `step` of `key`, or decides the gradient is stale (`outcome`
  // filled, null returned), or fails for a worker that already contributed. Requires mutex_.
  StatusOr<std::shared_ptr<Round>> JoinRound(const std::string& key, const cluster::TaskId& worker,
                                             int64_t step, PushOutcome* outcome);
  // Waits for `round` to complete, completing it here when it is full or timed out.
  StatusOr<PushOutcome> AwaitRound(std::unique_lock<std::mutex>& lock, const std::string& key,
                                   const std::shared_ptr<Round>& round,
                                   const std::function<Status(Round&)>& apply_average);
  std::string Missing(const Round& round) const;

  const SyncOptions options_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::map<std::string, std::shared_ptr<Round>> rounds_;
  bool stopped_ = false;
};

}  // namespace cohort::ps
