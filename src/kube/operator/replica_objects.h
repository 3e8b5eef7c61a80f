// How the operator reads a job's pods and services back: which job and replica an object belongs
// to, and what a pod says about its replica (job::ObservedReplica).
//
// Objects are matched to a job the way Kubeflow's operator does, by the operator's labels and by
// ownership: an object belongs to a job only when its controller ownerReference is of the job's
// kind and carries the job's uid, so a pod that merely has the right labels (left over from an
// earlier job of the same name, or made by hand) is never adopted.
//
// A pod becomes an ObservedReplica:
//   phase      Pending -> kPending; Running -> kRunning while the job's container runs, kPending
//              while the kubelet waits to restart it in place (CrashLoopBackOff); Succeeded ->
//              kSucceeded; Failed -> kFailed; Unknown -> kPending.
//   exit_code  the job's container's (the kind's: `tensorflow`, `pytorch`)
//   state.terminated.exitCode; a container killed
//              by signal N with no exit code reads 128 + N; a failed pod whose container never
//              terminated (evicted, node lost) or reports 0 (a sidecar failed the pod) reads 255,
//              which the ExitCode policy retries.
//   restarts   the restarts made before this pod was created, which the operator writes into the
//              pod's kRestartsAnnotation when it re-creates a replica, plus the container's
//              in-place restartCount (OnFailure and Always restarts by the kubelet):
//              RestartRecordOfPod.
//   group_restarts  the pod's kGroupRestartsAnnotation: how many of the restarts before it were
//              group restarts (job::Action::group_restart), which backoffLimit does not count. An
//              in-place restart by the kubelet is never one: the operator sees a container that
//              runs again, not the exit and its peer report, so it counts as Kubeflow counts it.
//   termination_message  for a pod that ended, the job container's state.terminated.message (the
//              runtime's peer report, cluster/peer_report.h), at most 4096 bytes.
// A replica the operator terminated (job::Action::kTerminate) is observed from the record on its
// service instead (ObserveTerminated), whether its pod is still terminating or gone.
// Every number read from an object is bounded, so a hand-edited annotation cannot overflow.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "base/time.h"
#include "job/common_types.h"
#include "job/job_kind.h"
#include "job/reconciler.h"
#include "job/restart_state_machine.h"

