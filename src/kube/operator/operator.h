// Operator: `cohort operator`, a long-running controller that runs TFJobs on Kubernetes with the
// same pure reconciler as the local executor (job::Reconcile), built the way Kubeflow's
// JobController is:
//
//   informers (list + watch of TFJobs, and of the pods and services with the operator's label)
//     -> a work queue of job keys (de-duplicated; requeued at the reconciler's requeue time, or
//        with back-off after a failed pass)
//     -> workers, each running one JobSync pass (job_sync.h) per key, one worker per key at once
//   and, with leader election, a Lease (leader_election.h): only the leader's workers act; the
//   others keep their caches warm and take over when the Lease expires or is released.
//   With a resync period, every cached job is queued again each period (Resync()), as client-go's
//   informer resync does for Kubeflow's operator: a safety net that syncs each job from the warm
//   caches, without listing, even when nothing about it changed. It logs
//   "resync: N jobs queued" and, once each of them has been synced, "resync: N jobs synced in T
//   ms".
//
//   Operator op(api, builders, options);
//   op.Start();                 // threads: informers, elector, workers
//   ...                         // until SIGTERM
//   op.Stop();                  // joins them and releases the Lease
//
// Everything it knows of a job is on the server (status, restart counts, pods), so a new operator
// carries on where the last stopped. Everything goes through kube::Api.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "base/time.h"
#include "kube/client/api.h"
#include "kube/objects/objects.h"
#include "kube/operator/event_recorder.h"
#include "kube/operator/informer.h"
#include "kube/operator/job_sync.h"
#include "kube/operator/leader_election.h"
#include "kube/operator/work_queue.h"

namespace cohort::kube {

struct OperatorOptions {
  std::string namespace_name;             // "" watches every namespace
  int workers = 1;                        // jobs synced at once (1 to 64)
  ObjectOptions objects;                  // cluster domain, gang scheduler
  std::string component = kOperatorName;  // the Events' source component
  std::string identity;                   // reportingInstance, and the Lease holder
  InformerOptions informer;
  // How often an idle worker looks at the clock again (bounds requeue lateness under a fake clock).
  std::chrono::milliseconds queue_poll{1000};
  std::optional<LeaderElectionOptions> leader_election;  // nullopt: always act
  // Every cached job is queued again this often (Resync()); zero: never.
  std::chrono::milliseconds resync_period{0};
  std::function<void(const std::string&)> log;
};

class Operator {
 public:
  Operator(Api& api, ObjectBuilders builders, OperatorOptions options,
           std::function<Time()> clock = Clock::now);
  ~Operator();

  void Start();
  // Stops every thread (a sync in progress finishes first; each watch ends within
  // informer.watch_timeout) and releases the Lease. Idempotent.
  void Stop();

  // Whether this operator acts now: it leads, or runs without leader election.
  bool Acting() const;
  // Queues every job in the cache once, what the resync period does; logged as above.
  void Resync();
  int Syncs() const { return syncs_.load(); }
  const Informer& jobs() const { return *jobs_; }

 private:
  void Enqueue(const nlohmann::json& object, bool is_job);
  void Work();
  bool CachesSynced() const;
  void ResyncEveryPeriod();
  void NoteSynced(const std::string& key);
  void Log(const std::string& line) const;

  Api& api_;
  const OperatorOptions options_;
  const std::function<Time()> clock_;
  WorkQueue queue_;
  EventRecorder recorder_;
  std::unique_ptr<Informer> jobs_;
  std::unique_ptr<Informer> pods_;
  std::unique_ptr<Informer> services_;
  std::unique_ptr<LeaderElector> elector_;
  std::unique_ptr<JobSync> sync_;
  std::vector<std::thread> threads_;
  std::atomic<bool> stopping_{false};
  std::atomic<int> syncs_{0};
  bool started_ = false;
  std::mutex stop_mutex_;

  std::mutex resync_mutex_;
  std::condition_variable resync_stop_;
  std::set<std::string> resync_unsynced_;  // keys of the last Resync() not synced since
  size_t resync_size_ = 0;
  std::chrono::steady_clock::time_point resync_start_;
};

}  // namespace cohort::kube
