// JobSync: one reconcile pass of one job, of any kind (TFJob, PyTorchJob...), on Kubernetes, the
// operator's counterpart of the local executor's JobController turn (exec/job_controller.h). It
// decides nothing itself: job::Reconcile does, on what the caches say; JobSync reads the job and
// its pods, carries out the actions and writes the status and events back.
//
//   decode the job (spec_parser DecodeJob, its kind from its apiVersion and kind, ApplyDefaults,
//   ValidateJob; an invalid job gets a
//     Failed condition and a Warning event with the parser's message, once)
//   -> skip it when runPolicy.managedBy names another controller, or it is being deleted
//   -> observe: each pod the job controls (ownerReference uid == the job's uid; nothing else is
//      adopted) as a job::ObservedReplica (replica_objects.h), each replica waiting for its
//      restart back-off as Pending with its new restart count, each terminated replica as Failed
//   -> job::Reconcile(job, status read from the job object, observed, now)
//   -> actions: kStart creates the replica's service and pod (and first, once per pass, the
//      job's Secret when it does not exist yet, with a fresh job secret, and the PodGroup with
//      gang scheduling; a Secret of that name that the job does not control is not used: its
//      pods wait, with a Warning event, FailedCreateSecret); kRestart hands the restart to the
//      replica's job::RestartStateMachine (job/restart_state_machine.h, the one the local
//      controller uses), records the machine's record on the replica's service, deletes the exited
//      pod, and creates the new one once the machine's back-off has passed (the job is requeued for
//      it); kTerminate records the termination on the replica's service and deletes its pod (the
//      pod's grace period applies), the replica then observed as Failed from that record until
//      kRestart replaces it; kStop deletes the pod (its own terminationGracePeriodSeconds
//      applies) and its service;
//      kDeleteJob deletes the job with foreground propagation
//   -> the status through /status (UpdateWithRetry: a 409 reads again), only when it changed
//   -> the reconciler's and the actions' events as core/v1 Events (event_recorder.h), through
//      the kind's recorder (source: the kind's controller, "pytorchjob-controller").
// What differs by kind comes from the job's job::JobKind: the owner references' apiVersion and
// kind, the resource its status is written to, the container observed, the condition reasons.
//
// The bookkeeping the local controller keeps in memory lives on the server here, so that a new
// operator (after a crash, or a new leader) carries on where the last one stopped: the status in
// the job's status, each replica's job::RestartRecord as annotations, its counts on the pods and
// the whole record on the service of a replica that waits for its restart (replica_objects.h),
// from which each pass resumes the replica's state machine. Before every write it asks `may_act`
// (the leader election), and stops the pass at once when it says no.
#pragma once

#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "base/time.h"
#include "job/common_types.h"
#include "kube/client/api.h"
#include "kube/objects/objects.h"
#include "kube/operator/event_recorder.h"
#include "kube/operator/informer.h"
#include "kube/operator/replica_objects.h"

namespace cohort::kube {

// The builders of kube/objects (objects.h), as functions, so that tests can pass their own.
struct ObjectBuilders {
  std::function<StatusOr<nlohmann::json>(const job::Job&, const Owner&, const std::string&, int,
                                         const ObjectOptions&)>
      pod;
  std::function<StatusOr<nlohmann::json>(const job::Job&, const Owner&, const std::string&, int,
                                         const ObjectOptions&)>
      service;
  std::function<StatusOr<std::optional<nlohmann::json>>(const job::Job&, const Owner&,
                                                        const ObjectOptions&)>
      pod_group;
  // The job's Secret with a fresh job secret, made once per job before its first pod. Unset
  // (tests whose pods read no Secret): the operator makes none.
  std::function<StatusOr<nlohmann::json>(const job::Job&, const Owner&)> job_secret;
};

// kube/objects' BuildPod, BuildService, BuildPodGroup, and BuildJobSecret with a new secret from
// job::NewJobSecret.
ObjectBuilders KubeObjectBuilders();

// One job kind the operator runs: the kind, the cache of its jobs (an informer of the kind's
// resource), and the recorder of its jobs' Events (source component: the kind's controller_name).
struct OperatedKind {
  const job::JobKind* kind = nullptr;
  Informer* jobs = nullptr;
  EventRecorder* recorder = nullptr;
};

// The caches a pass reads and writes through; the operator's informers. The pods and services
// caches hold the objects of every operated kind.
struct JobCaches {
  std::vector<OperatedKind> kinds;
  Informer* pods = nullptr;
  Informer* services = nullptr;
};

struct SyncResult {
  std::optional<Time> requeue_at;  // run the job again then, even if nothing changes
  bool skipped = false;            // managed by another controller, or being deleted
  bool deleted = false;            // the TTL deleted the job
};

class JobSync {
 public:
  JobSync(Api& api, JobCaches caches, ObjectBuilders builders, ObjectOptions options,
          std::function<Time()> clock, std::function<bool()> may_act,
          std::function<void(const std::string&)> log);

  // One pass over the job of queue key `key` (JobQueueKey, replica_objects.h:
  // "PyTorchJob/namespace/name"); nothing when its kind's cache no longer holds it. An error
  // means the pass could not finish (a write failed, leadership was lost; or the key names a kind
  // not operated): the caller requeues with back-off.
  StatusOr<SyncResult> Sync(const std::string& key);

 private:
  class Pass;

  Api& api_;
  JobCaches caches_;
  ObjectBuilders builders_;
  ObjectOptions options_;
  std::function<Time()> clock_;
  std::function<bool()> may_act_;
  std::function<void(const std::string&)> log_;
};

}  // namespace cohort::kube
