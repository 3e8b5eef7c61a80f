// The job controller's decisions, following the Kubeflow training operator as docs/behaviour.md
// states it (§1.4 restart policies, §3.3 managedBy, §3.4 the reconcile pass, §3.5 success, §3.6
// failure, §3.7 backoffLimit, §3.8 cleanup and TTL, §3.9 conditions, §3.10 suspend, §3.11
// activeDeadlineSeconds, §4.1 events). The operator's code: ReconcileJobs in
// pkg/controller.v1/common/job.go (the order of a pass, managedBy, suspend, backoffLimit,
// activeDeadlineSeconds, cleanPodPolicy and TTL), ReconcilePods in pkg/controller.v1/common/pod.go
// (what each restart policy does with an exit), UpdateJobStatus in
// pkg/controller.v1/tensorflow/tfjob_controller.go (the success and failure rules and their
// events) and pkg/util/status.go (conditions). What differs between kinds comes from the job's
// JobKind.
//
// One call is one pass of the operator's ReconcileJobs, in its order:
//   managed by another controller -> leave everything alone
//   already finished              -> cleanPodPolicy, then TTL
//   suspended                     -> stop everything
//   resumed                       -> reset startTime
//   otherwise                     -> read the replicas, apply backoffLimit and the deadline,
//                                    then the failure and success rules, then start and restart.
#include "job/reconciler.h"

#include <algorithm>
#include <csignal>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "cluster/peer_report.h"
#include "job/job_kind.h"

