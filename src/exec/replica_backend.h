// ReplicaBackend: where the local controller's replicas run. JobController (job_controller.h)
// asks it to start and stop replicas and watches what exists; it decides nothing itself. It exists
// so that the controller's loop is tested without processes: LocalProcessBackend
// (local_process_backend.h, each replica a local process) is the one Cohort runs, and the
// controller's tests use a fake on a fake clock (tests/exec/fake_replica_backend.h).
//
// It keeps the shape of a pod API, so that the local controller behaves as an operator does:
//  - Observe() returns what exists now, as a pod list would;
//  - Start() and Stop() are requests: their effect (a replica running, exiting, gone) is seen in a
//    later Observe(), never assumed;
//  - WaitForChange() blocks until something may have changed or a deadline passes, as a watch
//    with a timeout does.
// Kubernetes pods do not go through it. The operator (kube/operator/job_sync.h) drives pods
// through its own sync pass over its informers' caches, because its state lives on the API server
// (the job's status, services, pods and the restart records in their annotations) and each pass
// must resume from there, leader election and all. What the two executors share is above this
// interface: the decisions (job::Reconcile, job/reconciler.h) and each replica's restart
// bookkeeping (job::RestartStateMachine, job/restart_state_machine.h).
//
// A replica is identified by its type and index ("Worker", 1). A replica that was stopped while
// it ran is absent from Observe() once it is gone, like a deleted pod; one that exited by itself
// stays, with its exit code, until it is started again or stopped.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "base/status.h"
#include "base/time.h"
#include "job/common_types.h"
#include "job/reconciler.h"

namespace cohort::exec {

struct ReplicaId {
  std::string type;  // canonical replica type, e.g. "Worker"
  int index = 0;
  bool operator<(const ReplicaId& other) const {
    return std::tie(type, index) < std::tie(other.type, other.index);
  }
  bool operator==(const ReplicaId& other) const {
    return type == other.type && index == other.index;
  }
};

// One replica as the backend sees it.
struct ReplicaState {
  ReplicaId id;
  // kRunning; kPending while it is being started (a pod being scheduled); kSucceeded or kFailed
  // once it has exited.
  job::ReplicaPhase phase = job::ReplicaPhase::kRunning;
  int exit_code = 0;  // when it has exited: as a shell reports it, 128 + N for signal N
  std::optional<Time> started_at;
  std::optional<Time> finished_at;
  bool stopping = false;  // Stop() was asked and it still runs
  int pid = 0;            // the local process id, shown by `cohort describe`; 0 when none
  // Once it has exited: what it left in the file that COHORT_TERMINATION_MESSAGE_PATH names
  // (cluster/peer_report.h), at most 4096 bytes, "" when nothing. Each run starts with an empty
  // file, like a container's terminationMessagePath.
  std::string termination_message;
  // Once it has exited: the end of what this run wrote (at most kOutputTailBytes, split into
  // lines, oldest first), for log policies and for the job's failure message.
  std::vector<std::string> output_tail;
  // Once it has exited: what the backend can tell of the exit beyond its code, e.g. that the
  // command could not be run and which command it was; "" when nothing.
  std::string exit_hint;
  int signal = 0;           // once it has exited: the signal that killed it, 0 when it exited
  bool oom_killed = false;  // the kernel records that its OOM killer killed it (kernel_log.h)
};

// How much of a run's end ReplicaState::output_tail holds.
inline constexpr size_t kOutputTailBytes = 64 * 1024;

// What the controller asks to start.
struct ReplicaStart {
  ReplicaId id;
  const job::Job* job = nullptr;  // the job's current spec; outlives the call only
  int restart_count = 0;          // 0 for the first start
  int previous_exit_code = 0;     // of the run this one replaces, when restart_count > 0
};

enum class StopMode {
  kGraceful,  // SIGTERM now, SIGKILL once the replica's grace period is over
  kNow,       // SIGKILL now (a second stop request)
  // As kGraceful, but the replica stays once it has exited, with its exit code, so that its
  // restart policy applies: what the kubelet does when a liveness probe fails.
  kAsFailed,
};

class ReplicaBackend {
 public:
  virtual ~ReplicaBackend() = default;

  // Starts a replica that is absent or has exited (an exited one is replaced). Returns the
  // replica as created, as far as it is known at once (a process: running, with its pid; a pod
  // would be pending). An error says why it could not be created; the replica is then absent.
  virtual StatusOr<ReplicaState> Start(const ReplicaStart& request) = 0;

  // Stops a replica: one that runs goes away after its grace period at most (kGraceful), or exits
  // by then and stays as exited (kAsFailed); one that has exited is removed at once; an absent one
  // is left alone.
  virtual void Stop(const ReplicaId& id, StopMode mode) = 0;

  // Every replica that exists, in ReplicaId order.
  virtual std::vector<ReplicaState> Observe() = 0;

  // Returns when something may have changed (a replica exited, Interrupt() was called) or at
  // `deadline`, whichever comes first. It may return early; the caller observes again.
  virtual void WaitForChange(Time deadline) = 0;

  // Makes a WaitForChange() in progress, or the next one, return at once. Async-signal-safe.
  virtual void Interrupt() = 0;
};

}  // namespace cohort::exec
