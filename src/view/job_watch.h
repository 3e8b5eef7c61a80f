// `cohort get -w`: watching jobs (or their pods) and printing a row each time one changes, as
// `kubectl get -w` does, until every watched job has finished or is gone, or a timeout.
//
//   JobWatch watch(store, keys);
//   WatchJobs(watch, std::chrono::minutes(60), [&] { jobs.Tidy(keys); },
//             [&](const JobKey& key) { print the job's row });
//
// A job changes when its status or its replica table does; time passing (AGE) is no change.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "exec/job_state_store.h"

namespace cohort::view {

class JobWatch {
 public:
  JobWatch(const exec::JobStateStore& store, std::vector<exec::JobKey> keys);

  // The jobs whose status or replica table changed since the last call (every job, the first
  // time), in the order given.
  std::vector<exec::JobKey> Changed();

  // True when every watched job has finished or has been deleted.
  bool AllDone() const;

 private:
  std::string Fingerprint(const exec::JobKey& key) const;

  const exec::JobStateStore& store_;
  std::vector<exec::JobKey> keys_;
  std::map<std::string, std::string> fingerprints_;  // by JobKey::ToString()
};

// Polls `watch` every `poll` and calls `on_changed` for each changed job, until AllDone (after
// one last poll) or `timeout`; `refresh` runs before each poll (to mark jobs whose supervisor
// died, which would otherwise never finish). Returns false on timeout.
bool WatchJobs(JobWatch& watch, std::chrono::milliseconds timeout,
               const std::function<void()>& refresh,
               const std::function<void(const exec::JobKey&)>& on_changed,
               std::chrono::milliseconds poll = std::chrono::milliseconds(500));

}  // namespace cohort::view