namespace cohort::kube {

// The labels Kubeflow's operator puts on every pod and service of a job. The operator-name label's
// value is the job kind's controller (job::KindFacts::controller_name: "tfjob-controller",
// "pytorchjob-controller").
inline constexpr const char* kOperatorNameLabel = "training.kubeflow.org/operator-name";
inline constexpr const char* kJobNameLabel = "training.kubeflow.org/job-name";
inline constexpr const char* kReplicaTypeLabel = "training.kubeflow.org/replica-type";
inline constexpr const char* kReplicaIndexLabel = "training.kubeflow.org/replica-index";

// Cohort's own bookkeeping of re-creation restarts: each replica's job::RestartRecord
// (job/restart_state_machine.h), kept on the objects so that an operator that restarts loses
// nothing. The names and formats are a contract with running clusters; they do not change:
//  - on a pod: how many restarts of its replica came before this pod (re-creations and in-place
//    restarts of the earlier pods), as a decimal count, written only when not 0;
//  - on a replica's service, while a restart waits for its back-off: the restart count the new pod
//    will carry (decimal), when it may be created (RFC 3339, whole seconds), and the uid of the
//    pod it replaces.
inline constexpr const char* kRestartsAnnotation = "cohort.dev/restarts";
inline constexpr const char* kRestartAfterAnnotation = "cohort.dev/restart-after";
inline constexpr const char* kRestartOfAnnotation = "cohort.dev/restart-of";
// On a pod and beside a pending restart on a service: how many of the restarts were group
// restarts (decimal; on a pod only when not 0).
inline constexpr const char* kGroupRestartsAnnotation = "cohort.dev/group-restarts";
// On a replica's service once the operator has terminated its pod for a peer report, until the
// replica is restarted: the uid of the terminated pod and when it was terminated, beside
// kRestartsAnnotation and kGroupRestartsAnnotation holding the pod's counts.
inline constexpr const char* kTerminatedPodAnnotation = "cohort.dev/terminated-pod";
inline constexpr const char* kTerminatedAtAnnotation = "cohort.dev/terminated-at";

// The most restarts a replica may have on record; larger annotations read as this.
inline constexpr int kMaxRecordedRestarts = job::kMaxRecordedRestarts;

// "namespace/name" of an object: the key of the job queue and the caches.
std::string ObjectKey(const nlohmann::json& object);
std::string ObjectKey(const std::string& namespace_name, const std::string& name);

// The uid of the object's controller ownerReference of kind `owner_kind`, or "" when none.
std::string ControllerUid(const nlohmann::json& object, const std::string& owner_kind);
// The key of the job that controls `object` ("" when no controller of that kind).
std::string ControllerKey(const nlohmann::json& object, const std::string& owner_kind);

// The label selector of the pods and services the operator of `kinds` owns:
// "training.kubeflow.org/operator-name=tfjob-controller" for one kind, and for several
// "training.kubeflow.org/operator-name in (pytorchjob-controller,tfjob-controller)".
std::string OwnedObjectsSelector(const std::vector<const job::JobKind*>& kinds);

// The work queue's key of a job: "<Kind>/<namespace>/<name>" ("PyTorchJob/default/mnist"), so that
// a TFJob and a PyTorchJob of one name in one namespace are two keys, never one. `object_key` is
// ObjectKey's "namespace/name"; a kind's name holds no "/".
std::string JobQueueKey(const job::JobKind& kind, const std::string& object_key);
// What a queue key names: the kind's name ("PyTorchJob") and "namespace/name". nullopt when `key`
// has no kind before its first "/".
struct JobQueueKeyParts {
  std::string kind;
  std::string object_key;
};
std::optional<JobQueueKeyParts> ParseJobQueueKey(const std::string& key);

// A replica of `job`: its canonical type and index, from the object's labels. nullopt when the
// labels are missing, malformed or name a type the job does not have.
struct ReplicaRef {
  std::string type;
  int index = 0;
  bool operator<(const ReplicaRef& other) const {
    return type != other.type ? type < other.type : index < other.index;
  }
};
std::optional<ReplicaRef> ReplicaOf(const job::Job& job, const nlohmann::json& object);

// What `pod` says about its replica; `container_name` is the job kind's container (pytorch...),
// the first container when none has that name.
job::ObservedReplica ObservePod(const nlohmann::json& pod, const ReplicaRef& replica,
                                const std::string& container_name);

// The restarts `pod` carries: its annotations' counts plus the in-place restartCount of the job's
// container (`container_name`, the first container when none has that name); group restarts
// never more than restarts. Never waiting: a pod is a run, not a restart to make.
job::RestartRecord RestartRecordOfPod(const nlohmann::json& pod, const std::string& container_name);

// Writes the counts of `record` on the pod that is to carry them (a re-created replica's new pod),
// each only when not 0.
void AnnotatePodRestarts(nlohmann::json& pod, const job::RestartRecord& record);

// The restart waiting on a replica's service, nullopt when none waits (no restart-after). An
// unreadable restart-after reads as due at once.
std::optional<job::RestartRecord> WaitingRestartOf(const nlohmann::json& service);

// The service's annotations for `record`, as a merge patch: a waiting restart's four annotations,
// or, once no restart waits, the four removed (null).
nlohmann::json WaitingRestartAnnotations(const job::RestartRecord& record);

// A replica whose pod the operator terminated, as recorded on its service.
struct TerminationRecord {
  std::string pod_uid;
  Time at;
  int restarts = 0;
  int group_restarts = 0;
};
// The record on `service`, nullopt when it has none.
std::optional<TerminationRecord> TerminationRecordOf(const nlohmann::json& service);

// A terminated replica: kFailed until it is restarted, with the exit code the kubelet reported
// for its container when it did (143, SIGTERM, when it reported none or 0, or the pod is gone),
// and the counts of the record, which outlive the pod. `pod` is the terminated pod while it is
// still there, else null.
job::ObservedReplica ObserveTerminated(const nlohmann::json& pod, const TerminationRecord& record,
                                       const ReplicaRef& replica,
                                       const std::string& container_name);

// Whether the object is being deleted (metadata.deletionTimestamp set).
bool IsTerminating(const nlohmann::json& object);

// An annotation of `object`, "" when absent.
std::string Annotation(const nlohmann::json& object, const std::string& key);

// A non-negative count read from text, at most kMaxRecordedRestarts; 0 when not a number.
int ParseCount(const std::string& text);

}  // namespace cohort::kube
