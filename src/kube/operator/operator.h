// Operator: `cohort operator`, a long-running controller that runs jobs of every enabled kind
// (TFJob, PyTorchJob: OperatorOptions::kinds) on Kubernetes with the same pure reconciler as the
// local executor (job::Reconcile), built the way Kubeflow's training operator is:
//
//   informers (list + watch: one of each kind's jobs, and one each of the pods and services
//              labelled with an enabled kind's controller as operator-name)
//     -> a work queue of job keys that carry the kind ("PyTorchJob/ns/name", JobQueueKey), so a
//        TFJob and a PyTorchJob of one name never share a key; a pod or service is queued as the
//        job its controller ownerReference names, by that reference's kind (de-duplicated;
//        requeued at the reconciler's requeue time, or with back-off after a failed pass)
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
// A kind whose CustomResourceDefinition the server does not have (its list answers 404) is
// reported once in the log, naming the CRD and how to install it or leave the kind out, and its
// informer keeps listing quietly, so the kind runs once the CRD is installed; the other kinds run
// meanwhile.
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
#include "job/job_kind.h"
#include "kube/client/api.h"
#include "kube/objects/objects.h"
#include "kube/operator/event_recorder.h"
#include "kube/operator/informer.h"
#include "kube/operator/job_sync.h"
#include "kube/operator/leader_election.h"
#include "kube/operator/work_queue.h"

namespace cohort::kube {

struct OperatorOptions {
  std::string namespace_name;  // "" watches every namespace
  int workers = 1;             // jobs synced at once (1 to 64)
  ObjectOptions objects;       // cluster domain, gang scheduler
  // The kinds run (`--enable-scheme`), each with an informer of its own; the Events of a kind's
  // jobs have the kind's controller_name as their source component.
  std::vector<const job::JobKind*> kinds = job::KindRegistry::Default().kinds();
  std::string identity;  // reportingInstance, and the Lease holder
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
  // The informer of `kind`'s jobs; nullptr when the operator does not run that kind.
  const Informer* jobs(const job::JobKind& kind) const;

 private:
  // One enabled kind: its jobs' informer and its Events' recorder.
  struct KindState {
    const job::JobKind* kind = nullptr;
    std::unique_ptr<Informer> jobs;
    std::unique_ptr<EventRecorder> recorder;
    std::atomic<bool> missing_reported{false};  // its CRD's absence is logged once
  };

  // Whether `status`, a failed list of `state`'s jobs, says that the kind's CRD is missing; if
  // so, logs it (once) and returns true.
  bool ReportMissingKind(KindState& state, const Status& status);
  // The queue keys of every cached job of every kind.
  std::vector<std::string> AllJobKeys() const;
  // Every informer: each kind's jobs', then the pods' and the services'.
  std::vector<Informer*> Informers() const;
  void EnqueueJob(const job::JobKind& kind, const nlohmann::json& object);
  void EnqueueOwner(const nlohmann::json& object);
  void Work();
  bool CachesSynced() const;
  void ResyncEveryPeriod();
  void NoteSynced(const std::string& key);
  void Log(const std::string& line) const;

  Api& api_;
  const OperatorOptions options_;
  const std::function<Time()> clock_;
  WorkQueue queue_;
  std::vector<std::unique_ptr<KindState>> kinds_;
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
