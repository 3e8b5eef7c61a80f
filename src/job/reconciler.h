// The reconciler: the Kubeflow job controller's logic as a pure function, for a job of any kind.
//
//   Reconcile(job, previous status, observed replicas, now) -> actions + new status + events
//
// It owns every decision the Kubeflow training operator makes (restart or not, success, failure,
// backoff limit, active deadline, cleanPodPolicy, TTL, suspend) and none of the doing. As the
// operator's one JobController with per-kind hooks, it takes what differs between kinds from the
// job's JobKind (job_kind.h): the replica types and their order, which type is the chief, the
// success rule, which failures are tolerated, and the kind's name and reason prefix in conditions
// and events ("TFJob mnist is created.", TFJobRunning). An
// executor observes its replicas, calls Reconcile, carries out the actions and persists the status
// and events; there are two, the local controller (exec/job_controller.h: replicas as local
// processes) and the Kubernetes operator (kube/operator/job_sync.h: replicas as pods), and both
// keep each replica's restarts (back-off, counts, group restarts) in a RestartStateMachine
// (restart_state_machine.h). The same inputs always give the same outputs, so every policy is
// unit-tested without starting a process.
//
// Where Cohort deliberately differs from the operator (each one a Kubeflow bug or gap that users
// reported), the difference is documented at the function that implements it and in
// docs/architecture.md:
//  - backoffLimit counts every restart actually made, ExitCode re-creations included
//    (kubeflow/trainer #2045).
//  - activeDeadlineSeconds is enforced by its own timer: ReconcileResult::requeue_at.
//  - Running and Restarting turn each other False instead of removing each other, so a finished
//    job that restarted still shows "Restarting False" in its conditions.
//  - Every restart, Always and OnFailure ones included, shows the Restarting condition and a
//    <prefix>Restarting event (TFJobRestarting) (the kubelet's in-place restarts show neither), and
//    the job stays Restarting until the restarted replicas run again.
//  - Each event is recorded once where the operator repeats it on every pass (ExitedWithCode per
//    exit, TFJobSuspended when the job is suspended, TFJobFailed per failure).
//  - A replica whose failure the kind tolerates (a TFJob's Worker with enableDynamicWorker) does
//    not fail the job by an ExitCode exit 1-127 either.
//  - A failed job's message names the first replica that failed: how (exit code, the signal a
//    code above 128 stands for), when, after how many restarts, and the line of its log that says
//    why (a log policy's match, else its last line), e.g. "TFJob default/mnist has failed because
//    1 Worker replica(s) failed: worker-1 exited with code 1 at 2026-11-24T08:50:00Z after 0
//    restarts; its log: \"RuntimeError: CUDA out of memory\" (log policy cuda-oom: permanent)".
//  - Log policies (log_policy.h): a failure whose log matches a permanent rule is not restarted
//    and fails the job; a retryable one is restarted under ExitCode even for an exit of 1-127.
//  - Succeeded and Failed turn Restarting False as well as Running (RemoveConditionForReplacement);
//    the operator flips only Running and leaves a Restarting True in a finished job's conditions.
//    A finished job is not restarting; its state, the last condition, is the same either way.
//  - Peer reports (cluster/peer_report.h) are acted on: a replica that exited saying "peer
//    worker:1 hung (...)" gets worker-1 stopped and restarted per its restartPolicy (kTerminate),
//    as a failed liveness probe would on Kubernetes; the operator has no such channel and leaves a
//    hung replica running for ever. Both executors act on it: the local one, and Cohort's
//    Kubernetes operator (kube/operator), which reads the report from the pod's termination
//    message and deletes the hung replica's pod with its grace period. A report is only about
//    runs of its reporter's generation or earlier (ObservedReplica::generation): one that arrives
//    after the accused was restarted into a later generation (a slow survivor's) is stale, and is
//    recorded (Normal event StalePeerReport) instead of stopping the new run.
//  - A group restart counts once against backoffLimit: the restart of a replica that exited
//    because a peer failed (its peer report names another replica of the job, as the kind reads
//    the name: JobKind::ReplicaOfTask, "worker:1" or a PyTorchJob's "rank:2") is not counted;
//    the failed peer's own exit is. The operator counts every container restart, so one crash of
//    a 3-worker job uses three. The executors count through RestartStateMachine; Cohort's
//    Kubernetes operator keeps the counts on the pods it re-creates; a replica the kubelet
//    restarts in place (OnFailure, Always) shows it no exit, so there every restart counts and no
//    report is acted on, as with the operator.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "base/time.h"
#include "job/common_types.h"
#include "job/log_policy.h"
#include "job/restart_state_machine.h"

