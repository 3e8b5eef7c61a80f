#include "view/job_watch.h"

#include <thread>

#include "job/reconciler.h"
#include "job/status_json.h"

namespace cohort::view {

JobWatch::JobWatch(const exec::JobStateStore& store, std::vector<exec::JobKey> keys)
    : store_(store), keys_(std::move(keys)) {}

std::string JobWatch::Fingerprint(const exec::JobKey& key) const {
  if (!store_.Exists(key)) return "deleted";
  StatusOr<job::JobStatus> status = store_.ReadStatus(key);
  std::string fingerprint = status.ok() ? job::JobStatusToJson(*status).dump() : "unknown";
  for (const exec::ReplicaRow& row : store_.ReadReplicas(key)) {
    fingerprint += "\n" + row.name + " " + row.phase + " " + std::to_string(row.restarts) + " " +
                   std::to_string(row.pid);
  }
  return fingerprint;
}

std::vector<exec::JobKey> JobWatch::Changed() {
  std::vector<exec::JobKey> changed;
  for (const exec::JobKey& key : keys_) {
    std::string fingerprint = Fingerprint(key);
    std::string& last = fingerprints_[key.ToString()];
    if (fingerprint == last) continue;
    last = fingerprint;
    changed.push_back(key);
  }
  return changed;
}

bool JobWatch::AllDone() const {
  for (const exec::JobKey& key : keys_) {
    if (!store_.Exists(key)) continue;
    StatusOr<job::JobStatus> status = store_.ReadStatus(key);
    if (!status.ok() || !job::IsFinished(*status)) return false;
  }
  return true;
}

bool WatchJobs(JobWatch& watch, std::chrono::milliseconds timeout,
               const std::function<void()>& refresh,
               const std::function<void(const exec::JobKey&)>& on_changed,
               std::chrono::milliseconds poll) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (true) {
    if (refresh) refresh();
    bool done = watch.AllDone();
    for (const exec::JobKey& key : watch.Changed()) on_changed(key);
    if (done) return true;
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(poll);
  }
}

}  // namespace cohort::view