namespace cohort::job {

namespace {

constexpr const char* kTrue = "True";
constexpr const char* kFalse = "False";
constexpr const char* kNormal = "Normal";
constexpr const char* kWarning = "Warning";

// Condition and event reasons are the kind's prefix + one of these ("TFJob" + "Running"), as the
// operator's NewReason helper makes them; ExitedWithCode is the same for every kind.
constexpr const char* kResumed = "Resumed";
constexpr const char* kReasonExitedWithCode = "ExitedWithCode";

// The only runPolicy.managedBy value that means "this controller" (§3.3).
constexpr const char* kManagedByTrainingOperator = "kubeflow.org/training-operator";

// ---- Conditions ----

const JobCondition* FindCondition(const JobStatus& status, const std::string& type) {
  for (const JobCondition& condition : status.conditions) {
    if (condition.type == type) return &condition;
  }
  return nullptr;
}

bool HasTrueCondition(const JobStatus& status, const std::string& type) {
  const JobCondition* condition = FindCondition(status, type);
  return condition != nullptr && condition->status == kTrue;
}

// The operator's filterOutCondition, with two differences (both listed in reconciler.h). First,
// Running and Restarting exclude each other by turning the other one False, where the operator
// drops it. The operator's way leaves no trace of a restart in a finished job's conditions
// (Running replaces Restarting as soon as the replica runs again); Cohort keeps "Restarting False"
// so that `describe` still shows it. Second, a finished job is neither running nor restarting, so
// Succeeded and Failed turn both off (the operator flips only Running). The last condition, the
// job's state, is the same either way.
void RemoveConditionForReplacement(JobStatus& status, const std::string& type) {
  bool finishing = type == kConditionSucceeded || type == kConditionFailed;
  std::vector<JobCondition> kept;
  for (JobCondition condition : status.conditions) {
    if (condition.type == type) continue;
    bool excluded = (type == kConditionRestarting && condition.type == kConditionRunning) ||
                    (type == kConditionRunning && condition.type == kConditionRestarting) ||
                    (finishing && (condition.type == kConditionRunning ||
                                   condition.type == kConditionRestarting));
    // Only the status flips: the operator leaves both timestamps as they were.
    if (excluded) condition.status = kFalse;
    kept.push_back(std::move(condition));
  }
  status.conditions = std::move(kept);
}

// ---- Replicas ----

// Death by signal N is reported as 128 + N; the operator retries those under ExitCode and treats
// 1-127 as a bug in the program that a retry will not fix (§1.4).
bool IsRetryableExitCode(int exit_code) { return exit_code >= 128; }

// What a replica's restart policy makes of one exit (§1.4).
enum class ExitOutcome {
  kSucceeded,         // stays exited and counts as succeeded
  kRestart,           // started again
  kFailed,            // stays exited and counts as failed
  kFailedByExitCode,  // as kFailed, and under ExitCode the job fails at once with its own message
};

ExitOutcome DecideExit(RestartPolicy policy, const ObservedReplica& replica) {
  const bool succeeded = replica.phase == ReplicaPhase::kSucceeded;
  // Cohort's log policies (log_policy.h) speak for a failure before the restart policy does:
  // permanent is never restarted; retryable is restarted where ExitCode would call the code
  // permanent, and Never still never restarts.
  if (!succeeded && replica.details.log_policy) {
    if (replica.details.log_policy->action == LogPolicyAction::kPermanent) {
      return ExitOutcome::kFailed;
    }
    if (policy == RestartPolicy::kExitCode) return ExitOutcome::kRestart;
  }
  switch (policy) {
    case RestartPolicy::kAlways:
      return ExitOutcome::kRestart;  // even exit 0: the kubelet restarts the container in place
    case RestartPolicy::kOnFailure:
      return succeeded ? ExitOutcome::kSucceeded : ExitOutcome::kRestart;
    case RestartPolicy::kNever:
      return succeeded ? ExitOutcome::kSucceeded : ExitOutcome::kFailed;
    case RestartPolicy::kExitCode:
      if (succeeded) return ExitOutcome::kSucceeded;
      return IsRetryableExitCode(replica.exit_code) ? ExitOutcome::kRestart
                                                    : ExitOutcome::kFailedByExitCode;
  }
  return ExitOutcome::kFailed;
}

bool HasExited(const ObservedReplica& replica) {
  return replica.phase == ReplicaPhase::kSucceeded || replica.phase == ReplicaPhase::kFailed;
}

// The kind's types in the operator's status order (TFJob: Chief, Evaluator, Master, PS, Worker),
// then any other type of the spec in name order, so that every pass decides in the same order.
std::vector<std::string> ReplicaTypesInStatusOrder(const Job& job) {
  std::vector<std::string> types;
  for (const std::string& type : job.job_kind->facts().replica_types) {
    if (job.replica_specs.count(type) != 0) types.push_back(type);
  }
  for (const auto& [type, spec] : job.replica_specs) {
    if (std::find(types.begin(), types.end(), type) == types.end()) types.push_back(type);
  }
  return types;
}

// The kind's first chief type that the spec has (TFJob: Chief, else Master): it alone decides
// success (§3.5).
std::optional<std::string> ChiefType(const Job& job) {
  for (const std::string& chief : job.job_kind->facts().chief_types) {
    if (job.replica_specs.count(chief) != 0) return chief;
  }
  return std::nullopt;
}

bool IsManagedExternally(const Job& job) {
  // Even "" counts as another controller, as in the operator's own unit test (§3.3).
  return job.run_policy.managed_by.has_value() &&
         *job.run_policy.managed_by != kManagedByTrainingOperator;
}

// One exited replica's peer report about another replica of the job.
struct PeerAccusation {
  const ObservedReplica* reporter = nullptr;
  std::string accused_type;  // the replica named, in the spec's terms ("Worker", 1)
  int accused_index = 0;
  cluster::PeerReport report;
};

// What the observed replicas mean for one pass, before any job-level decision.
struct ReplicaPlan {
  // The counts as the status shows them. A replica about to be restarted is in none of them: it
  // is neither running nor done, as a Pending pod.
  std::map<std::string, ReplicaStatus> counts;
  std::vector<std::pair<std::string, int>> missing;        // to be started
  std::vector<const ObservedReplica*> restarts;            // exited, to be started again
  std::vector<const ObservedReplica*> exit_code_failures;  // ExitCode exits 1-127
  std::vector<const ObservedReplica*> failures;            // exited, failed, not restarted
  std::vector<const ObservedReplica*> out_of_spec;         // type or index not in the spec
  std::vector<const ObservedReplica*> new_exits;           // first seen in this pass
  const ObservedReplica* worker_zero = nullptr;            // replica 0 of the kind's worker type
  // Exited replicas that gave up because another replica failed; their restarts are group
  // restarts, which backoffLimit does not count.
  std::vector<PeerAccusation> accusations;
  // Restarts already made by replicas whose policy may restart them (§3.7).
  int restarts_made = 0;
  // The replica with the most of them (the first such in status order), for messages.
  const ObservedReplica* most_restarted = nullptr;
  // A replica restarted earlier is still waiting for its back-off: the job is Restarting, not
  // Running, until it runs again.
  bool restart_pending = false;
};

// Earliest exit first; by index for exits seen at the same time.
void SortByExit(std::vector<const ObservedReplica*>& replicas) {
  std::sort(replicas.begin(), replicas.end(),
            [](const ObservedReplica* left, const ObservedReplica* right) {
              return std::tie(left->finished_at, left->index) <
                     std::tie(right->finished_at, right->index);
            });
}

// Among the replicas of one type that stay exited with the same outcome, the previous pass
// counted `already_counted`; the ones beyond that, latest exit last, are the new exits. This keeps
// ExitedWithCode to one event per exit without any bookkeeping in the executor.
void AddNewExits(std::vector<const ObservedReplica*> exited, int already_counted,
                 std::vector<const ObservedReplica*>& new_exits) {
  SortByExit(exited);
  const size_t first_new = static_cast<size_t>(std::max(already_counted, 0));
  for (size_t i = first_new; i < exited.size(); ++i) new_exits.push_back(exited[i]);
}

// "SIGKILL" for 9: the names a shell prints for the signals that end processes.
std::string SignalName(int signal) {
  static const std::map<int, std::string> kNames = {
      {SIGHUP, "SIGHUP"},   {SIGINT, "SIGINT"},   {SIGQUIT, "SIGQUIT"}, {SIGILL, "SIGILL"},
      {SIGTRAP, "SIGTRAP"}, {SIGABRT, "SIGABRT"}, {SIGBUS, "SIGBUS"},   {SIGFPE, "SIGFPE"},
      {SIGKILL, "SIGKILL"}, {SIGUSR1, "SIGUSR1"}, {SIGSEGV, "SIGSEGV"}, {SIGUSR2, "SIGUSR2"},
      {SIGPIPE, "SIGPIPE"}, {SIGALRM, "SIGALRM"}, {SIGTERM, "SIGTERM"}, {SIGXCPU, "SIGXCPU"}};
  auto found = kNames.find(signal);
  return found == kNames.end() ? "unknown signal" : found->second;
}

// Cohort deviation: the operator's backoff-limit message names no replica. Cohort adds the first
// of the exits that needed a restart beyond the limit, e.g. "worker-1 exited with code 3 at
// 2026-11-24T08:50:00Z after 2 restarts" or "worker-0 exited with code 137 (128 + SIGKILL) at ...".
// A code above 128 is named by the signal it stands for, not said to be one: a process killed by
// SIGKILL and one that exits 137 itself (as cohort-train exits 138, 128 + SIGUSR1, to be
// restarted) look alike to Kubernetes. An executor that saw the signal itself says so instead
// ("worker-0 was killed by SIGSEGV (exit code 139)"), and "was killed by the kernel's OOM killer"
// only when the kernel recorded it (exec/kernel_log.h), never from the code alone.
//
// Then the line of its log that says why: the line a log policy matched, with the policy, else the
// last line that reads as an error when a hint follows it ("...; its last error line: \"...\""),
// else the last line it wrote ("...; its last log line: \"...\""), the first line of its
// termination message (a peer it reported dead or hung) and the executor's hint if it has one.
std::string DescribeFirstExit(std::vector<const ObservedReplica*> exits) {
  SortByExit(exits);
  const ObservedReplica& replica = *exits.front();
  const ExitDetails& details = replica.details;
  std::string text = LowerCase(replica.type) + "-" + std::to_string(replica.index);
  if (details.oom_killed) {
    text += " was killed by the kernel's OOM killer (" + SignalName(details.signal) +
            ", exit code " + std::to_string(replica.exit_code) + ")";
  } else if (details.signal != 0) {
    text += " was killed by " + SignalName(details.signal) + " (exit code " +
            std::to_string(replica.exit_code) + ")";
  } else {
    text += " exited with code " + std::to_string(replica.exit_code);
    if (replica.exit_code > 128) text += " (128 + " + SignalName(replica.exit_code - 128) + ")";
  }
  if (replica.finished_at) text += " at " + FormatTime(*replica.finished_at);
  text += " after " + std::to_string(replica.restart_count) +
          (replica.restart_count == 1 ? " restart" : " restarts");
  if (details.log_policy) {
    text += "; its log: \"" + details.log_policy->line + "\" (log policy " +
            details.log_policy->policy + ": " + ToString(details.log_policy->action) + ")";
  } else if (!details.error_log_line.empty()) {
    text += "; its last error line: \"" + details.error_log_line + "\"";
  } else if (!details.last_log_line.empty()) {
    text += "; its last log line: \"" + details.last_log_line + "\"";
  }
  // What it left in its termination-message file: a peer it declared dead or hung, say.
  if (!replica.termination_message.empty()) {
    const std::string said = replica.termination_message.substr(
        0, std::min(replica.termination_message.find('\n'), kMaxMatchedLineBytes));
    text += "; its termination message: \"" + said + "\"";
  }
  if (!details.hint.empty()) text += "; " + details.hint;
  return text;
}

// "<operator's message without its final period>: <the first exit>."
std::string WithFirstExit(const std::string& message,
                          const std::vector<const ObservedReplica*>& exits) {
  if (exits.empty()) return message;
  std::string base = message;
  if (!base.empty() && base.back() == '.') base.pop_back();
  return base + ": " + DescribeFirstExit(exits) + ".";
}

// The peer report that a failed replica left, when it names another replica of the job. The kind
// says which replica a task name is (JobKind::ReplicaOfTask): a TFJob's task types are its
// replica types in lower case ("worker:1" is Worker 1), as TF_CONFIG names them (tfjob.h); a
// PyTorchJob's "rank:2" is the replica whose processes have that rank (pytorchjob.h).
std::optional<PeerAccusation> AccusationOf(const Job& job, const ObservedReplica& replica) {
  if (replica.phase != ReplicaPhase::kFailed || replica.termination_message.empty()) {
    return std::nullopt;
  }
  std::optional<cluster::PeerReport> report = cluster::ParsePeerReport(replica.termination_message);
  if (!report) return std::nullopt;
  std::optional<std::pair<std::string, int>> accused =
      job.job_kind->ReplicaOfTask(job, report->peer.type, report->peer.index);
  if (!accused) return std::nullopt;
  const auto& [type, index] = *accused;
  if (type == replica.type && index == replica.index) return std::nullopt;
  return PeerAccusation{&replica, type, index, *report};
}

bool IsGroupRestart(const ReplicaPlan& plan, const ObservedReplica* replica) {
  return std::any_of(
      plan.accusations.begin(), plan.accusations.end(),
      [&](const PeerAccusation& accusation) { return accusation.reporter == replica; });
}

// The restarts of this pass that count against backoffLimit: all but the group restarts.
std::vector<const ObservedReplica*> CountedRestarts(const ReplicaPlan& plan) {
  std::vector<const ObservedReplica*> counted;
  for (const ObservedReplica* replica : plan.restarts) {
    if (!IsGroupRestart(plan, replica)) counted.push_back(replica);
  }
  return counted;
}

// "worker-1 hung (no heartbeat for 30 s), as worker-0 reported"
std::string DescribeAccusation(const PeerAccusation& accusation) {
  std::string text = LowerCase(accusation.accused_type) + "-" +
                     std::to_string(accusation.accused_index) + " " + accusation.report.what;
  if (!accusation.report.detail.empty()) text += " (" + accusation.report.detail + ")";
  return text + ", as " + LowerCase(accusation.reporter->type) + "-" +
         std::to_string(accusation.reporter->index) + " reported";
}

// A replica restarted in place, by the kubelet under a pod restartPolicy of OnFailure or Always:
// "worker-0 was restarted in place 3 times".
std::string DescribeRestartsInPlace(const ObservedReplica& replica) {
  return LowerCase(replica.type) + "-" + std::to_string(replica.index) +
         " was restarted in place " + std::to_string(replica.restart_count) +
         (replica.restart_count == 1 ? " time" : " times");
}

// The observed replica for each (type, index); the first one wins if the executor reports two.
std::map<std::pair<std::string, int>, const ObservedReplica*> IndexObserved(
    const std::vector<ObservedReplica>& observed) {
  std::map<std::pair<std::string, int>, const ObservedReplica*> by_key;
  for (const ObservedReplica& replica : observed) {
    by_key.emplace(std::make_pair(replica.type, replica.index), &replica);
  }
  return by_key;
}

ReplicaPlan PlanReplicas(const Job& job, const JobStatus& previous,
                         const std::vector<ObservedReplica>& observed) {
  ReplicaPlan plan;
  const auto by_key = IndexObserved(observed);
  for (const std::string& type : ReplicaTypesInStatusOrder(job)) {
    const ReplicaSpec& spec = job.replica_specs.at(type);
    ReplicaStatus& counts = plan.counts[type];
    // A restarted replica leaves the exited phase, so its exit is necessarily new.
    std::vector<const ObservedReplica*> restarted;
    std::vector<const ObservedReplica*> succeeded;
    std::vector<const ObservedReplica*> failed;
    for (int index = 0; index < spec.replicas; ++index) {
      auto found = by_key.find({type, index});
      if (found == by_key.end()) {
        plan.missing.emplace_back(type, index);
        continue;
      }
      const ObservedReplica& replica = *found->second;
      if (type == job.job_kind->facts().worker_type && index == 0) plan.worker_zero = &replica;
      if (spec.restart_policy != RestartPolicy::kNever) {
        plan.restarts_made += replica.restart_count - replica.group_restarts;
        if (!plan.most_restarted || replica.restart_count > plan.most_restarted->restart_count) {
          plan.most_restarted = &replica;
        }
      }
      if (replica.phase == ReplicaPhase::kRunning) ++counts.active;
      if (replica.phase == ReplicaPhase::kPending && replica.restart_count > 0) {
        plan.restart_pending = true;
      }
      if (!HasExited(replica)) continue;
      if (std::optional<PeerAccusation> accusation = AccusationOf(job, replica)) {
        plan.accusations.push_back(*accusation);
      }
      switch (DecideExit(spec.restart_policy, replica)) {
        case ExitOutcome::kRestart:
          plan.restarts.push_back(&replica);
          restarted.push_back(&replica);
          break;
        case ExitOutcome::kSucceeded:
          ++counts.succeeded;
          succeeded.push_back(&replica);
          break;
        case ExitOutcome::kFailedByExitCode:
          plan.exit_code_failures.push_back(&replica);
          [[fallthrough]];
        case ExitOutcome::kFailed:
          ++counts.failed;
          failed.push_back(&replica);
          plan.failures.push_back(&replica);
          break;
      }
    }
    auto before = previous.replica_statuses.find(type);
    const ReplicaStatus counted_before =
        before == previous.replica_statuses.end() ? ReplicaStatus{} : before->second;
    std::vector<const ObservedReplica*> new_exits = restarted;
    AddNewExits(succeeded, counted_before.succeeded, new_exits);
    AddNewExits(failed, counted_before.failed, new_exits);
    SortByExit(new_exits);
    plan.new_exits.insert(plan.new_exits.end(), new_exits.begin(), new_exits.end());
  }
  for (const ObservedReplica& replica : observed) {
    auto spec = job.replica_specs.find(replica.type);
    if (spec == job.replica_specs.end() || replica.index < 0 ||
        replica.index >= spec->second.replicas) {
      plan.out_of_spec.push_back(&replica);
    }
  }
  return plan;
}

// ---- One pass ----

class Reconciliation {
 public:
  Reconciliation(const Job& job, const JobStatus& previous,
                 const std::vector<ObservedReplica>& observed, Time now)
      : job_(job),
        kind_(*job.job_kind),
        previous_(previous),
        observed_(observed),
        // Whole seconds, as the status JSON stores times, so that a status read back from disk
        // equals the one this pass returned.
        now_(std::chrono::floor<std::chrono::seconds>(now)),
        precise_now_(now) {
    result_.status = previous;
  }