namespace cohort::job {

// The lifecycle of one replica, as a pod phase.
enum class ReplicaPhase {
  kPending,    // waiting to be (re)started, e.g. during restart back-off
  kRunning,    // the process is alive
  kSucceeded,  // exited with code 0 and will not be restarted
  kFailed,     // exited non-zero or was killed, and has not been restarted (yet)
};
std::string ToString(ReplicaPhase phase);

// What the executor could tell of why a replica's last run ended, beyond its exit code. The
// reconciler quotes it in the job's failure message and lets a log policy decide the restart.
struct ExitDetails {
  // The first log policy (log_policy.h) that matched the run's output, with the line.
  std::optional<LogPolicyMatch> log_policy;
  std::string last_log_line;  // the run's last non-empty line of output, cut to a few KiB
  // An earlier line that reads as the error (log_policy.h's LastErrorLine), quoted instead of a
  // last line such as "Run cohort-train --help for usage."; empty when the last line is the one.
  std::string error_log_line;
  std::string hint;  // the executor's own explanation, e.g. of a command that could not run
  // The signal that killed the process, as the executor saw it (0: it exited by itself, or the
  // executor cannot tell); a program that exits 137 itself is not killed by SIGKILL.
  int signal = 0;
  bool oom_killed = false;  // the kernel says its OOM killer killed it
  bool operator==(const ExitDetails& other) const {
    return log_policy == other.log_policy && last_log_line == other.last_log_line &&
           error_log_line == other.error_log_line && hint == other.hint && signal == other.signal &&
           oom_killed == other.oom_killed;
  }
};

// What the executor knows about one replica. A replica that was never started is simply absent.
struct ObservedReplica {
  std::string type;  // canonical replica type, e.g. "Worker"
  int index = 0;
  ReplicaPhase phase = ReplicaPhase::kPending;
  // Valid when phase is kSucceeded or kFailed: the exit code as a shell reports it, so death by
  // signal N is 128 + N (SIGKILL = 137), the way Kubernetes reports a container's exit code.
  int exit_code = 0;
  // How many times the executor restarted this replica (in place or by re-creation), a waiting
  // restart included: RestartStateMachine::restarts().
  int restart_count = 0;
  std::optional<Time> started_at;   // of the current run
  std::optional<Time> finished_at;  // of the last exit
  // How many of those restarts were group restarts (Action::group_restart): they do not count
  // against backoffLimit. RestartStateMachine::group_restarts().
  int group_restarts = 0;
  // Valid when phase is kSucceeded or kFailed: what the replica left in its termination-message
  // file (cluster/peer_report.h; a pod's containerStatuses[].state.terminated.message), "" when
  // nothing. A peer report there names the replica that made it give up.
  std::string termination_message;
  ExitDetails details;  // of the last exit
  // The group generation its current run belongs to (of its last run once it has exited):
  // RestartStateMachine::generation(). A peer report left by a run of generation g is not taken
  // to be about an accused run of a later generation (GroupGenerations, restart_state_machine.h).
  // An executor that keeps none leaves every replica at 0.
  int generation = 0;
};

struct Action {
  enum class Kind {
    kStart,  // start a replica that is absent (not yet created, or deleted)
    // Start again a replica that exited. The executor hands the decision to the replica's
    // RestartStateMachine (restart_state_machine.h), which counts the restart at once and holds it
    // for its crash-loop back-off; meanwhile the executor shows the replica as kPending with the
    // machine's counts, then starts it. The reconciler emits the Restarting event when it
    // decides, exactly once.
    kRestart,
    kStop,  // SIGTERM, then SIGKILL after the grace period; the replica is then absent
    // A running replica that its peers report hung or dead: SIGTERM, then SIGKILL after the grace
    // period, as the kubelet ends a container whose liveness probe failed. Unlike kStop the
    // replica stays: its exit (143, or 137) is observed like any other and its restart policy
    // decides what follows.
    kTerminate,
    // TTL expired: stop everything and remove the job. The reconciler records no event for it,
    // since only the executor knows whether the deletion worked: the executor records Warning
    // FailedDeleteJob "Error deleting: <why>" in the job's events, or reports Normal
    // SuccessfulDeleteJob "Deleted job: <name>" to whoever watches it (`cohort run` prints it);
    // that one cannot be kept, as the job's event log is deleted with the job.
    kDeleteJob,
  };
  Kind kind;
  std::string type;  // empty for kDeleteJob
  int index = 0;
  std::string reason;  // why, for logs ("cleanPodPolicy All", "backoff limit reached"...)
  // kRestart only: the replica exited because a peer failed, so this restart is part of the
  // failed peer's group restart and does not count against backoffLimit. The executor passes it
  // to RestartStateMachine::RestartDecided, which adds it to the replica's group restarts.
  bool group_restart = false;
};

struct ReconcileResult {
  JobStatus status;
  std::vector<Action> actions;
  std::vector<Event> events;  // new events only
  // When the reconciler wants to run again even if nothing is observed to change (restart
  // back-off elapsed, active deadline, TTL). nullopt: only when something changes.
  std::optional<Time> requeue_at;
  // True when the job has Succeeded or Failed and the executor has nothing left to wait for
  // except cleanup and TTL.
  bool finished = false;
};

// `job` must be defaulted and valid, with its job_kind set. `previous` is the status written by the
// last call (empty for a new job). `observed` lists every replica that exists.
//
// Times written into the status and the events are `now` rounded down to whole seconds, as the
// status JSON stores them, so a status read back from disk equals the one returned. ExitedWithCode
// is recorded once per exit: an exited replica that stays exited is recognised as already reported
// from the counters in `previous`, so the executor needs no bookkeeping for it, but it must pass
// back the status of the last call and carry out kRestart and kStop before the next call.
ReconcileResult Reconcile(const Job& job, const JobStatus& previous,
                          const std::vector<ObservedReplica>& observed, Time now);

// Condition bookkeeping exactly as the operator's setCondition: see reconciler.cc.
void SetCondition(JobStatus& status, const std::string& type, const std::string& condition_status,
                  const std::string& reason, const std::string& message, Time now);

// The last condition's type, as `kubectl get tfjob` prints in STATE ("" when none).
std::string JobState(const JobStatus& status);
bool IsSucceeded(const JobStatus& status);
bool IsFailed(const JobStatus& status);
// A Suspended condition with status True (docs/behaviour.md §3.10).
bool IsSuspended(const JobStatus& status);
inline bool IsFinished(const JobStatus& status) { return IsSucceeded(status) || IsFailed(status); }

}  // namespace cohort::job
