// StepClock: bounded staleness for asynchronous training. A worker may run at most `max_lead`
// steps ahead of the slowest live worker.
//
// Each worker reports how many steps it has done before starting the next; the report waits
// while the worker is too far ahead. Only live workers count: a worker whose connection closes is
// forgotten (Forget), so a dead worker never holds the others back, and a worker that joins late
// or rejoins after a restart starts level with the slowest live worker rather than at zero, so it
// does not stall everybody while it catches up. One parameter server (ps:0) keeps the clock for
// the job.
#pragma once

#include <condition_variable>
#include <map>
#include <mutex>
#include <string>

#include "base/status.h"
#include "cluster/cluster_spec.h"
#include "net/deadline.h"

namespace cohort::ps {

class StepClock {
 public:
  // Records that `worker` has done `steps_done` steps and waits until
  // its steps - slowest live worker's steps <= max_lead. Returns the slowest worker's steps.
  // DeadlineExceeded, naming the slowest worker, when `deadline` passes first.
  StatusOr<int64_t> Advance(const cluster::TaskId& worker, int64_t steps_done, int64_t max_lead,
                            net::Deadline deadline);

  // The worker left (its connection closed): it no longer holds anybody back.
  void Forget(const cluster::TaskId& worker);

  // Ends every wait with Unavailable.
  void Stop();

  // How many Advance calls are held now, waiting for slower workers. A test uses it to know that
  // a worker is held before it lets the slowest one advance.
  int waiting() const;

 private:
  // The live worker with the fewest steps. Requires mutex_ and a non-empty clock.
  std::pair<cluster::TaskId, int64_t> Slowest() const;

  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::map<cluster::TaskId, int64_t> steps_;
  int waiting_ = 0;
  bool stopped_ = false;
};

}  // namespace cohort::ps
