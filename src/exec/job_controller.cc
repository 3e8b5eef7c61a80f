#include "exec/job_controller.h"

#include <algorithm>
#include <csignal>
#include <nlohmann/json.hpp>

#include "exec/replica_environment.h"
#include "job/job_kind.h"
#include "job/status_json.h"

namespace cohort::exec {
namespace {

std::optional<Time> Earliest(std::optional<Time> a, std::optional<Time> b) {
  if (!a) return b;
  if (!b) return a;
  return std::min(*a, *b);
}

}  // namespace

JobController::JobController(JobStateStore& store, ReplicaBackend& backend, JobKey key,
                             ControllerObserver observer, std::function<Time()> clock)
    : store_(store),
      backend_(backend),
      key_(std::move(key)),
      observer_(std::move(observer)),
      clock_(std::move(clock)) {}

void JobController::RequestStop(int signal_number) {
  stop_signal_.store(signal_number);
  stop_requests_.fetch_add(1);
  backend_.Interrupt();
}

Status JobController::ReloadSpecIfChanged() {
  int64_t version = store_.SpecVersion(key_);
  if (loaded_ && version == spec_version_) return Status::OK();
  StatusOr<job::Job> job = store_.ReadSpec(key_);
  if (!job.ok()) return job.status();
  job_ = std::move(*job);
  spec_version_ = version;
  // Validation refused a job whose rules do not parse, so a failure here means none.
  StatusOr<std::vector<job::LogPolicy>> policies = job::JobLogPolicies(job_);
  job_log_policies_ = policies.ok() ? std::move(*policies) : std::vector<job::LogPolicy>{};
  return Status::OK();
}

void JobController::AddLogPolicies(std::vector<job::LogPolicy> policies) {
  extra_log_policies_.insert(extra_log_policies_.end(), policies.begin(), policies.end());
}

void JobController::ExplainExit(Replica& replica, const ReplicaState& state) const {
  replica.details = job::ExitDetails{};
  replica.details.hint = state.exit_hint;
  replica.details.signal = state.signal;
  replica.details.oom_killed = state.oom_killed;
  std::vector<std::string> lines;
  for (const std::string& line : state.output_tail) {
    if (line.find_first_not_of(" \t\r") != std::string::npos) lines.push_back(line);
  }
  if (!lines.empty()) {
    replica.details.last_log_line = lines.back().substr(0, job::kMaxMatchedLineBytes);
  }
  if (state.exit_code != 0) {
    if (std::optional<size_t> error = job::LastErrorLine(lines);
        error && *error + 1 < lines.size()) {
      replica.details.error_log_line = lines[*error].substr(0, job::kMaxMatchedLineBytes);
    }
    replica.details.log_policy = job::MatchLogPolicies(job_log_policies_, lines);
    if (!replica.details.log_policy) {
      replica.details.log_policy = job::MatchLogPolicies(extra_log_policies_, lines);
    }
    if (!replica.details.log_policy) {
      replica.details.log_policy = job::MatchLogPolicies(job::BuiltInLogPolicies(), lines);
    }
  }
  const size_t first = lines.size() > kKeptLogLines ? lines.size() - kKeptLogLines : 0;
  replica.last_log_lines.clear();
  for (size_t i = first; i < lines.size(); ++i) {
    replica.last_log_lines.push_back(lines[i].substr(0, job::kMaxMatchedLineBytes));
  }
}

Status JobController::Load() {
  loaded_ = false;
  COHORT_RETURN_IF_ERROR(ReloadSpecIfChanged());
  StatusOr<job::JobStatus> status = store_.ReadStatus(key_);
  if (!status.ok()) return status.status();
  status_ = std::move(*status);
  StatusOr<std::map<std::string, int>> ports = store_.ReadEndpoints(key_);
  ports_ = ports.ok() ? *ports : std::map<std::string, int>{};
  if (job::IsFinished(status_)) {
    return Status::FailedPrecondition("job " + key_.ToString() + " has already finished");
  }
  loaded_ = true;
  return Status::OK();
}

StatusOr<job::JobStatus> JobController::Run() {
  if (!loaded_) COHORT_RETURN_IF_ERROR(Load());
  bool stop_handled = false;
  // Never wait longer than this: cheap, and it bounds any missed wake-up.
  const auto longest_wait = std::chrono::milliseconds(observer_.on_tick ? 100 : 1000);
  while (true) {
    // `cohort suspend` and `cohort resume` edit the saved spec, as kubectl patch would.
    if (Status reloaded = ReloadSpecIfChanged(); !reloaded.ok() && observer_.on_event) {
      observer_.on_event({"Warning", "SpecReloadFailed", reloaded.message(), clock_()});
    }
    Time now = clock_();
    std::vector<job::Event> deletions;
    Refresh(now, deletions);
    Publish(status_, deletions);
    HandleStopRequest(now, stop_handled);
    if (!job::IsFinished(status_)) StartDueRestarts(now);

    job::ReconcileResult result = job::Reconcile(job_, status_, Observed(), now);
    std::vector<job::Event> events = result.events;
    for (const job::Action& action : result.actions) Apply(action, now, events);
    Publish(result.status, events);
    // No replica outlives the job's controller: once the job has finished and the reconciler's
    // cleanPodPolicy actions are done, whatever still runs is stopped.
    if (job::IsFinished(status_)) {
      StopEverything();
      ClearActiveCounts();
    }
    WriteReplicaTable();
    if (observer_.on_tick) observer_.on_tick();
    if (job::IsFinished(status_) && !AnyRunning()) break;
    // A replica started in this turn is counted active by the next pass: take it at once, so
    // the status does not lag behind the replica table while the controller waits.
    if (started_in_turn_) {
      started_in_turn_ = false;
      continue;
    }

    std::optional<Time> wake_at = result.requeue_at;
    for (const auto& [id, replica] : replicas_) {
      wake_at = Earliest(wake_at, replica.restarts.restart_after());
    }
    Time deadline = clock_() + longest_wait;
    if (wake_at) deadline = std::min(deadline, *wake_at + std::chrono::milliseconds(1));
    backend_.WaitForChange(deadline);
  }
  if (observer_.on_tick) observer_.on_tick();
  return Finish();
}

StatusOr<job::JobStatus> JobController::Finish() {
  if (!deleting_) return status_;
  Status deleted = store_.DeleteJob(key_);
  Time now = clock_();
  if (!deleted.ok()) {
    Publish(status_, {{"Warning", "FailedDeleteJob", "Error deleting: " + deleted.message(), now}});
    return deleted;
  }
  // The job's event log went with it, so only the observer (`cohort run`) can show this one.
  if (observer_.on_event) {
    observer_.on_event({"Normal", "SuccessfulDeleteJob", "Deleted job: " + key_.name, now});
  }
  return status_;
}

void JobController::Refresh(Time now, std::vector<job::Event>& events) {
  std::map<ReplicaId, ReplicaState> observed;
  for (ReplicaState& state : backend_.Observe()) observed[state.id] = state;
  for (auto it = replicas_.begin(); it != replicas_.end();) {
    Replica& replica = it->second;
    auto found = observed.find(replica.id);
    if (found == observed.end()) {
      if (replica.running && replica.stop_requested && replica.keep_row) {
        // Stopped at once (a second Ctrl-C), so its exit was not kept: it was killed.
        replica.running = false;
        replica.pid = 0;
        replica.phase = job::ReplicaPhase::kFailed;
        replica.exit_code = 128 + SIGKILL;
        replica.finished_at = now;
        replica.exit_message.clear();
        ++it;
        continue;
      }
      if (replica.running && replica.stop_requested) {
        // We stopped it: like a deleted pod, it is simply absent now.
        events.push_back(
            {"Normal", "SuccessfulDeletePod",
             "Deleted pod: " + job::ReplicaName(key_.name, replica.id.type, replica.id.index),
             now});
        KeepRemovedRow(replica, now);
        it = replicas_.erase(it);
        continue;
      }
      if (replica.running) {  // gone without being stopped: lost, as a vanished pod is
        replica.running = false;
        replica.pid = 0;
        replica.phase = job::ReplicaPhase::kFailed;
        replica.exit_code = 255;
        replica.finished_at = now;
        replica.exit_message.clear();
      }
      ++it;
      continue;
    }
    const ReplicaState& state = found->second;
    replica.pid = state.pid;
    if (replica.running && (state.phase == job::ReplicaPhase::kPending ||
                            state.phase == job::ReplicaPhase::kRunning)) {
      replica.phase = state.phase;  // a pod's Pending turns Running
    }
    if (state.phase == job::ReplicaPhase::kSucceeded || state.phase == job::ReplicaPhase::kFailed) {
      if (replica.running) ExplainExit(replica, state);
      replica.running = false;
      replica.phase = state.phase;
      replica.exit_code = state.exit_code;
      replica.finished_at = state.finished_at;
      replica.exit_message = state.termination_message;
      replica.terminating = false;
    }
    ++it;
  }
}

void JobController::HandleStopRequest(Time now, bool& handled) {
  int requests = stop_requests_.load();
  if (requests > 0 && !handled) {
    handled = true;
    int signal_number = stop_signal_.load();
    std::string message = job_.job_kind->name() + " " + key_.ToString() + " was stopped by " +
                          (signal_number == SIGINT ? "the user (Ctrl-C)"
                                                   : "signal " + std::to_string(signal_number)) +
                          " before it finished.";
    job::JobStatus stopped = status_;
    const std::string reason = job_.job_kind->Reason(job::kConditionFailed);
    job::SetCondition(stopped, job::kConditionFailed, "True", reason, message, now);
    if (!stopped.completion_time) stopped.completion_time = now;
    Publish(stopped, {job::Event{"Warning", reason, message, now}});
  }
  if (requests > 1) {  // asked twice: do not wait for the grace period
    for (auto& [id, replica] : replicas_) {
      if (replica.running && replica.stop_requested) backend_.Stop(id, StopMode::kNow);
    }
  }
}

void JobController::StartDueRestarts(Time now) {
  for (auto& [id, replica] : replicas_) {
    if (replica.restarts.IsDue(now) && !replica.running) {
      replica.restarts.Restarted();
      std::vector<job::Event> events;
      StartReplica(replica, now, events);
      Publish(status_, events);
    }
  }
}

void JobController::Apply(const job::Action& action, Time now, std::vector<job::Event>& events) {
  ReplicaId id{action.type, action.index};
  switch (action.kind) {
    case job::Action::Kind::kStart: {
      if (replicas_.count(id)) return;
      Replica& replica = replicas_[id];
      replica.id = id;
      if (auto removed = removed_rows_.find(id); removed != removed_rows_.end()) {
        replica.earlier_restarts = removed->second.restarts;
      }
      StartReplica(replica, now, events);
      return;
    }
    case job::Action::Kind::kRestart: {
      auto it = replicas_.find(id);
      if (it == replicas_.end() || it->second.running) return;
      Replica& replica = it->second;
      backend_.Stop(id, StopMode::kGraceful);  // the exited run goes away, as a failed pod would
      if (replica.restarts.RestartDecided(action.group_restart, now)) {
        generations_.RestartDecided(action.group_restart);
      }
      replica.phase = job::ReplicaPhase::kPending;
      return;
    }
    case job::Action::Kind::kStop: {
      auto it = replicas_.find(id);
      if (it != replicas_.end()) StopReplica(it->second);
      return;
    }
    case job::Action::Kind::kTerminate: {
      auto it = replicas_.find(id);
      if (it == replicas_.end() || !it->second.running || it->second.terminating ||
          it->second.stop_requested) {
        return;
      }
      backend_.Stop(id, StopMode::kAsFailed);
      it->second.terminating = true;
      return;
    }
    case job::Action::Kind::kDeleteJob:
      deleting_ = true;
      StopEverything();
      return;
  }
}

void JobController::StartReplica(Replica& replica, Time now, std::vector<job::Event>& events) {
  std::string pod = job::ReplicaName(key_.name, replica.id.type, replica.id.index);
  StatusOr<ReplicaState> started =
      backend_.Start({replica.id, &job_, replica.restarts.restarts(), replica.exit_code});
  replica.exit_message.clear();  // a new run has said nothing yet
  replica.terminating = false;
  // The run, or the attempt that could not start, belongs to the group's current generation.
  replica.restarts.RunStarted(generations_.current());
  if (started.ok()) {
    started_in_turn_ = true;
    replica.running = true;
    replica.stop_requested = false;
    replica.pid = started->pid;
    replica.phase = started->phase;
    replica.started_at = now;
    replica.finished_at.reset();
    events.push_back({"Normal", "SuccessfulCreatePod", "Created pod: " + pod, now});
  } else {
    // Reported like a container that could not start, so the restart policy still applies.
    replica.running = false;
    replica.pid = 0;
    replica.phase = job::ReplicaPhase::kFailed;
    replica.exit_code = 127;
    replica.finished_at = now;
    replica.details = job::ExitDetails{};
    replica.details.hint = "it could not be started: " + started.status().message();
    replica.last_log_lines.clear();
    events.push_back(
        {"Warning", "FailedCreatePod", "Error creating: " + started.status().message(), now});
  }
}

void JobController::StopReplica(Replica& replica) {
  if (replica.running) {
    if (!replica.stop_requested) {
      backend_.Stop(replica.id, StopMode::kGraceful);
      replica.stop_requested = true;
    }
    return;
  }
  // Not running (exited, or waiting to restart): it just goes away, like a deleted pod.
  backend_.Stop(replica.id, StopMode::kGraceful);
  KeepRemovedRow(replica, clock_());
  replicas_.erase(replica.id);
}

void JobController::StopKeepingRow(Replica& replica, Time now, std::vector<job::Event>& events) {
  const std::string pod = job::ReplicaName(key_.name, replica.id.type, replica.id.index);
  if (replica.running) {
    if (replica.stop_requested) return;
    backend_.Stop(replica.id, StopMode::kAsFailed);
    replica.stop_requested = true;
    replica.keep_row = true;
    events.push_back({"Normal", "StoppedPod",
                      "Stopped pod: " + pod +
                          " (the job has finished; cleanPodPolicy None keeps its row and log, but "
                          "locally no replica outlives its job)",
                      now});
    return;
  }
  // Waiting for a restart that will not come: it ends as its last run did.
  backend_.Stop(replica.id, StopMode::kGraceful);
  replica.restarts = job::RestartStateMachine::Resume(
      {replica.restarts.restarts(), replica.restarts.group_restarts(), std::nullopt, "",
       replica.restarts.generation()});
  replica.phase =
      replica.exit_code == 0 ? job::ReplicaPhase::kSucceeded : job::ReplicaPhase::kFailed;
  replica.keep_row = true;
}

// Once the job has finished every replica is being stopped, so none counts as active any more
// (a Failed job would otherwise keep showing the replicas that ran when it failed).
void JobController::ClearActiveCounts() {
  job::JobStatus cleared = status_;
  for (auto& [type, counts] : cleared.replica_statuses) counts.active = 0;
  Publish(cleared, {});
}

void JobController::StopEverything() {
  std::vector<ReplicaId> ids;
  for (const auto& [id, replica] : replicas_) {
    if (replica.running || replica.restarts.waiting()) ids.push_back(id);
  }
  // cleanPodPolicy None keeps every pod (Kubeflow leaves the running ones running). Locally none
  // may outlive the controller, so they are stopped all the same, but kept as that policy keeps
  // them: in the table, with their final phase and log.
  const bool keep_rows = !deleting_ && job::IsFinished(status_) &&
                         job_.run_policy.clean_pod_policy == job::CleanPodPolicy::kNone;
  std::vector<job::Event> events;
  for (const ReplicaId& id : ids) {
    if (keep_rows) {
      StopKeepingRow(replicas_.at(id), clock_(), events);
    } else {
      StopReplica(replicas_.at(id));
    }
  }
  if (!events.empty()) Publish(status_, events);
}

std::vector<job::ObservedReplica> JobController::Observed() const {
  std::vector<job::ObservedReplica> observed;
  for (const auto& [id, replica] : replicas_) {
    observed.push_back({id.type, id.index, replica.phase, replica.exit_code,
                        replica.restarts.restarts(), replica.started_at, replica.finished_at,
                        replica.restarts.group_restarts(),
                        replica.running ? "" : replica.exit_message, replica.details,
                        replica.restarts.generation()});
  }
  return observed;
}

bool JobController::AnyRunning() const {
  return std::any_of(replicas_.begin(), replicas_.end(),
                     [](const auto& entry) { return entry.second.running; });
}

void JobController::Publish(const job::JobStatus& status, const std::vector<job::Event>& events) {
  nlohmann::json before = job::JobStatusToJson(status_);
  nlohmann::json after = job::JobStatusToJson(status);
  if (before != after || !status_written_) {
    if (observer_.on_condition) {
      for (const job::JobCondition& condition : status.conditions) {
        bool changed = std::none_of(status_.conditions.begin(), status_.conditions.end(),
                                    [&](const job::JobCondition& old) {
                                      return old.type == condition.type &&
                                             old.status == condition.status &&
                                             old.reason == condition.reason;
                                    });
        if (changed) observer_.on_condition(condition);
      }
    }
    status_ = status;
    Status written = store_.WriteStatus(key_, status_);
    if (written.ok()) status_written_ = true;
    if (!written.ok() && observer_.on_event) {
      observer_.on_event({"Warning", "StatusWriteFailed", written.message(), clock_()});
    }
  }
  if (!events.empty()) {
    // The events still reach the terminal; the store keeps those it could write.
    if (Status appended = store_.AppendEvents(key_, events); !appended.ok() && observer_.on_event) {
      observer_.on_event({"Warning", "EventsWriteFailed", appended.message(), clock_()});
    }
    if (observer_.on_event) {
      for (const job::Event& event : events) observer_.on_event(event);
    }
  }
}

ReplicaRow JobController::RowOf(const Replica& replica) const {
  ReplicaRow row;
  row.name = ShortReplicaName(replica.id.type, replica.id.index);
  row.phase = job::ToString(replica.phase);
  row.restarts = replica.earlier_restarts + replica.restarts.restarts();
  row.port = ports_.count(row.name) ? ports_.at(row.name) : 0;
  row.pid = replica.running ? replica.pid : 0;
  // Asked to stop and not gone yet, as kubectl shows a pod being deleted; not active.
  if (replica.running && replica.stop_requested) row.phase = "Terminating";
  if (replica.finished_at) {
    row.exit_code = replica.exit_code;
    row.last_log_lines = replica.last_log_lines;
  }
  row.started_at = replica.started_at;
  row.finished_at = replica.finished_at;
  return row;
}

// A replica stopped while it ran ends "Stopped" at `now`, its exit unknown; one waiting for its
// restart ends as its last run did; an exited one keeps its phase and exit code.
void JobController::KeepRemovedRow(const Replica& replica, Time now) {
  ReplicaRow row = RowOf(replica);
  row.removed = true;
  row.pid = 0;
  if (replica.running) {
    row.phase = "Stopped";
    row.exit_code.reset();
    row.finished_at = now;
  } else if (replica.restarts.waiting()) {
    row.phase = job::ToString(replica.exit_code == 0 ? job::ReplicaPhase::kSucceeded
                                                     : job::ReplicaPhase::kFailed);
  }
  removed_rows_[replica.id] = row;
}

void JobController::WriteReplicaTable() {
  std::map<ReplicaId, ReplicaRow> table;
  for (const auto& [id, row] : removed_rows_) {
    if (replicas_.count(id) == 0) table[id] = row;
  }
  for (const auto& [id, replica] : replicas_) table[id] = RowOf(replica);
  std::vector<ReplicaRow> rows;
  for (const auto& [id, row] : table) rows.push_back(row);
  // Every pass writes the table again (an unchanged one is not rewritten, a failed one is); the
  // failure is reported once until a write succeeds.
  Status written = store_.WriteReplicas(key_, rows);
  if (!written.ok() && !replica_table_write_failed_ && observer_.on_event) {
    observer_.on_event({"Warning", "ReplicaTableWriteFailed", written.message(), clock_()});
  }
  replica_table_write_failed_ = !written.ok();
}

}  // namespace cohort::exec
