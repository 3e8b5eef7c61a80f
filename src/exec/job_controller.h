// JobController: one job's control loop, the same for every backend.
//
//   load the spec -> observe the replicas (ReplicaBackend) -> job::Reconcile -> carry out its
//   actions through the backend -> persist status, events and the replica table (JobStateStore)
//   -> wait for a change or the reconciler's requeue time -> again
//
// It plays the operator's part around the pure reconciler (job/reconciler.h) and decides no
// policy itself. What it adds is bookkeeping the reconciler expects of an executor: each
// replica's restarts in a job::RestartStateMachine (job/restart_state_machine.h), the one the
// Kubernetes operator uses too (a replica to restart shows as Pending with its new restart count
// until the machine's back-off is over, then is started again; kept in memory, since a job whose
// supervisor dies is failed, not resumed), the group generation each run starts in
// (job::GroupGenerations: a restart that is not a group restart opens the next one, so that a
// slow survivor's peer report about a replica restarted since is known to be stale), noticing that
// a stopped replica is gone (event SuccessfulDeletePod), a saved spec that changed (`cohort
// suspend` / `resume`), a stop asked by the user (the job is marked Failed and every replica
// stopped; a second request kills at once), and the TTL's deletion of the job. Once the job has
// finished, whatever still runs is stopped: no replica outlives its job's controller. Under
// cleanPodPolicy None, which keeps every pod, such a replica is stopped as failed instead of
// removed: its row keeps its final phase, exit code and last lines, `get pods` lists it and `cohort
// logs` reads it (event StoppedPod says why it ended).
//
// It is single-threaded and blocks only in ReplicaBackend::WaitForChange().
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "base/time.h"
#include "exec/job_state_store.h"
#include "exec/replica_backend.h"
#include "job/common_types.h"
#include "job/log_policy.h"
#include "job/reconciler.h"
#include "job/restart_state_machine.h"

namespace cohort::exec {

// What the controller reports as it goes; `cohort run` prints it, a detached supervisor does not.
struct ControllerObserver {
  std::function<void(const job::JobCondition&)> on_condition;  // a condition that changed
  std::function<void(const job::Event&)> on_event;
  std::function<void()> on_tick;  // every turn of the loop (log streaming)
};

class JobController {
 public:
  // `clock` gives the time of each turn (tests pass a fake clock that their backend advances).
  JobController(JobStateStore& store, ReplicaBackend& backend, JobKey key,
                ControllerObserver observer = {}, std::function<Time()> clock = Clock::now);

  // Reads the job's spec and status. FailedPrecondition when the job has already finished.
  Status Load();

  // Runs the job (Load()ing it first if needed) until it has finished and none of its replicas
  // runs. Returns its final status. When the TTL deleted the job, the job is gone from the store.
  StatusOr<job::JobStatus> Run();

  // Async-signal-safe: asks Run() to stop the job and mark it Failed as stopped by the user
  // (SIGINT: "the user (Ctrl-C)", otherwise "signal N").
  void RequestStop(int signal_number);

  // Log policies from outside the job ($COHORT_HOME/config), matched after the job's own
  // (its cohort.dev/log-policies annotation, job/log_policy.h) against a failed run's output.
  void AddLogPolicies(std::vector<job::LogPolicy> policies);

 private:
  // The controller's view of one replica: the backend's last observation and its own
  // bookkeeping.
  struct Replica {
    ReplicaId id;
    job::ReplicaPhase phase = job::ReplicaPhase::kPending;
    int exit_code = 0;
    // Its restart count, group restarts and a restart waiting for its back-off.
    job::RestartStateMachine restarts;
    std::optional<Time> started_at;
    std::optional<Time> finished_at;
    bool running = false;         // the backend has it, started and not exited
    bool stop_requested = false;  // stopped while it ran: absent once gone, unless keep_row
    // Stopped because its job finished under cleanPodPolicy None: it stays in the table with its
    // final phase, as the pod that policy keeps would.
    bool keep_row = false;
    bool terminating = false;  // job::Action::kTerminate sent: its exit is coming
    std::string exit_message;  // its last exit's termination message
    int pid = 0;
    // Restarts made before it was last removed (suspended, or stopped by cleanPodPolicy): the
    // replica table's RESTARTS goes on from there, while the reconciler, like the operator with a
    // new pod, counts only this replica's own.
    int earlier_restarts = 0;
    job::ExitDetails details;                 // of the last exit
    std::vector<std::string> last_log_lines;  // of the last finished run
  };

  Status ReloadSpecIfChanged();
  // What is known of an exit beyond its code: the log policy that matches its output, its last
  // line, the backend's hint; and the lines the replica table keeps.
  void ExplainExit(Replica& replica, const ReplicaState& state) const;
  // Takes in the backend's observation; a stopped replica that is gone becomes absent.
  void Refresh(Time now, std::vector<job::Event>& events);
  void HandleStopRequest(Time now, bool& handled);
  void StartDueRestarts(Time now);
  void Apply(const job::Action& action, Time now, std::vector<job::Event>& events);
  void StartReplica(Replica& replica, Time now, std::vector<job::Event>& events);
  void StopReplica(Replica& replica);
  // Stops it as cleanPodPolicy None keeps a pod: its exit is observed and its row stays.
  void StopKeepingRow(Replica& replica, Time now, std::vector<job::Event>& events);
  // Once the job has finished (or is being deleted): stops whatever still runs or waits.
  void StopEverything();
  void ClearActiveCounts();
  std::vector<job::ObservedReplica> Observed() const;
  bool AnyRunning() const;
  void Publish(const job::JobStatus& status, const std::vector<job::Event>& events);
  // Remembers the last state of a replica that is about to go away, for the replica table.
  void KeepRemovedRow(const Replica& replica, Time now);
  ReplicaRow RowOf(const Replica& replica) const;
  void WriteReplicaTable();
  StatusOr<job::JobStatus> Finish();

  JobStateStore& store_;
  ReplicaBackend& backend_;
  JobKey key_;
  ControllerObserver observer_;
  std::function<Time()> clock_;
  bool loaded_ = false;
  job::Job job_;
  int64_t spec_version_ = 0;
  std::vector<job::LogPolicy> job_log_policies_;    // the job's annotation's
  std::vector<job::LogPolicy> extra_log_policies_;  // AddLogPolicies
  std::map<std::string, int> ports_;                // for the replica table
  // Replicas stopped and gone, kept in the table (marked removed) until one runs again there.
  std::map<ReplicaId, ReplicaRow> removed_rows_;
  job::JobStatus status_;
  bool status_written_ = false;
  bool replica_table_write_failed_ = false;  // reported once, until a write succeeds
  std::map<ReplicaId, Replica> replicas_;
  // The group's generations: each run is tagged with the one it started in, so that a slow
  // survivor's report about a replica already restarted does not stop the new run.
  job::GroupGenerations generations_;
  bool deleting_ = false;
  bool started_in_turn_ = false;  // a replica was started since the last wait
  std::atomic<int> stop_requests_{0};
  std::atomic<int> stop_signal_{0};
};

}  // namespace cohort::exec