  ReconcileResult Run();

 private:
  JobStatus& status() { return result_.status; }
  const JobStatus& status() const { return result_.status; }
  const std::string& name() const { return job_.metadata.name; }
  // "TFJob mnist", as the operator's messages name the job.
  std::string KindAndName() const { return kind_.name() + " " + name(); }
  std::string Reason(const std::string& what) const { return kind_.Reason(what); }

  void Record(const char* type, const std::string& reason, const std::string& message);
  void Stop(const ObservedReplica& replica, const std::string& reason);
  void StopAll(const std::string& reason);

  void ReconcileFinished();
  void ReconcileSuspended();
  void AddCreatedCondition();
  void ResumeIfSuspended();
  void ReconcileActive();

  void RecordExits(const ReplicaPlan& plan);
  bool ExceedsBackoffLimit(const ReplicaPlan& plan) const;
  bool PastActiveDeadline() const;
  void FailOnExitCodeFailures(const ReplicaPlan& plan);
  void FailOnReplicaFailures(const ReplicaPlan& plan);
  void DecideSuccessOrRunning(const ReplicaPlan& plan);
  bool IsWorkerZeroCompleted(const ReplicaPlan& plan) const;
  void SetRunning();
  void Succeed();
  void Fail(const char* event_type, const std::string& message);
  void CountUnrestartedExits(ReplicaPlan& plan);
  void StartAndRestart(const ReplicaPlan& plan);
  void TerminateAccused(const ReplicaPlan& plan);
  void FailForLimit(const std::string& message, const std::string& stop_reason);
  void CleanUp(const std::string& stop_everything_reason = "");
  void RequeueForDeadline();

  const Job& job_;
  const JobKind& kind_;
  const JobStatus& previous_;
  const std::vector<ObservedReplica>& observed_;
  const Time now_;          // for everything written into the status and the events
  const Time precise_now_;  // for comparisons with deadlines
  ReconcileResult result_;
};

ReconcileResult Reconciliation::Run() {
  if (IsManagedExternally(job_)) {
    // The operator logs "Skipping TFJob managed by a custom controller" and writes nothing.
    result_.finished = IsFinished(previous_);
    return std::move(result_);
  }
  if (IsFinished(status())) {
    ReconcileFinished();
  } else {
    AddCreatedCondition();
    if (job_.run_policy.suspend) {
      ReconcileSuspended();
    } else {
      ResumeIfSuspended();
      ReconcileActive();
    }
  }
  result_.finished = IsFinished(status());
  return std::move(result_);
}

void Reconciliation::Record(const char* type, const std::string& reason,
                            const std::string& message) {
  result_.events.push_back(Event{type, reason, message, now_});
}

void Reconciliation::Stop(const ObservedReplica& replica, const std::string& reason) {
  result_.actions.push_back(Action{Action::Kind::kStop, replica.type, replica.index, reason});
}

void Reconciliation::StopAll(const std::string& reason) {
  for (const ObservedReplica& replica : observed_) Stop(replica, reason);
}

// §3.4 step 3: a finished job only cleans up; its counters stay as they were when it finished.
void Reconciliation::ReconcileFinished() { CleanUp(); }

// §3.10. The operator re-emits TFJobSuspended on every pass while suspended; Cohort emits it once,
// when the Suspended condition is added, so that events.jsonl is not flooded.
void Reconciliation::ReconcileSuspended() {
  StopAll("suspended");
  for (auto& [type, counts] : status().replica_statuses) counts.active = 0;
  const std::string message = KindAndName() + " is suspended.";
  const std::string reason = Reason(kConditionSuspended);
  if (HasTrueCondition(status(), kConditionRunning)) {
    SetCondition(status(), kConditionRunning, kFalse, reason, message, now_);
  }
  if (!IsSuspended(status())) {
    SetCondition(status(), kConditionSuspended, kTrue, reason, message, now_);
    Record(kNormal, reason, message);
  }
}

// The operator adds Created when it sees the TFJob's create event, before any pass; no event.
void Reconciliation::AddCreatedCondition() {
  if (!status().conditions.empty()) return;
  SetCondition(status(), kConditionCreated, kTrue, Reason(kConditionCreated),
               KindAndName() + " is created.", now_);
}

// §3.10: resuming restarts the clock of activeDeadlineSeconds.
void Reconciliation::ResumeIfSuspended() {
  if (IsSuspended(status())) {
    const std::string message = KindAndName() + " is resumed.";
    SetCondition(status(), kConditionSuspended, kFalse, Reason(kResumed), message, now_);
    status().start_time = now_;
    Record(kNormal, Reason(kResumed), message);
  }
  // startTime is when the controller first acknowledged the job, not when a replica started.
  if (!status().start_time) status().start_time = now_;
}

void Reconciliation::ReconcileActive() {
  ReplicaPlan plan = PlanReplicas(job_, previous_, observed_);
  RecordExits(plan);
  status().replica_statuses = plan.counts;

  // §3.4 step 6: the two limits stop every replica, whatever cleanPodPolicy says, since the job is
  // not yet marked finished when they are deleted.
  if (ExceedsBackoffLimit(plan)) {
    std::string first_exit;
    if (plan.restarts.empty()) {
      first_exit = DescribeRestartsInPlace(*plan.most_restarted);
    } else {
      // The first exit that counts; only a limit lowered since the last restart is passed by
      // group restarts alone.
      const std::vector<const ObservedReplica*> counted = CountedRestarts(plan);
      first_exit = DescribeFirstExit(counted.empty() ? plan.restarts : counted);
    }
    CountUnrestartedExits(plan);
    FailForLimit(
        "Job " + name() +
            " has failed because it has reached the specified backoff limit: " + first_exit,
        "backoff limit reached");
    return;
  }
  if (PastActiveDeadline()) {
    CountUnrestartedExits(plan);
    FailForLimit(
        "Job " + name() + " has failed because it was active longer than specified deadline",
        "active deadline exceeded");
    return;
  }

  FailOnExitCodeFailures(plan);
  FailOnReplicaFailures(plan);
  if (!IsFailed(status())) DecideSuccessOrRunning(plan);
  if (IsFinished(status())) {
    CountUnrestartedExits(plan);
    CleanUp();
    return;
  }
  StartAndRestart(plan);
  RequeueForDeadline();
}

// The operator records ExitedWithCode on every pass that sees a terminated container, so
// `kubectl describe` shows "x3 over ..."; Cohort records each exit once. Cohort adds what a
// replica that succeeded left in its termination message: why it ended as it did, such as
// "training already complete at global step N" for one that found its training done and trained
// nothing, so that `describe` says so beside the Succeeded state.
void Reconciliation::RecordExits(const ReplicaPlan& plan) {
  for (const ObservedReplica* replica : plan.new_exits) {
    std::string message = "Pod: " + job_.metadata.namespace_name + "." +
                          ReplicaName(name(), replica->type, replica->index) +
                          " exited with code " + std::to_string(replica->exit_code);
    if (replica->exit_code == 0 && !replica->termination_message.empty()) {
      const std::string& said = replica->termination_message;
      message += ": " + said.substr(0, std::min(said.find('\n'), kMaxMatchedLineBytes));
    }
    Record(kNormal, kReasonExitedWithCode, message);
  }
}

// Cohort deviation (kubeflow/trainer #2045): the operator only counts the kubelet's in-place
// restarts of Running pods, so ExitCode re-creations are never limited, and it fails the job as
// soon as the count reaches the limit, even while the last restart is running fine. Cohort counts
// every restart actually made, by any policy but Never, and checks when one more is needed:
// backoffLimit N allows N restarts and the failure that would need restart N + 1 fails the job,
// like a batch/v1 Job. Several replicas failing at once need one restart each, except the group
// restarts: a replica that exited because a peer failed (its peer report names another replica)
// is restarted with that peer, and only the peer's own failure counts, so that one crash of a
// worker costs one restart of the limit however many peers went down with it. On Kubernetes the
// kubelet restarts OnFailure and Always containers in place, without asking: once the restarts
// observed exceed the limit, the job fails as well, even with no restart needed in this pass.
bool Reconciliation::ExceedsBackoffLimit(const ReplicaPlan& plan) const {
  const std::optional<int32_t>& limit = job_.run_policy.backoff_limit;
  if (!limit) return false;
  const int64_t restarts_needed = static_cast<int64_t>(CountedRestarts(plan).size());
  return plan.restarts_made + restarts_needed > *limit;
}

// §3.11: now - startTime >= activeDeadlineSeconds.
bool Reconciliation::PastActiveDeadline() const {
  const std::optional<int64_t>& deadline = job_.run_policy.active_deadline_seconds;
  if (!deadline || !status().start_time) return false;
  return precise_now_ - *status().start_time >= std::chrono::seconds(*deadline);
}

// §1.4: under ExitCode an exit code of 1-127 is permanent and fails the job at once, with a
// Warning event and its own message. Cohort also spares dynamic workers here, as the generic rule
// does, since their whole point is that a worker may fail without failing the job.
void Reconciliation::FailOnExitCodeFailures(const ReplicaPlan& plan) {
  for (const ObservedReplica* replica : plan.exit_code_failures) {
    if (kind_.ToleratesFailure(job_, replica->type)) continue;
    Fail(kWarning, WithFirstExit("job \"" + name() + "\" is failing because \"" + replica->type +
                                     "\" replica(s) failed.",
                                 {replica}));
  }
}

// §3.6: any replica that failed and will not be restarted fails the job, Evaluators and unknown
// types included, except those the kind tolerates (TFJob: Workers with enableDynamicWorker).
void Reconciliation::FailOnReplicaFailures(const ReplicaPlan& plan) {
  for (const std::string& type : ReplicaTypesInStatusOrder(job_)) {
    const int failed = plan.counts.at(type).failed;
    if (failed == 0) continue;
    if (kind_.ToleratesFailure(job_, type)) continue;
    std::vector<const ObservedReplica*> of_type;
    for (const ObservedReplica* replica : plan.failures) {
      if (replica->type == type) of_type.push_back(replica);
    }
    Fail(kNormal, WithFirstExit(kind_.ReplicasFailedMessage(job_, failed, type), of_type));
  }
}

// §3.5. The chief (TFJob: Chief or Master) decides when there is one, otherwise the Workers do,
// by the kind's rule: all of them, worker 0 (TFJob's default) or any one (PyTorchJob with
// elasticPolicy). A spec with neither never succeeds by itself, as in the operator (whose "no
// Worker spec means worker 0 completed" rule is only reached when a Worker spec exists); PS,
// Evaluators and unknown types never decide.
//
// Cohort deviation: while a restart is pending (decided in this pass, or a restarted replica still
// in its back-off), the job stays Restarting instead of going back to Running at once, so the
// Restarting condition is visible for as long as the restart takes.
void Reconciliation::DecideSuccessOrRunning(const ReplicaPlan& plan) {
  const bool restarting = plan.restart_pending || !plan.restarts.empty();
  if (std::optional<std::string> chief = ChiefType(job_)) {
    const ReplicaStatus& counts = plan.counts.at(*chief);
    if (counts.active > 0 && !restarting) SetRunning();
    if (job_.replica_specs.at(*chief).replicas - counts.succeeded == 0) Succeed();
    return;
  }
  const std::string& worker_type = kind_.facts().worker_type;
  auto worker_spec = job_.replica_specs.find(worker_type);
  if (worker_spec == job_.replica_specs.end()) return;
  const ReplicaStatus& counts = plan.counts.at(worker_type);
  const bool all_succeeded = worker_spec->second.replicas - counts.succeeded == 0;
  bool workers_succeeded = all_succeeded;
  switch (kind_.WorkerSuccessRule(job_)) {
    case JobKind::WorkerSuccess::kAllWorkers:
      break;
    case JobKind::WorkerSuccess::kFirstWorker:
      workers_succeeded |= IsWorkerZeroCompleted(plan);
      break;
    case JobKind::WorkerSuccess::kAnyWorker:
      workers_succeeded |= counts.succeeded > 0;
      break;
  }
  if (workers_succeeded) {
    Succeed();
  } else if (counts.active > 0 && !restarting) {
    SetRunning();
  }
}

// Worker 0 exited 0 and stays exited (under Always it is restarted instead, so it never completes).
bool Reconciliation::IsWorkerZeroCompleted(const ReplicaPlan& plan) const {
  const ObservedReplica* worker = plan.worker_zero;
  if (worker == nullptr || worker->phase != ReplicaPhase::kSucceeded || worker->exit_code != 0) {
    return false;
  }
  return std::find(plan.restarts.begin(), plan.restarts.end(), worker) == plan.restarts.end();
}

void Reconciliation::SetRunning() {
  SetCondition(status(), kConditionRunning, kTrue, Reason(kConditionRunning),
               kind_.RunningMessage(job_), now_);
}

void Reconciliation::Succeed() {
  if (IsSucceeded(status()) || IsFailed(status())) return;
  const std::string message = kind_.SucceededMessage(job_);
  Record(kNormal, Reason(kConditionSucceeded), message);
  if (!status().completion_time) status().completion_time = now_;
  SetCondition(status(), kConditionSucceeded, kTrue, Reason(kConditionSucceeded), message, now_);
}

// Failed is terminal (§3.9): the first reason found in a pass is the one the job keeps, and only
// it gets an event.
void Reconciliation::Fail(const char* event_type, const std::string& message) {
  if (IsFailed(status())) return;
  Record(event_type, Reason(kConditionFailed), message);
  if (!status().completion_time) status().completion_time = now_;
  SetCondition(status(), kConditionFailed, kTrue, Reason(kConditionFailed), message, now_);
}

// A job that finishes in this pass restarts nothing, so the exits it was going to restart stay
// and are counted like any other exit.
void Reconciliation::CountUnrestartedExits(ReplicaPlan& plan) {
  for (const ObservedReplica* replica : plan.restarts) {
    ReplicaStatus& counts = status().replica_statuses[replica->type];
    if (replica->phase == ReplicaPhase::kSucceeded) {
      ++counts.succeeded;
    } else {
      ++counts.failed;
    }
  }
  plan.restarts.clear();
}

// Starts what is missing and restarts what the policies restart. Cohort deviation: for Always and
// OnFailure the operator lets the kubelet restart in place, which adds no Restarting condition;
// Cohort restarts every replica itself and shows each restart the same way, with the condition
// and a Warning event.
void Reconciliation::StartAndRestart(const ReplicaPlan& plan) {
  for (const auto& [type, index] : plan.missing) {
    result_.actions.push_back(Action{Action::Kind::kStart, type, index, "missing"});
  }
  TerminateAccused(plan);
  for (const ObservedReplica* replica : plan.restarts) {
    const bool group_restart = IsGroupRestart(plan, replica);
    const std::string reason = "restartPolicy " +
                               ToString(job_.replica_specs.at(replica->type).restart_policy) +
                               ", exit code " + std::to_string(replica->exit_code) +
                               (group_restart ? ", group restart" : "");
    result_.actions.push_back(
        Action{Action::Kind::kRestart, replica->type, replica->index, reason, group_restart});
    std::string message =
        "job " + name() + " is restarting because " + replica->type + " replica(s) failed.";
    for (const PeerAccusation& accusation : plan.accusations) {
      if (accusation.reporter != replica) continue;
      message = "job " + name() + " is restarting because " + DescribeAccusation(accusation) + ".";
    }
    Record(kWarning, Reason(kConditionRestarting), message);
    SetCondition(status(), kConditionRestarting, kTrue, Reason(kConditionRestarting), message,
                 now_);
  }
  for (const ObservedReplica* replica : plan.out_of_spec) Stop(*replica, "not in the spec");
}

// Cohort deviation: the replica a peer report names is stopped when it still runs a run that
// began before the report was made (a later run is already a new one), so that a hung replica is
// restarted per its policy as a failed liveness probe would have it, instead of leaving its peers
// to wait for it until their startup timeout. One Warning event "Unhealthy" per replica, as the
// kubelet records for a failed probe; the Restarting condition names the replica and why.
//
// A report is about a run of the reporter's generation or an earlier one (GroupGenerations,
// restart_state_machine.h). When the accused has already been restarted into a later generation
// (it failed by itself and its restart came before a slow survivor's exit), the report is stale:
// the new run is left alone, and a Normal event StalePeerReport says so, once per exit.
void Reconciliation::TerminateAccused(const ReplicaPlan& plan) {
  const auto by_key = IndexObserved(observed_);
  std::vector<std::pair<std::string, int>> terminated;
  for (const PeerAccusation& accusation : plan.accusations) {
    const std::pair<std::string, int> key{accusation.accused_type, accusation.accused_index};
    auto found = by_key.find(key);
    if (found == by_key.end()) continue;
    const ObservedReplica& accused = *found->second;
    if (!GroupGenerations::ReportMayConcern(accusation.reporter->generation, accused.generation)) {
      const bool new_exit = std::find(plan.new_exits.begin(), plan.new_exits.end(),
                                      accusation.reporter) != plan.new_exits.end();
      if (new_exit) {
        Record(kNormal, "StalePeerReport",
               DescribeAccusation(accusation) + " in generation " +
                   std::to_string(accusation.reporter->generation) + "; " +
                   LowerCase(accused.type) + "-" + std::to_string(accused.index) +
                   " was restarted since, and its run of generation " +
                   std::to_string(accused.generation) + " is left alone");
      }
      continue;
    }
    if (accused.phase != ReplicaPhase::kRunning) continue;
    if (accused.started_at && accusation.reporter->finished_at &&
        *accused.started_at > *accusation.reporter->finished_at) {
      continue;
    }
    if (std::find(terminated.begin(), terminated.end(), key) != terminated.end()) continue;
    terminated.push_back(key);
    const std::string why = DescribeAccusation(accusation);
    result_.actions.push_back(
        Action{Action::Kind::kTerminate, accused.type, accused.index, "peer report: " + why});
    Record(kWarning, "Unhealthy",
           "Pod: " + job_.metadata.namespace_name + "." +
               ReplicaName(name(), accused.type, accused.index) + ": " + why +
               "; stopping it to restart it per restartPolicy " +
               ToString(job_.replica_specs.at(accused.type).restart_policy));
    const std::string message = "job " + name() + " is restarting because " + why + ".";
    SetCondition(status(), kConditionRestarting, kTrue, Reason(kConditionRestarting), message,
                 now_);
  }
}

void Reconciliation::FailForLimit(const std::string& message, const std::string& stop_reason) {
  Fail(kNormal, message);
  // Every replica is being stopped, so none stays active in the final status.
  for (auto& [type, counts] : status().replica_statuses) counts.active = 0;
  CleanUp(stop_reason);
}

// §3.8 for a finished job: cleanPodPolicy, then the TTL. A non-empty `stop_everything_reason`
// stops every replica instead, whatever cleanPodPolicy says (§3.4 step 6).
void Reconciliation::CleanUp(const std::string& stop_everything_reason) {
  if (IsSucceeded(status())) {
    // §3.4 step 3: replicas still active when the job succeeded count as succeeded.
    for (auto& [type, counts] : status().replica_statuses) {
      counts.succeeded += counts.active;
      counts.active = 0;
    }
  }
  const std::optional<int32_t>& ttl = job_.run_policy.ttl_seconds_after_finished;
  if (ttl && status().completion_time) {
    const Time expiry = *status().completion_time + std::chrono::seconds(*ttl);
    if (precise_now_ >= expiry) {
      // Deleting the job stops everything; the executor reports SuccessfulDeleteJob or records
      // FailedDeleteJob, since only it knows whether the deletion worked.
      result_.actions = {Action{Action::Kind::kDeleteJob, "", 0, "ttlSecondsAfterFinished"}};
      return;
    }
    result_.requeue_at = expiry;
  }
  if (!stop_everything_reason.empty()) {
    StopAll(stop_everything_reason);
    return;
  }
  const CleanPodPolicy policy = job_.run_policy.clean_pod_policy;
  if (policy == CleanPodPolicy::kNone) return;
  for (const ObservedReplica& replica : observed_) {
    // A Pending replica would run later, so Running cleans it up too.
    const bool live =
        replica.phase == ReplicaPhase::kRunning || replica.phase == ReplicaPhase::kPending;
    if (policy == CleanPodPolicy::kAll || live) {
      Stop(replica, "cleanPodPolicy " + ToString(policy));
    }
  }
}

// The operator arms a timer for the deadline that its work queue never fires (§3.11); Cohort asks
// to be called back when the deadline passes.
void Reconciliation::RequeueForDeadline() {
  const std::optional<int64_t>& deadline = job_.run_policy.active_deadline_seconds;
  if (!deadline || !status().start_time) return;
  result_.requeue_at = *status().start_time + std::chrono::seconds(*deadline);
}

}  // namespace

std::string ToString(ReplicaPhase phase) {
  switch (phase) {
    case ReplicaPhase::kPending:
      return "Pending";
    case ReplicaPhase::kRunning:
      return "Running";
    case ReplicaPhase::kSucceeded:
      return "Succeeded";
    case ReplicaPhase::kFailed:
      return "Failed";
  }
  return "Pending";
}

ReconcileResult Reconcile(const Job& job, const JobStatus& previous,
                          const std::vector<ObservedReplica>& observed, Time now) {
  return Reconciliation(job, previous, observed, now).Run();
}

// The operator's setCondition (§3.9).
void SetCondition(JobStatus& status, const std::string& type, const std::string& condition_status,
                  const std::string& reason, const std::string& message, Time now) {
  // Failed is terminal: nothing changes after it.
  if (IsFailed(status)) return;
  JobCondition condition{type, condition_status, reason, message, now, now};
  if (const JobCondition* current = FindCondition(status, type)) {
    // The message alone changing is not a change.
    if (current->status == condition_status && current->reason == reason) return;
    // A new reason for the same status is not a transition.
    if (current->status == condition_status) {
      condition.last_transition_time = current->last_transition_time;
    }
  }
  // Replace, and append at the end: the last condition is the job's state.
  RemoveConditionForReplacement(status, type);
  status.conditions.push_back(std::move(condition));
}

std::string JobState(const JobStatus& status) {
  return status.conditions.empty() ? "" : status.conditions.back().type;
}

bool IsSucceeded(const JobStatus& status) { return HasTrueCondition(status, kConditionSucceeded); }

bool IsFailed(const JobStatus& status) { return HasTrueCondition(status, kConditionFailed); }

bool IsSuspended(const JobStatus& status) { return HasTrueCondition(status, kConditionSuspended); }

}  // namespace cohort::job
