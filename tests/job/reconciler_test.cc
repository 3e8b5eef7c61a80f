// Tests of the reconciler, rule by rule. Section numbers (§) refer to docs/behaviour.md, which
// states the operator behaviour each rule reproduces.

#include "job/reconciler.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <csignal>
#include <map>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "job/status_json.h"
#include "job/tfjob.h"

namespace cohort::job {
namespace {

using std::chrono::seconds;
using ::testing::ElementsAre;
using ::testing::IsEmpty;
using ::testing::UnorderedElementsAre;

const Time kStart = Clock::from_time_t(1630928890);  // 2021-09-06T11:48:10Z

struct ReplicaSetup {
  std::string type;
  int replicas;
  RestartPolicy policy;
};

Job MakeJob(const std::vector<ReplicaSetup>& replicas) {
  Job job = NewTFJob();
  job.metadata.name = "mnist";
  job.metadata.namespace_name = "kubeflow";
  for (const ReplicaSetup& setup : replicas) {
    ReplicaSpec spec;
    spec.replicas = setup.replicas;
    spec.restart_policy = setup.policy;
    job.replica_specs[setup.type] = spec;
  }
  return job;
}

// "Start Worker 0", "Stop PS 0", "DeleteJob": actions as the assertions read them.
std::vector<std::string> Describe(const std::vector<Action>& actions) {
  std::vector<std::string> described;
  for (const Action& action : actions) {
    switch (action.kind) {
      case Action::Kind::kStart:
        described.push_back("Start ");
        break;
      case Action::Kind::kRestart:
        described.push_back("Restart ");
        break;
      case Action::Kind::kStop:
        described.push_back("Stop ");
        break;
      case Action::Kind::kTerminate:
        described.push_back("Terminate ");
        break;
      case Action::Kind::kDeleteJob:
        described.push_back("DeleteJob");
        continue;
    }
    described.back() += action.type + " " + std::to_string(action.index);
    if (action.group_restart) described.back() += " (group)";
  }
  return described;
}

// "Warning TFJobRestarting: job mnist is restarting because Worker replica(s) failed."
std::vector<std::string> Describe(const std::vector<Event>& events) {
  std::vector<std::string> described;
  for (const Event& event : events) {
    described.push_back(event.type + " " + event.reason + ": " + event.message);
  }
  return described;
}

// "Created True", "Running False"...
std::vector<std::string> Describe(const std::vector<JobCondition>& conditions) {
  std::vector<std::string> described;
  for (const JobCondition& condition : conditions) {
    described.push_back(condition.type + " " + condition.status);
  }
  return described;
}

// A fake executor. It keeps the replicas, calls Reconcile, persists the status through its JSON
// form as the real executor does, and carries out the actions: started replicas run at once,
// restarted ones wait in kPending with restart_count + 1 until EndBackoff(), stopped ones vanish,
// terminated ones keep running until the test makes them exit.
class Simulation {
 public:
  explicit Simulation(Job job) : job_(std::move(job)) {}

  Job& job() { return job_; }
  const JobStatus& status() const { return status_; }
  const std::vector<Event>& events() const { return events_; }
  const std::vector<std::string>& states() const { return states_; }
  bool deleted() const { return deleted_; }
  Time now() const { return now_; }

  void Advance(seconds duration) { now_ += duration; }

  ReconcileResult Step() {
    std::vector<ObservedReplica> observed;
    for (const auto& [key, replica] : replicas_) observed.push_back(replica);
    ReconcileResult result = Reconcile(job_, status_, observed, now_);
    StatusOr<JobStatus> persisted = JobStatusFromJson(JobStatusToJson(result.status));
    EXPECT_TRUE(persisted.ok()) << persisted.status().ToString();
    status_ = *persisted;
    events_.insert(events_.end(), result.events.begin(), result.events.end());
    states_.push_back(JobState(status_));
    for (const Action& action : result.actions) Apply(action);
    return result;
  }

  // Starts the job and lets every replica run.
  void StartRunning() {
    Step();
    Step();
  }

  // The replica's process exits: code 0 is kSucceeded, anything else kFailed.
  void Exit(const std::string& type, int index, int exit_code) {
    ObservedReplica& replica = Replica(type, index);
    replica.phase = exit_code == 0 ? ReplicaPhase::kSucceeded : ReplicaPhase::kFailed;
    replica.exit_code = exit_code;
    replica.finished_at = now_;
  }

  // The replica exits leaving `message` in its termination-message file.
  void ExitSaying(const std::string& type, int index, int exit_code, const std::string& message) {
    Exit(type, index, exit_code);
    Replica(type, index).termination_message = message;
  }

  void SetPhase(const std::string& type, int index, ReplicaPhase phase) {
    Replica(type, index).phase = phase;
  }

  // The crash-loop back-off is over: every restarted replica runs again.
  void EndBackoff() {
    for (auto& [key, replica] : replicas_) {
      if (replica.phase == ReplicaPhase::kPending) {
        replica.phase = ReplicaPhase::kRunning;
        replica.started_at = now_;
        replica.generation = generations_.current();
      }
    }
  }

  bool Has(const std::string& type, int index) const { return replicas_.count({type, index}) != 0; }

  ObservedReplica& Replica(const std::string& type, int index) {
    auto found = replicas_.find({type, index});
    EXPECT_NE(found, replicas_.end()) << type << " " << index;
    return found->second;
  }

 private:
  void Apply(const Action& action) {
    switch (action.kind) {
      case Action::Kind::kStart: {
        ObservedReplica replica;
        replica.type = action.type;
        replica.index = action.index;
        replica.phase = ReplicaPhase::kRunning;
        replica.started_at = now_;
        replica.generation = generations_.current();
        replicas_[{action.type, action.index}] = replica;
        break;
      }
      case Action::Kind::kRestart: {
        ObservedReplica& replica = Replica(action.type, action.index);
        ++replica.restart_count;
        if (action.group_restart) ++replica.group_restarts;
        generations_.RestartDecided(action.group_restart);
        replica.phase = ReplicaPhase::kPending;
        replica.exit_code = 0;
        replica.termination_message.clear();
        break;
      }
      case Action::Kind::kTerminate:  // SIGTERM sent; the test decides when it exits
        break;
      case Action::Kind::kStop:
        replicas_.erase({action.type, action.index});
        break;
      case Action::Kind::kDeleteJob:
        deleted_ = true;
        replicas_.clear();
        break;
    }
  }

  Job job_;
  JobStatus status_;
  std::map<std::pair<std::string, int>, ObservedReplica> replicas_;
  std::vector<Event> events_;
  std::vector<std::string> states_;  // JobState after each step
  Time now_ = kStart;
  bool deleted_ = false;
  GroupGenerations generations_;  // as the executors keep them
};

std::string Last(const std::vector<std::string>& states) {
  return states.empty() ? "" : states.back();
}

// ---- A new job ----

TEST(ReconcileTest, NewJobIsCreatedAndStartsEveryReplica) {
  Simulation simulation(MakeJob({{"Worker", 2, RestartPolicy::kNever},
                                 {"PS", 1, RestartPolicy::kNever},
                                 {"Chief", 1, RestartPolicy::kNever}}));
  ReconcileResult result = simulation.Step();

  ASSERT_EQ(result.status.conditions.size(), 1u);
  const JobCondition& created = result.status.conditions[0];
  EXPECT_EQ(created.type, "Created");
  EXPECT_EQ(created.status, "True");
  EXPECT_EQ(created.reason, "TFJobCreated");
  EXPECT_EQ(created.message, "TFJob mnist is created.");
  EXPECT_EQ(created.last_update_time, kStart);
  EXPECT_EQ(created.last_transition_time, kStart);
  EXPECT_EQ(result.status.start_time, kStart);
  EXPECT_FALSE(result.status.completion_time);
  // The operator records no event for Created; SuccessfulCreatePod is the executor's.
  EXPECT_THAT(result.events, IsEmpty());
  // Status order: Chief, Evaluator, Master, PS, Worker.
  EXPECT_THAT(Describe(result.actions),
              ElementsAre("Start Chief 0", "Start PS 0", "Start Worker 0", "Start Worker 1"));
  EXPECT_EQ(result.status.replica_statuses.size(), 3u);
  EXPECT_FALSE(result.finished);
  EXPECT_FALSE(result.requeue_at);
  EXPECT_EQ(JobState(result.status), "Created");
}

TEST(ReconcileTest, RunningWhenTheDecidingReplicaRuns) {
  Simulation simulation(MakeJob({{"Worker", 2, RestartPolicy::kNever}}));
  simulation.Step();
  simulation.Advance(seconds(5));
  ReconcileResult result = simulation.Step();

  EXPECT_THAT(result.actions, IsEmpty());
  EXPECT_EQ(JobState(result.status), "Running");
  const JobCondition& running = result.status.conditions.back();
  EXPECT_EQ(running.reason, "TFJobRunning");
  EXPECT_EQ(running.message, "TFJob kubeflow/mnist is running.");
  EXPECT_EQ(running.last_transition_time, kStart + seconds(5));
  EXPECT_EQ(result.status.replica_statuses.at("Worker").active, 2);
  // startTime is when the job was acknowledged, not when replicas ran.
  EXPECT_EQ(result.status.start_time, kStart);
}

TEST(ReconcileTest, PendingReplicasAreNotCounted) {
  Simulation simulation(MakeJob({{"Worker", 2, RestartPolicy::kNever}}));
  simulation.Step();
  simulation.SetPhase("Worker", 0, ReplicaPhase::kPending);
  simulation.SetPhase("Worker", 1, ReplicaPhase::kPending);
  ReconcileResult result = simulation.Step();

  const ReplicaStatus& workers = result.status.replica_statuses.at("Worker");
  EXPECT_EQ(workers.active + workers.succeeded + workers.failed, 0);
  EXPECT_EQ(JobState(result.status), "Created");
  EXPECT_THAT(result.actions, IsEmpty());
}

TEST(ReconcileTest, JobManagedByAnotherControllerIsLeftAlone) {
  for (const std::string managed_by : {"kueue.x-k8s.io/multikueue", ""}) {
    SCOPED_TRACE(managed_by);
    Job job = MakeJob({{"Worker", 1, RestartPolicy::kNever}});
    job.run_policy.managed_by = managed_by;
    JobStatus previous;
    previous.start_time = kStart;
    ReconcileResult result = Reconcile(job, previous, {}, kStart + seconds(9));
    EXPECT_THAT(result.status.conditions, IsEmpty());
    EXPECT_EQ(result.status.start_time, kStart);
    EXPECT_THAT(result.actions, IsEmpty());
    EXPECT_THAT(result.events, IsEmpty());
    EXPECT_FALSE(result.requeue_at);
  }
  Job job = MakeJob({{"Worker", 1, RestartPolicy::kNever}});
  job.run_policy.managed_by = "kubeflow.org/training-operator";
  EXPECT_THAT(Describe(Reconcile(job, JobStatus{}, {}, kStart).actions),
              ElementsAre("Start Worker 0"));
}

ObservedReplica Running(const std::string& type, int index) {
  ObservedReplica replica;
  replica.type = type;
  replica.index = index;
  replica.phase = ReplicaPhase::kRunning;
  return replica;
}

TEST(ReconcileTest, ReplicaOutsideTheSpecIsStopped) {
  Job job = MakeJob({{"Worker", 1, RestartPolicy::kNever}});
  const std::vector<ObservedReplica> observed = {Running("Worker", 0), Running("Worker", 1),
                                                 Running("PS", 0)};
  ReconcileResult result = Reconcile(job, JobStatus{}, observed, kStart);
  EXPECT_THAT(Describe(result.actions), ElementsAre("Stop Worker 1", "Stop PS 0"));
  EXPECT_EQ(result.status.replica_statuses.at("Worker").active, 1);
  EXPECT_EQ(result.status.replica_statuses.count("PS"), 0u);
}

// ---- Restart policies x exit codes x replica types (§1.4, §3.5, §3.6) ----

enum class Outcome {
  kRestarted,    // the replica is restarted and the job shows Restarting
  kReplicaDone,  // the replica stays exited, the job goes on
  kJobSucceeded,
  kJobFailed,
};

struct ExitCase {
  std::string type;  // the replica that exits
  int index;
  RestartPolicy policy;  // of every replica type in the job
  int exit_code;
  Outcome outcome;
  std::string failed_event = "";  // for kJobFailed: "<event type> <message>"
};

void PrintTo(const ExitCase& c, std::ostream* out) {
  *out << c.type << " " << c.index << " " << ToString(c.policy) << " exit " << c.exit_code;
}

std::string CaseName(const ::testing::TestParamInfo<ExitCase>& info) {
  const ExitCase& c = info.param;
  return c.type + std::to_string(c.index) + "_" + ToString(c.policy) + "_Exit" +
         std::to_string(c.exit_code);
}

class ExitTest : public ::testing::TestWithParam<ExitCase> {};

// The job: 2 Workers and 1 PS, plus one replica of the exiting type when it is another type.
TEST_P(ExitTest, PolicyDecides) {
  const ExitCase& c = GetParam();
  std::vector<ReplicaSetup> setup = {{"Worker", 2, c.policy}, {"PS", 1, c.policy}};
  if (c.type != "Worker" && c.type != "PS") setup.push_back({c.type, 1, c.policy});
  Simulation simulation(MakeJob(setup));
  simulation.StartRunning();
  ASSERT_EQ(Last(simulation.states()), "Running");
  simulation.Advance(seconds(30));
  simulation.Exit(c.type, c.index, c.exit_code);
  ReconcileResult result = simulation.Step();

  const std::string pod = "kubeflow.mnist-" + LowerCase(c.type) + "-" + std::to_string(c.index);
  const std::string exited =
      "Normal ExitedWithCode: Pod: " + pod + " exited with code " + std::to_string(c.exit_code);
  const Time now = kStart + seconds(30);
  switch (c.outcome) {
    case Outcome::kRestarted: {
      EXPECT_THAT(Describe(result.actions),
                  ElementsAre("Restart " + c.type + " " + std::to_string(c.index)));
      const std::string message =
          "job mnist is restarting because " + c.type + " replica(s) failed.";
      EXPECT_THAT(Describe(result.events),
                  ElementsAre(exited, "Warning TFJobRestarting: " + message));
      EXPECT_THAT(Describe(result.status.conditions),
                  ElementsAre("Created True", "Running False", "Restarting True"));
      EXPECT_EQ(result.status.conditions.back().message, message);
      EXPECT_EQ(result.status.conditions.back().reason, "TFJobRestarting");
      EXPECT_FALSE(result.finished);
      // Back-off over, the replica runs again and so does the job; nothing is reported twice.
      simulation.EndBackoff();
      ReconcileResult after = simulation.Step();
      EXPECT_THAT(Describe(after.status.conditions),
                  ElementsAre("Created True", "Restarting False", "Running True"));
      EXPECT_THAT(after.events, IsEmpty());
      EXPECT_EQ(simulation.Replica(c.type, c.index).restart_count, 1);
      break;
    }
    case Outcome::kReplicaDone: {
      EXPECT_THAT(result.actions, IsEmpty());
      EXPECT_THAT(Describe(result.events), ElementsAre(exited));
      EXPECT_EQ(JobState(result.status), "Running");
      const ReplicaStatus& counts = result.status.replica_statuses.at(c.type);
      EXPECT_EQ(c.exit_code == 0 ? counts.succeeded : counts.failed, 1);
      EXPECT_FALSE(result.finished);
      break;
    }
    case Outcome::kJobSucceeded: {
      EXPECT_THAT(Describe(result.events),
                  ElementsAre(exited,
                              "Normal TFJobSucceeded: TFJob kubeflow/mnist successfully "
                              "completed."));
      EXPECT_THAT(Describe(result.status.conditions),
                  ElementsAre("Created True", "Running False", "Succeeded True"));
      EXPECT_EQ(result.status.completion_time, now);
      EXPECT_TRUE(result.finished);
      break;
    }
    case Outcome::kJobFailed: {
      // The operator's message, then (Cohort's addition) the replica that failed, how and when.
      std::string message = c.failed_event.substr(c.failed_event.find(' ') + 1);
      message.pop_back();  // its final period
      message += ": " + LowerCase(c.type) + "-" + std::to_string(c.index) + " exited with code " +
                 std::to_string(c.exit_code) + (c.exit_code == 137 ? " (128 + SIGKILL)" : "") +
                 " at " + FormatTime(now) + " after 0 restarts.";
      EXPECT_THAT(Describe(result.events),
                  ElementsAre(exited, c.failed_event.substr(0, c.failed_event.find(' ')) +
                                          " TFJobFailed: " + message));
      EXPECT_EQ(result.status.conditions.back().message, message);
      EXPECT_THAT(Describe(result.status.conditions),
                  ElementsAre("Created True", "Running False", "Failed True"));
      EXPECT_EQ(result.status.conditions.back().reason, "TFJobFailed");
      EXPECT_EQ(result.status.completion_time, now);
      EXPECT_EQ(result.status.replica_statuses.at(c.type).failed, 1);
      // The default cleanPodPolicy None stops nothing.
      EXPECT_THAT(result.actions, IsEmpty());
      EXPECT_TRUE(result.finished);
      break;
    }
  }
}

constexpr RestartPolicy kAlways = RestartPolicy::kAlways;
constexpr RestartPolicy kOnFailure = RestartPolicy::kOnFailure;
constexpr RestartPolicy kNever = RestartPolicy::kNever;
constexpr RestartPolicy kExitCode = RestartPolicy::kExitCode;
const std::string kWorkerFailed =
    "Normal TFJob kubeflow/mnist has failed because 1 Worker replica(s) failed.";
const std::string kWorkerExitCodeFailed =
    "Warning job \"mnist\" is failing because \"Worker\" replica(s) failed.";

INSTANTIATE_TEST_SUITE_P(
    Worker1, ExitTest,
    ::testing::Values(
        // Always restarts after any exit, 0 included.
        ExitCase{"Worker", 1, kAlways, 0, Outcome::kRestarted},
        ExitCase{"Worker", 1, kAlways, 1, Outcome::kRestarted},
        ExitCase{"Worker", 1, kAlways, 127, Outcome::kRestarted},
        ExitCase{"Worker", 1, kAlways, 128, Outcome::kRestarted},
        ExitCase{"Worker", 1, kAlways, 137, Outcome::kRestarted},
        // OnFailure: 0 is done, anything else restarts.
        ExitCase{"Worker", 1, kOnFailure, 0, Outcome::kReplicaDone},
        ExitCase{"Worker", 1, kOnFailure, 1, Outcome::kRestarted},
        ExitCase{"Worker", 1, kOnFailure, 127, Outcome::kRestarted},
        ExitCase{"Worker", 1, kOnFailure, 128, Outcome::kRestarted},
        ExitCase{"Worker", 1, kOnFailure, 137, Outcome::kRestarted},
        // Never: any failure fails the job.
        ExitCase{"Worker", 1, kNever, 0, Outcome::kReplicaDone},
        ExitCase{"Worker", 1, kNever, 1, Outcome::kJobFailed, kWorkerFailed},
        ExitCase{"Worker", 1, kNever, 127, Outcome::kJobFailed, kWorkerFailed},
        ExitCase{"Worker", 1, kNever, 128, Outcome::kJobFailed, kWorkerFailed},
        ExitCase{"Worker", 1, kNever, 137, Outcome::kJobFailed, kWorkerFailed},
        // ExitCode: 128 and above (signals) restart, 1-127 fail at once with a Warning.
        ExitCase{"Worker", 1, kExitCode, 0, Outcome::kReplicaDone},
        ExitCase{"Worker", 1, kExitCode, 1, Outcome::kJobFailed, kWorkerExitCodeFailed},
        ExitCase{"Worker", 1, kExitCode, 127, Outcome::kJobFailed, kWorkerExitCodeFailed},
        ExitCase{"Worker", 1, kExitCode, 128, Outcome::kRestarted},
        ExitCase{"Worker", 1, kExitCode, 137, Outcome::kRestarted}),
    CaseName);

INSTANTIATE_TEST_SUITE_P(
    ByType, ExitTest,
    ::testing::Values(
        // Worker 0 decides when there is no Chief; under Always it never completes.
        ExitCase{"Worker", 0, kNever, 0, Outcome::kJobSucceeded},
        ExitCase{"Worker", 0, kOnFailure, 0, Outcome::kJobSucceeded},
        ExitCase{"Worker", 0, kExitCode, 0, Outcome::kJobSucceeded},
        ExitCase{"Worker", 0, kAlways, 0, Outcome::kRestarted},
        ExitCase{"Worker", 0, kExitCode, 143, Outcome::kRestarted},
        // The Chief decides over the Workers.
        ExitCase{"Chief", 0, kNever, 0, Outcome::kJobSucceeded},
        ExitCase{"Master", 0, kExitCode, 0, Outcome::kJobSucceeded},
        ExitCase{"Chief", 0, kNever, 2, Outcome::kJobFailed,
                 "Normal TFJob kubeflow/mnist has failed because 1 Chief replica(s) failed."},
        ExitCase{"Chief", 0, kExitCode, 139, Outcome::kRestarted},
        // PS, Evaluators and unknown types never decide success but their failures count.
        ExitCase{"PS", 0, kNever, 0, Outcome::kReplicaDone},
        ExitCase{"PS", 0, kNever, 1, Outcome::kJobFailed,
                 "Normal TFJob kubeflow/mnist has failed because 1 PS replica(s) failed."},
        ExitCase{"PS", 0, kExitCode, 137, Outcome::kRestarted},
        ExitCase{"PS", 0, kExitCode, 1, Outcome::kJobFailed,
                 "Warning job \"mnist\" is failing because \"PS\" replica(s) failed."},
        ExitCase{"Evaluator", 0, kNever, 0, Outcome::kReplicaDone},
        ExitCase{"Evaluator", 0, kNever, 1, Outcome::kJobFailed,
                 "Normal TFJob kubeflow/mnist has failed because 1 Evaluator replica(s) failed."},
        ExitCase{"Evaluator", 0, kOnFailure, 1, Outcome::kRestarted},
        ExitCase{"Trainer", 0, kNever, 0, Outcome::kReplicaDone},
        ExitCase{"Trainer", 0, kNever, 1, Outcome::kJobFailed,
                 "Normal TFJob kubeflow/mnist has failed because 1 Trainer replica(s) failed."},
        ExitCase{"Trainer", 0, kExitCode, 130, Outcome::kRestarted}),
    CaseName);

// ---- The two scenarios users ask about ----

TEST(ReconcileTest, WorkerKilledOnceUnderExitCodeStillSucceeds) {
  Simulation simulation(MakeJob({{"Worker", 2, kExitCode}}));
  simulation.StartRunning();
  simulation.Advance(seconds(10));
  simulation.Exit("Worker", 1, 137);
  simulation.Step();
  EXPECT_EQ(Last(simulation.states()), "Restarting");
  // During the back-off the replica is kPending with restart_count 1: still Restarting, and the
  // restart is not reported again.
  simulation.Advance(seconds(1));
  ReconcileResult waiting = simulation.Step();
  EXPECT_EQ(JobState(waiting.status), "Restarting");
  EXPECT_THAT(waiting.actions, IsEmpty());
  EXPECT_THAT(waiting.events, IsEmpty());
  simulation.EndBackoff();
  simulation.Step();
  EXPECT_EQ(Last(simulation.states()), "Running");
  simulation.Advance(seconds(50));
  simulation.Exit("Worker", 0, 0);
  simulation.Exit("Worker", 1, 0);
  ReconcileResult done = simulation.Step();

  EXPECT_THAT(simulation.states(), ElementsAre("Created", "Running", "Restarting", "Restarting",
                                               "Running", "Succeeded"));
  EXPECT_THAT(
      Describe(simulation.events()),
      ElementsAre("Normal ExitedWithCode: Pod: kubeflow.mnist-worker-1 exited with code 137",
                  "Warning TFJobRestarting: job mnist is restarting because Worker "
                  "replica(s) failed.",
                  "Normal ExitedWithCode: Pod: kubeflow.mnist-worker-0 exited with code 0",
                  "Normal ExitedWithCode: Pod: kubeflow.mnist-worker-1 exited with code 0",
                  "Normal TFJobSucceeded: TFJob kubeflow/mnist successfully completed."));
  // The restart stays visible in the finished job's conditions (Cohort's difference).
  EXPECT_THAT(Describe(done.status.conditions),
              ElementsAre("Created True", "Restarting False", "Running False", "Succeeded True"));
  EXPECT_EQ(done.status.replica_statuses.at("Worker").succeeded, 2);
  EXPECT_EQ(simulation.Replica("Worker", 1).restart_count, 1);
}

TEST(ReconcileTest, WorkerExitingOneUnderExitCodeFailsWithTheOperatorsMessage) {
  Simulation simulation(MakeJob({{"Worker", 2, kExitCode}, {"PS", 1, kExitCode}}));
  simulation.StartRunning();
  simulation.Advance(seconds(10));
  simulation.Exit("Worker", 0, 1);
  ReconcileResult result = simulation.Step();

  EXPECT_THAT(Describe(result.events),
              ElementsAre("Normal ExitedWithCode: Pod: kubeflow.mnist-worker-0 exited with code 1",
                          "Warning TFJobFailed: job \"mnist\" is failing because \"Worker\" "
                          "replica(s) failed: worker-0 exited with code 1 at 2021-09-06T11:48:20Z "
                          "after 0 restarts."));
  EXPECT_THAT(Describe(result.status.conditions),
              ElementsAre("Created True", "Running False", "Failed True"));
  EXPECT_EQ(JobState(result.status), "Failed");
  EXPECT_EQ(result.status.completion_time, kStart + seconds(10));
  EXPECT_TRUE(result.finished);
  EXPECT_FALSE(result.requeue_at);
}

// ---- Log policies and the failure message (Cohort's additions) ----

LogPolicyMatch Matched(LogPolicyAction action) {
  return LogPolicyMatch{"cuda-oom", action, "RuntimeError: CUDA out of memory"};
}

TEST(ReconcileTest, APermanentLogPolicyFailsTheJobWhateverTheRestartPolicy) {
  for (RestartPolicy policy : {kAlways, kOnFailure, kExitCode, kNever}) {
    Simulation simulation(MakeJob({{"Worker", 2, policy}}));
    simulation.StartRunning();
    simulation.Advance(seconds(5));
    simulation.Exit("Worker", 1, 137);
    simulation.Replica("Worker", 1).details.log_policy = Matched(LogPolicyAction::kPermanent);
    ReconcileResult result = simulation.Step();
    EXPECT_EQ(JobState(result.status), "Failed") << ToString(policy);
    EXPECT_THAT(Describe(result.actions), IsEmpty()) << ToString(policy);
    EXPECT_EQ(result.status.conditions.back().message,
              "TFJob kubeflow/mnist has failed because 1 Worker replica(s) failed: worker-1 "
              "exited with code 137 (128 + SIGKILL) at 2021-09-06T11:48:15Z after 0 restarts; "
              "its log: \"RuntimeError: CUDA out of memory\" (log policy cuda-oom: permanent).")
        << ToString(policy);
  }
}

TEST(ReconcileTest, ARetryableLogPolicyRestartsAnExitCodeFailureButNotUnderNever) {
  Simulation simulation(MakeJob({{"Worker", 2, kExitCode}}));
  simulation.StartRunning();
  simulation.Exit("Worker", 1, 1);
  simulation.Replica("Worker", 1).details.log_policy = Matched(LogPolicyAction::kRetryable);
  ReconcileResult result = simulation.Step();
  EXPECT_THAT(Describe(result.actions), ElementsAre("Restart Worker 1"));
  EXPECT_EQ(JobState(result.status), "Restarting");

  Simulation never(MakeJob({{"Worker", 2, kNever}}));
  never.StartRunning();
  never.Exit("Worker", 1, 1);
  never.Replica("Worker", 1).details.log_policy = Matched(LogPolicyAction::kRetryable);
  EXPECT_EQ(JobState(never.Step().status), "Failed");
}

TEST(ReconcileTest, ALogPolicyDoesNotTurnASuccessIntoAFailure) {
  Simulation simulation(MakeJob({{"Worker", 1, kOnFailure}}));
  simulation.StartRunning();
  simulation.Exit("Worker", 0, 0);
  simulation.Replica("Worker", 0).details.log_policy = Matched(LogPolicyAction::kPermanent);
  EXPECT_EQ(JobState(simulation.Step().status), "Succeeded");
}

TEST(ReconcileTest, TheFailureMessageQuotesTheLastLogLineAndTheExecutorsHint) {
  Simulation simulation(MakeJob({{"Worker", 2, kNever}}));
  simulation.StartRunning();
  simulation.Advance(seconds(1));
  simulation.Exit("Worker", 0, 127);
  simulation.Replica("Worker", 0).details.last_log_line = "sh: 1: exec: train: not found";
  simulation.Replica("Worker", 0).details.hint = "its command could not be run";
  ReconcileResult result = simulation.Step();
  EXPECT_EQ(result.status.conditions.back().message,
            "TFJob kubeflow/mnist has failed because 1 Worker replica(s) failed: worker-0 exited "
            "with code 127 at 2021-09-06T11:48:11Z after 0 restarts; its last log line: \"sh: 1: "
            "exec: train: not found\"; its command could not be run.");
}

TEST(ReconcileTest, AnErrorLineBeforeATrailingHintIsQuotedInsteadOfTheHint) {
  Simulation simulation(MakeJob({{"Worker", 1, kNever}}));
  simulation.StartRunning();
  simulation.Advance(seconds(1));
  simulation.Exit("Worker", 0, 2);
  ExitDetails& details = simulation.Replica("Worker", 0).details;
  details.last_log_line = "Run cohort-train --help for usage.";
  details.error_log_line = "cohort-train: error: --checkpoint_path: gs://b/c is a URL";
  EXPECT_EQ(simulation.Step().status.conditions.back().message,
            "TFJob kubeflow/mnist has failed because 1 Worker replica(s) failed: worker-0 exited "
            "with code 2 at 2021-09-06T11:48:11Z after 0 restarts; its last error line: "
            "\"cohort-train: error: --checkpoint_path: gs://b/c is a URL\".");
}

// An executor that saw the signal says the replica was killed by it; the OOM killer is named only
// when the executor says the kernel recorded it.
TEST(ReconcileTest,
     TheFailureMessageSaysWhichSignalKilledTheReplicaAndWhetherTheKernelOomKilledIt) {
  Simulation signalled(MakeJob({{"Worker", 1, kNever}}));
  signalled.StartRunning();
  signalled.Exit("Worker", 0, 139);
  signalled.Replica("Worker", 0).details.signal = SIGSEGV;
  EXPECT_THAT(signalled.Step().status.conditions.back().message,
              ::testing::HasSubstr("worker-0 was killed by SIGSEGV (exit code 139) at "));

  Simulation oom(MakeJob({{"Worker", 1, kNever}}));
  oom.StartRunning();
  oom.Exit("Worker", 0, 137);
  oom.Replica("Worker", 0).details.signal = SIGKILL;
  oom.Replica("Worker", 0).details.oom_killed = true;
  EXPECT_THAT(oom.Step().status.conditions.back().message,
              ::testing::HasSubstr(
                  "worker-0 was killed by the kernel's OOM killer (SIGKILL, exit code 137) at "));
}

// What the replica left in its termination-message file (its last words, e.g. a peer it gave up
// on) is quoted too, its first line only.
TEST(ReconcileTest, TheFailureMessageQuotesTheTerminationMessage) {
  Simulation simulation(MakeJob({{"Worker", 1, kNever}}));
  simulation.StartRunning();
  simulation.Exit("Worker", 0, 1);
  simulation.Replica("Worker", 0).termination_message = "CUDA device lost\nsecond line";
  EXPECT_THAT(simulation.Step().status.conditions.back().message,
              ::testing::EndsWith("after 0 restarts; its termination message: \"CUDA device "
                                  "lost\"."));
}

// A replica that succeeded without training (its checkpoint said training was complete) says so
// in its termination message; the job still succeeds, and its events quote the first line, so
// that describe shows why nothing was trained.
TEST(ReconcileTest, ASuccessfulExitsTerminationMessageIsQuotedInItsEvent) {
  Simulation simulation(MakeJob({{"Worker", 2, kNever}}));
  simulation.StartRunning();
  simulation.ExitSaying("Worker", 0, 0,
                        "training already complete at global step 2343 (checkpoints in "
                        "/tmp/cohort-taxi/taxi/checkpoints): nothing trained\nsecond line");
  simulation.Exit("Worker", 1, 0);
  ReconcileResult result = simulation.Step();
  EXPECT_EQ(JobState(result.status), "Succeeded");
  EXPECT_THAT(Describe(simulation.events()),
              ::testing::IsSupersetOf(
                  {"Normal ExitedWithCode: Pod: kubeflow.mnist-worker-0 exited with code 0: "
                   "training already complete at global step 2343 (checkpoints in "
                   "/tmp/cohort-taxi/taxi/checkpoints): nothing trained",
                   "Normal ExitedWithCode: Pod: kubeflow.mnist-worker-1 exited with code 0"}));
}

// Two workers fail in one pass: the message names the one that failed first.
TEST(ReconcileTest, TheFailureMessageNamesTheFirstReplicaThatFailed) {
  Simulation simulation(MakeJob({{"Worker", 3, kNever}}));
  simulation.StartRunning();
  simulation.Advance(seconds(2));
  simulation.Exit("Worker", 2, 4);
  simulation.Advance(seconds(1));
  simulation.Exit("Worker", 0, 5);
  ReconcileResult result = simulation.Step();
  EXPECT_THAT(result.status.conditions.back().message,
              ::testing::HasSubstr("2 Worker replica(s) failed: worker-2 exited with code 4 at "
                                   "2021-09-06T11:48:12Z"));
}

TEST(ReconcileTest, JobStaysRestartingUntilTheRestartedReplicaRuns) {
  Simulation simulation(MakeJob({{"Chief", 1, kOnFailure}, {"PS", 1, kOnFailure}}));
  simulation.StartRunning();
  simulation.Exit("PS", 0, 1);
  simulation.Step();
  // The Chief runs throughout, but the PS is still in its back-off.
  ReconcileResult waiting = simulation.Step();
  EXPECT_EQ(JobState(waiting.status), "Restarting");
  EXPECT_EQ(waiting.status.replica_statuses.at("PS").active, 0);
  simulation.EndBackoff();
  ReconcileResult running = simulation.Step();
  EXPECT_THAT(Describe(running.status.conditions),
              ElementsAre("Created True", "Restarting False", "Running True"));
  EXPECT_THAT(simulation.states(),
              ElementsAre("Created", "Running", "Restarting", "Restarting", "Running"));
}

// ---- Success rules (§3.5) ----

TEST(ReconcileTest, ChiefDecidesWhileWorkersStillRun) {
  for (const std::string chief : {"Chief", "Master"}) {
    SCOPED_TRACE(chief);
    Simulation simulation(MakeJob({{chief, 1, kNever}, {"Worker", 2, kNever}}));
    simulation.StartRunning();
    simulation.Exit("Worker", 0, 0);
    EXPECT_EQ(JobState(simulation.Step().status), "Running");
    simulation.Exit(chief, 0, 0);
    ReconcileResult result = simulation.Step();
    EXPECT_EQ(JobState(result.status), "Succeeded");
    // Still-running replicas count as succeeded once the job has (§3.4 step 3).
    EXPECT_EQ(result.status.replica_statuses.at("Worker").succeeded, 2);
    EXPECT_EQ(result.status.replica_statuses.at("Worker").active, 0);
    EXPECT_EQ(result.status.replica_statuses.at(chief).succeeded, 1);
  }
}

TEST(ReconcileTest, WorkerZeroDecidesByDefault) {
  Simulation simulation(MakeJob({{"Worker", 3, kNever}, {"PS", 2, kNever}}));
  simulation.StartRunning();
  simulation.Exit("Worker", 1, 0);
  EXPECT_EQ(JobState(simulation.Step().status), "Running");
  simulation.Exit("Worker", 0, 0);
  ReconcileResult result = simulation.Step();
  EXPECT_EQ(JobState(result.status), "Succeeded");
  EXPECT_EQ(result.status.replica_statuses.at("Worker").succeeded, 3);
  EXPECT_EQ(result.status.replica_statuses.at("PS").succeeded, 2);
}

TEST(ReconcileTest, AllWorkersWaitsForEveryWorker) {
  Job job = MakeJob({{"Worker", 2, kNever}});
  job.kind_spec[kSuccessPolicyField] = kSuccessPolicyAllWorkers;
  Simulation simulation(job);
  simulation.StartRunning();
  simulation.Exit("Worker", 0, 0);
  EXPECT_EQ(JobState(simulation.Step().status), "Running");
  simulation.Exit("Worker", 1, 0);
  EXPECT_EQ(JobState(simulation.Step().status), "Succeeded");
}

TEST(ReconcileTest, WithoutChiefOrWorkerNothingDecidesSuccess) {
  // As in the operator: only a Chief/Master or the Workers decide; a PS-only job never succeeds
  // or runs by itself.
  Simulation simulation(MakeJob({{"PS", 1, kNever}, {"Evaluator", 1, kNever}}));
  simulation.StartRunning();
  EXPECT_EQ(Last(simulation.states()), "Created");
  simulation.Exit("PS", 0, 0);
  simulation.Exit("Evaluator", 0, 0);
  ReconcileResult result = simulation.Step();
  EXPECT_EQ(JobState(result.status), "Created");
  EXPECT_FALSE(result.finished);
}

TEST(ReconcileTest, ChiefWithoutWorkersDecides) {
  Simulation simulation(MakeJob({{"Chief", 1, kNever}}));
  simulation.StartRunning();
  simulation.Exit("Chief", 0, 0);
  EXPECT_EQ(JobState(simulation.Step().status), "Succeeded");
}

TEST(ReconcileTest, UnknownTypePlaysNoPartInSuccess) {
  Simulation simulation(MakeJob({{"Worker", 1, kNever}, {"Trainer", 1, kNever}}));
  simulation.StartRunning();
  EXPECT_EQ(simulation.status().replica_statuses.at("Trainer").active, 1);
  simulation.Exit("Worker", 0, 0);
  EXPECT_EQ(JobState(simulation.Step().status), "Succeeded");
}

TEST(ReconcileTest, FailureWinsOverSuccessInTheSamePass) {
  Simulation simulation(MakeJob({{"Chief", 1, kNever}, {"PS", 1, kNever}}));
  simulation.StartRunning();
  simulation.Exit("Chief", 0, 0);
  simulation.Exit("PS", 0, 1);
  ReconcileResult result = simulation.Step();
  EXPECT_EQ(JobState(result.status), "Failed");
  EXPECT_FALSE(IsSucceeded(result.status));
  EXPECT_THAT(
      Describe(result.events),
      ElementsAre("Normal ExitedWithCode: Pod: kubeflow.mnist-chief-0 exited with code 0",
                  "Normal ExitedWithCode: Pod: kubeflow.mnist-ps-0 exited with code 1",
                  "Normal TFJobFailed: TFJob kubeflow/mnist has failed because 1 PS "
                  "replica(s) failed: ps-0 exited with code 1 at 2021-09-06T11:48:10Z after "
                  "0 restarts."));
}

TEST(ReconcileTest, SuccessInThePassOfARestartRestartsNothing) {
  Simulation simulation(MakeJob({{"Worker", 2, kExitCode}}));
  simulation.StartRunning();
  simulation.Exit("Worker", 0, 0);
  simulation.Exit("Worker", 1, 137);
  ReconcileResult result = simulation.Step();
  EXPECT_EQ(JobState(result.status), "Succeeded");
  EXPECT_THAT(result.actions, IsEmpty());
  EXPECT_EQ(result.status.replica_statuses.at("Worker").succeeded, 1);
  EXPECT_EQ(result.status.replica_statuses.at("Worker").failed, 1);
}

// ---- ExitedWithCode is recorded once per exit ----

TEST(ReconcileTest, ExitIsReportedOnce) {
  Simulation simulation(MakeJob({{"Worker", 3, kNever}}));
  simulation.StartRunning();
  simulation.Advance(seconds(1));
  simulation.Exit("Worker", 2, 0);
  EXPECT_EQ(simulation.Step().events.size(), 1u);
  EXPECT_THAT(simulation.Step().events, IsEmpty());
  simulation.Advance(seconds(1));
  simulation.Exit("Worker", 1, 0);
  ReconcileResult result = simulation.Step();
  EXPECT_THAT(
      Describe(result.events),
      ElementsAre("Normal ExitedWithCode: Pod: kubeflow.mnist-worker-1 exited with code 0"));
  EXPECT_THAT(simulation.Step().events, IsEmpty());
}

// ---- backoffLimit (§3.7, with the kubeflow/trainer #2045 fix) ----

struct BackoffCase {
  RestartPolicy policy;
  int exit_code;
  int backoff_limit;
};

void PrintTo(const BackoffCase& c, std::ostream* out) {
  *out << ToString(c.policy) << " exit " << c.exit_code << " backoffLimit " << c.backoff_limit;
}

class BackoffTest : public ::testing::TestWithParam<BackoffCase> {};

// backoffLimit N allows N restarts; the failure that would need restart N + 1 fails the job.
TEST_P(BackoffTest, LimitCountsEveryRestart) {
  const BackoffCase& c = GetParam();
  Job job = MakeJob({{"Worker", 1, c.policy}, {"PS", 1, kNever}});
  job.run_policy.backoff_limit = c.backoff_limit;
  Simulation simulation(job);
  simulation.StartRunning();
  for (int restart = 1; restart <= c.backoff_limit; ++restart) {
    simulation.Advance(seconds(10));
    simulation.Exit("Worker", 0, c.exit_code);
    ReconcileResult result = simulation.Step();
    ASSERT_THAT(Describe(result.actions), ElementsAre("Restart Worker 0")) << restart;
    simulation.EndBackoff();
    simulation.Step();
  }
  EXPECT_EQ(simulation.Replica("Worker", 0).restart_count, c.backoff_limit);
  simulation.Advance(seconds(10));
  simulation.Exit("Worker", 0, c.exit_code);
  ReconcileResult result = simulation.Step();

  const std::string exit = " exited with code " + std::to_string(c.exit_code) +
                           (c.exit_code == 137 ? " (128 + SIGKILL)" : "");
  const std::string message =
      "Job mnist has failed because it has reached the specified backoff limit: worker-0" + exit +
      " at " + FormatTime(simulation.now()) + " after " + std::to_string(c.backoff_limit) +
      (c.backoff_limit == 1 ? " restart" : " restarts");
  EXPECT_EQ(JobState(result.status), "Failed");
  EXPECT_EQ(result.status.conditions.back().message, message);
  EXPECT_EQ(Describe(result.events).back(), "Normal TFJobFailed: " + message);
  EXPECT_EQ(result.status.completion_time, simulation.now());
  // Everything is stopped although cleanPodPolicy is None (§3.4 step 6).
  EXPECT_THAT(Describe(result.actions), UnorderedElementsAre("Stop Worker 0", "Stop PS 0"));
  const ReplicaStatus& workers = result.status.replica_statuses.at("Worker");
  EXPECT_EQ(c.exit_code == 0 ? workers.succeeded : workers.failed, 1);
  // Nothing stays active in a failed job whose replicas are all stopped.
  for (const auto& [type, counts] : result.status.replica_statuses) {
    EXPECT_EQ(counts.active, 0) << type;
  }
  EXPECT_TRUE(result.finished);
  EXPECT_THAT(simulation.Step().actions, IsEmpty());
}

INSTANTIATE_TEST_SUITE_P(
    Limits, BackoffTest,
    ::testing::Values(BackoffCase{kOnFailure, 1, 0}, BackoffCase{kOnFailure, 1, 1},
                      BackoffCase{kOnFailure, 1, 2}, BackoffCase{kExitCode, 137, 0},
                      BackoffCase{kExitCode, 137, 1}, BackoffCase{kExitCode, 137, 2},
                      BackoffCase{kAlways, 0, 2}),
    [](const ::testing::TestParamInfo<BackoffCase>& info) {
      return ToString(info.param.policy) + "_Limit" + std::to_string(info.param.backoff_limit);
    });

TEST(ReconcileTest, WithoutBackoffLimitRestartsNeverEnd) {
  Simulation simulation(MakeJob({{"Worker", 1, kOnFailure}}));
  simulation.StartRunning();
  for (int restart = 1; restart <= 10; ++restart) {
    simulation.Exit("Worker", 0, 1);
    ASSERT_THAT(Describe(simulation.Step().actions), ElementsAre("Restart Worker 0"));
    simulation.EndBackoff();
    simulation.Step();
  }
  EXPECT_EQ(Last(simulation.states()), "Running");
}

TEST(ReconcileTest, SimultaneousFailuresEachNeedARestart) {
  Job job = MakeJob({{"Worker", 2, kOnFailure}});
  job.run_policy.backoff_limit = 1;
  Simulation simulation(job);
  simulation.StartRunning();
  simulation.Exit("Worker", 0, 1);
  simulation.Exit("Worker", 1, 1);
  ReconcileResult result = simulation.Step();
  EXPECT_EQ(JobState(result.status), "Failed");
  EXPECT_EQ(result.status.replica_statuses.at("Worker").failed, 2);
}

// ---- Peer reports: hung replicas are stopped, and a group restart counts once ----

constexpr char kWorker1Hung[] = "peer worker:1 hung (no heartbeat for 30 s)";
constexpr char kWorker1Died[] =
    "peer worker:1 died (closed the connection without saying goodbye: the process exited or was "
    "killed)";

Job ThreeWorkers(int backoff_limit) {
  Job job = MakeJob({{"Worker", 3, kOnFailure}});
  job.run_policy.backoff_limit = backoff_limit;
  return job;
}

// The scenario: worker-1 is SIGSTOPped; its peers give up on it after the peer timeout and
// exit 138 naming it. It is stopped and restarted per its policy like a container whose liveness
// probe failed, and the whole episode uses one restart of the backoff limit.
TEST(PeerReportTest, AHungReplicaIsStoppedAndRestartedAndCountsOnce) {
  Simulation simulation(ThreeWorkers(1));
  simulation.StartRunning();
  simulation.Advance(seconds(40));
  simulation.ExitSaying("Worker", 0, 138, kWorker1Hung);
  simulation.ExitSaying("Worker", 2, 138, kWorker1Hung);
  ReconcileResult result = simulation.Step();
  EXPECT_THAT(
      Describe(result.actions),
      ElementsAre("Terminate Worker 1", "Restart Worker 0 (group)", "Restart Worker 2 (group)"));
  const std::string why = "worker-1 hung (no heartbeat for 30 s), as worker-0 reported";
  EXPECT_THAT(Describe(result.events),
              ::testing::Contains("Warning Unhealthy: Pod: kubeflow.mnist-worker-1: " + why +
                                  "; stopping it to restart it per restartPolicy OnFailure"));
  EXPECT_EQ(JobState(result.status), "Restarting");
  EXPECT_EQ(result.status.conditions.back().message,
            "job mnist is restarting because " + why + ".");
  // Until its SIGTERM takes effect nothing is asked again.
  EXPECT_THAT(Describe(simulation.Step().actions), IsEmpty());

  simulation.Advance(seconds(5));
  simulation.Exit("Worker", 1, 137);  // SIGKILL after the grace period: a stopped process
  EXPECT_THAT(Describe(simulation.Step().actions), ElementsAre("Restart Worker 1"));
  simulation.EndBackoff();
  EXPECT_EQ(JobState(simulation.Step().status), "Running");
  // Three restarts were made, one of which counts: backoffLimit 1 was not passed.
  EXPECT_EQ(simulation.Replica("Worker", 1).restart_count, 1);
  EXPECT_EQ(simulation.Replica("Worker", 0).group_restarts, 1);
  EXPECT_FALSE(IsFailed(simulation.status()));
}

// Issue 17 item 4: a crash takes its peers down with it (exit 138 "peer worker:1 died"); only the
// crash counts, so backoffLimit 2 survives two crashes of one worker and fails on the third,
// naming the worker that crashed rather than a peer.
TEST(PeerReportTest, AGroupRestartCountsOnceAgainstTheBackoffLimit) {
  Simulation simulation(ThreeWorkers(2));
  simulation.StartRunning();
  for (int crash = 1; crash <= 2; ++crash) {
    simulation.Advance(seconds(60));
    simulation.Exit("Worker", 1, 137);
    simulation.ExitSaying("Worker", 0, 138, kWorker1Died);
    simulation.ExitSaying("Worker", 2, 138, kWorker1Died);
    ReconcileResult result = simulation.Step();
    ASSERT_THAT(
        Describe(result.actions),
        ElementsAre("Restart Worker 0 (group)", "Restart Worker 1", "Restart Worker 2 (group)"))
        << crash;
    simulation.EndBackoff();
    ASSERT_EQ(JobState(simulation.Step().status), "Running") << crash;
  }
  simulation.Advance(seconds(60));
  simulation.Exit("Worker", 1, 137);
  simulation.ExitSaying("Worker", 0, 138, kWorker1Died);
  simulation.ExitSaying("Worker", 2, 138, kWorker1Died);
  ReconcileResult result = simulation.Step();
  EXPECT_EQ(JobState(result.status), "Failed");
  EXPECT_EQ(result.status.conditions.back().message,
            "Job mnist has failed because it has reached the specified backoff limit: worker-1 "
            "exited with code 137 (128 + SIGKILL) at " +
                FormatTime(simulation.now()) + " after 2 restarts");
}

// The peers' exits may be seen before the crash itself: the counting does not depend on the order.
TEST(PeerReportTest, PeersSeenBeforeTheCrashAreStillAGroupRestart) {
  Simulation simulation(ThreeWorkers(1));
  simulation.StartRunning();
  simulation.Advance(seconds(60));
  simulation.ExitSaying("Worker", 0, 138, kWorker1Died);
  // worker-1 still looks alive: its peers' word is enough to stop it.
  EXPECT_THAT(Describe(simulation.Step().actions),
              ElementsAre("Terminate Worker 1", "Restart Worker 0 (group)"));
  simulation.Exit("Worker", 1, 137);
  simulation.ExitSaying("Worker", 2, 138, kWorker1Died);
  EXPECT_THAT(Describe(simulation.Step().actions),
              ElementsAre("Restart Worker 1", "Restart Worker 2 (group)"));
  simulation.EndBackoff();
  EXPECT_EQ(JobState(simulation.Step().status), "Running");
}

// A report about a run that has since been replaced says nothing about the new run.
TEST(PeerReportTest, AReportOlderThanTheAccusedRunIsNotActedOn) {
  Simulation simulation(ThreeWorkers(5));
  simulation.StartRunning();
  simulation.Advance(seconds(10));
  simulation.Exit("Worker", 1, 137);
  simulation.Step();
  simulation.Advance(seconds(2));
  simulation.EndBackoff();  // worker-1 runs again, started now
  simulation.ExitSaying("Worker", 0, 138, kWorker1Died);
  simulation.Replica("Worker", 0).finished_at = simulation.now() - seconds(1);
  EXPECT_THAT(Describe(simulation.Step().actions), ElementsAre("Restart Worker 0 (group)"));
}

// The restart race: worker-1 is killed and restarted after its back-off, and only then do its
// slow peers of the old group exit, reporting it dead. Their reports are about the killed run, of
// an earlier generation: the new run is not stopped (which would count its exit against
// backoffLimit 1 and fail the job), each stale report is recorded once, and the episode counts one
// restart. A hang of the new run, reported by a peer of the new generation, is acted on.
TEST(PeerReportTest, ASlowSurvivorsReportDoesNotStopTheAccusedsNewRun) {
  Simulation simulation(ThreeWorkers(1));
  simulation.StartRunning();
  simulation.Advance(seconds(10));
  simulation.Exit("Worker", 1, 137);
  ASSERT_THAT(Describe(simulation.Step().actions), ElementsAre("Restart Worker 1"));
  simulation.Advance(seconds(1));
  simulation.EndBackoff();
  ASSERT_EQ(simulation.Replica("Worker", 1).generation, 1);
  simulation.Advance(seconds(4));
  simulation.ExitSaying("Worker", 0, 1, kWorker1Died);
  simulation.ExitSaying("Worker", 2, 1, kWorker1Died);
  ReconcileResult result = simulation.Step();
  EXPECT_THAT(Describe(result.actions),
              ElementsAre("Restart Worker 0 (group)", "Restart Worker 2 (group)"));
  EXPECT_THAT(
      Describe(result.events),
      ::testing::Contains("Normal StalePeerReport: worker-1 died (closed the connection "
                          "without saying goodbye: the process exited or was killed), as "
                          "worker-0 reported in generation 0; worker-1 was restarted since, "
                          "and its run of generation 1 is left alone"));
  EXPECT_FALSE(IsFailed(result.status));
  EXPECT_THAT(Describe(simulation.Step().events),
              ::testing::Not(::testing::Contains(::testing::HasSubstr("StalePeerReport"))));
  simulation.EndBackoff();
  EXPECT_EQ(JobState(simulation.Step().status), "Running");
  EXPECT_EQ(simulation.Replica("Worker", 0).generation, 1);
  EXPECT_EQ(simulation.Replica("Worker", 1).restart_count, 1);

  // Generation 1: worker-1 hangs and worker-0 says so; that report concerns the run.
  simulation.Advance(seconds(40));
  simulation.ExitSaying("Worker", 0, 138, kWorker1Hung);
  EXPECT_THAT(Describe(simulation.Step().actions),
              ElementsAre("Terminate Worker 1", "Restart Worker 0 (group)"));
}

// Only a report that names another replica of the job makes a group restart: one naming the
// reporter itself, a replica the job does not have, or no report at all is an ordinary failure.
TEST(PeerReportTest, OtherLastWordsAreAnOrdinaryFailure) {
  for (const std::string& message : {std::string("peer worker:0 hung (no heartbeat for 30 s)"),
                                     std::string("peer worker:3 died (closed the connection)"),
                                     std::string("peer ps:0 died (closed the connection)"),
                                     std::string("out of memory"), std::string("")}) {
    Simulation simulation(ThreeWorkers(0));
    simulation.StartRunning();
    simulation.ExitSaying("Worker", 0, 138, message);
    ReconcileResult result = simulation.Step();
    EXPECT_EQ(JobState(result.status), "Failed") << message;
    EXPECT_THAT(Describe(result.actions), ::testing::Not(::testing::Contains("Terminate Worker 1")))
        << message;
  }
}

// The accused replica's own policy decides what follows its stop: under Never it fails the job.
TEST(PeerReportTest, AStoppedReplicaFollowsItsOwnRestartPolicy) {
  Job job = MakeJob({{"Chief", 1, kOnFailure}, {"Worker", 1, kNever}});
  Simulation simulation(job);
  simulation.StartRunning();
  simulation.ExitSaying("Chief", 0, 138, "peer worker:0 hung (no heartbeat for 30 s)");
  EXPECT_THAT(Describe(simulation.Step().actions),
              ElementsAre("Terminate Worker 0", "Restart Chief 0 (group)"));
  simulation.Exit("Worker", 0, 143);
  ReconcileResult result = simulation.Step();
  EXPECT_EQ(JobState(result.status), "Failed");
  EXPECT_EQ(result.status.conditions.back().message,
            "TFJob kubeflow/mnist has failed because 1 Worker replica(s) failed: worker-0 exited "
            "with code 143 (128 + SIGTERM) at 2021-09-06T11:48:10Z after 0 restarts.");
}

// On Kubernetes the kubelet restarts an OnFailure container in place: the executor only sees the
// replica running again with a higher restart count. Past the limit, that fails the job too.
TEST(ReconcileTest, RestartsInPlacePastTheLimitFailTheJob) {
  Job job = MakeJob({{"Worker", 1, kOnFailure}});
  job.run_policy.backoff_limit = 2;
  Simulation simulation(job);
  simulation.StartRunning();
  simulation.Replica("Worker", 0).restart_count = 2;
  EXPECT_EQ(JobState(simulation.Step().status), "Running");
  simulation.Replica("Worker", 0).restart_count = 3;
  ReconcileResult result = simulation.Step();
  EXPECT_EQ(JobState(result.status), "Failed");
  EXPECT_EQ(result.status.conditions.back().message,
            "Job mnist has failed because it has reached the specified backoff limit: worker-0 "
            "was restarted in place 3 times");
  ASSERT_EQ(result.actions.size(), 1u);
  EXPECT_EQ(result.actions[0].kind, Action::Kind::kStop);
}

// ---- activeDeadlineSeconds (§3.11) ----

struct DeadlineCase {
  int elapsed_seconds;
  bool fails;
};

void PrintTo(const DeadlineCase& c, std::ostream* out) { *out << c.elapsed_seconds << "s"; }

class DeadlineTest : public ::testing::TestWithParam<DeadlineCase> {};

TEST_P(DeadlineTest, MeasuredFromStartTime) {
  Job job = MakeJob({{"Worker", 2, kNever}});
  job.run_policy.active_deadline_seconds = 60;
  Simulation simulation(job);
  EXPECT_EQ(simulation.Step().requeue_at, kStart + seconds(60));
  simulation.Advance(seconds(GetParam().elapsed_seconds));
  ReconcileResult result = simulation.Step();
  if (!GetParam().fails) {
    EXPECT_EQ(JobState(result.status), "Running");
    EXPECT_EQ(result.requeue_at, kStart + seconds(60));
    EXPECT_THAT(result.actions, IsEmpty());
    return;
  }
  const std::string message =
      "Job mnist has failed because it was active longer than specified deadline";
  EXPECT_EQ(JobState(result.status), "Failed");
  EXPECT_EQ(result.status.conditions.back().message, message);
  EXPECT_THAT(Describe(result.events), ElementsAre("Normal TFJobFailed: " + message));
  EXPECT_THAT(Describe(result.actions), ElementsAre("Stop Worker 0", "Stop Worker 1"));
  EXPECT_EQ(result.status.completion_time, simulation.now());
  EXPECT_FALSE(result.requeue_at);
  EXPECT_TRUE(result.finished);
}

INSTANTIATE_TEST_SUITE_P(Elapsed, DeadlineTest,
                         ::testing::Values(DeadlineCase{59, false}, DeadlineCase{60, true},
                                           DeadlineCase{61, true}),
                         [](const ::testing::TestParamInfo<DeadlineCase>& info) {
                           return "After" + std::to_string(info.param.elapsed_seconds) + "s";
                         });

TEST(ReconcileTest, DeadlineFailureRequeuesForTtl) {
  Job job = MakeJob({{"Worker", 1, kNever}});
  job.run_policy.active_deadline_seconds = 60;
  job.run_policy.ttl_seconds_after_finished = 300;
  Simulation simulation(job);
  simulation.StartRunning();
  simulation.Advance(seconds(70));
  ReconcileResult result = simulation.Step();
  EXPECT_EQ(JobState(result.status), "Failed");
  EXPECT_EQ(result.requeue_at, kStart + seconds(370));
}

// ---- cleanPodPolicy after the job finished (§3.8) ----

struct CleanCase {
  CleanPodPolicy policy;
  std::vector<std::string> stopped;
};

void PrintTo(const CleanCase& c, std::ostream* out) { *out << ToString(c.policy); }

class CleanPodPolicyTest : public ::testing::TestWithParam<CleanCase> {};

TEST_P(CleanPodPolicyTest, AppliesOnSuccess) {
  Job job = MakeJob({{"Worker", 3, kNever}, {"PS", 1, kNever}});
  job.run_policy.clean_pod_policy = GetParam().policy;
  Simulation simulation(job);
  simulation.StartRunning();
  simulation.Exit("Worker", 1, 0);
  simulation.Step();
  simulation.SetPhase("Worker", 2, ReplicaPhase::kPending);
  simulation.Exit("Worker", 0, 0);
  ReconcileResult result = simulation.Step();
  EXPECT_EQ(JobState(result.status), "Succeeded");
  std::vector<std::string> expected = GetParam().stopped;
  EXPECT_THAT(Describe(result.actions), ::testing::UnorderedElementsAreArray(expected));
  // The executor removed what it stopped: nothing is stopped twice.
  ReconcileResult again = simulation.Step();
  EXPECT_THAT(again.actions, IsEmpty());
  EXPECT_THAT(again.events, IsEmpty());
  EXPECT_TRUE(again.finished);
}

INSTANTIATE_TEST_SUITE_P(
    Policies, CleanPodPolicyTest,
    ::testing::Values(CleanCase{CleanPodPolicy::kNone, {}},
                      CleanCase{CleanPodPolicy::kRunning, {"Stop PS 0", "Stop Worker 2"}},
                      CleanCase{CleanPodPolicy::kAll,
                                {"Stop PS 0", "Stop Worker 0", "Stop Worker 1", "Stop Worker 2"}}),
    [](const ::testing::TestParamInfo<CleanCase>& info) { return ToString(info.param.policy); });

// ---- ttlSecondsAfterFinished (§3.8) ----

TEST(ReconcileTest, TtlRequeuesThenDeletesTheJob) {
  Job job = MakeJob({{"Worker", 1, kNever}});
  job.run_policy.ttl_seconds_after_finished = 30;
  Simulation simulation(job);
  simulation.StartRunning();
  simulation.Advance(seconds(100));
  simulation.Exit("Worker", 0, 0);
  ReconcileResult finished = simulation.Step();
  const Time completion = kStart + seconds(100);
  EXPECT_EQ(finished.status.completion_time, completion);
  EXPECT_EQ(finished.requeue_at, completion + seconds(30));

  simulation.Advance(seconds(29));
  ReconcileResult early = simulation.Step();
  EXPECT_THAT(early.actions, IsEmpty());
  EXPECT_EQ(early.requeue_at, completion + seconds(30));

  simulation.Advance(seconds(1));
  ReconcileResult expired = simulation.Step();
  EXPECT_THAT(Describe(expired.actions), ElementsAre("DeleteJob"));
  EXPECT_THAT(expired.events, IsEmpty());  // SuccessfulDeleteJob is the executor's
  EXPECT_TRUE(simulation.deleted());
}

TEST(ReconcileTest, ZeroTtlDeletesInTheFinishingPass) {
  Job job = MakeJob({{"Worker", 1, kNever}});
  job.run_policy.ttl_seconds_after_finished = 0;
  Simulation simulation(job);
  simulation.StartRunning();
  simulation.Exit("Worker", 0, 0);
  EXPECT_THAT(Describe(simulation.Step().actions), ElementsAre("DeleteJob"));
}

// ---- suspend (§3.10) ----

TEST(ReconcileTest, SuspendStopsEverythingAndResumeRestartsTheClock) {
  Job job = MakeJob({{"Worker", 2, kNever}, {"PS", 1, kNever}});
  job.run_policy.active_deadline_seconds = 100;
  job.run_policy.clean_pod_policy = CleanPodPolicy::kNone;  // ignored by suspend
  Simulation simulation(job);
  simulation.StartRunning();
  simulation.Advance(seconds(50));

  simulation.job().run_policy.suspend = true;
  ReconcileResult suspended = simulation.Step();
  EXPECT_THAT(Describe(suspended.actions),
              UnorderedElementsAre("Stop PS 0", "Stop Worker 0", "Stop Worker 1"));
  EXPECT_THAT(Describe(suspended.status.conditions),
              ElementsAre("Created True", "Running False", "Suspended True"));
  const JobCondition& running = suspended.status.conditions[1];
  EXPECT_EQ(running.reason, "TFJobSuspended");
  EXPECT_EQ(running.message, "TFJob mnist is suspended.");
  EXPECT_EQ(suspended.status.conditions[2].reason, "TFJobSuspended");
  EXPECT_THAT(Describe(suspended.events),
              ElementsAre("Normal TFJobSuspended: TFJob mnist is suspended."));
  EXPECT_EQ(suspended.status.replica_statuses.at("Worker").active, 0);
  EXPECT_EQ(suspended.status.replica_statuses.at("PS").active, 0);
  EXPECT_FALSE(suspended.requeue_at);  // no deadline while suspended

  simulation.Advance(seconds(500));
  ReconcileResult still = simulation.Step();
  EXPECT_THAT(still.actions, IsEmpty());
  EXPECT_THAT(still.events, IsEmpty());
  EXPECT_EQ(JobState(still.status), "Suspended");

  simulation.Advance(seconds(10));
  simulation.job().run_policy.suspend = false;
  const Time resumed_at = simulation.now();
  ReconcileResult resumed = simulation.Step();
  EXPECT_EQ(resumed.status.start_time, resumed_at);
  EXPECT_EQ(resumed.requeue_at, resumed_at + seconds(100));
  EXPECT_THAT(Describe(resumed.events),
              ElementsAre("Normal TFJobResumed: TFJob mnist is resumed."));
  const JobCondition& suspended_condition = resumed.status.conditions.back();
  EXPECT_EQ(suspended_condition.type, "Suspended");
  EXPECT_EQ(suspended_condition.status, "False");
  EXPECT_EQ(suspended_condition.reason, "TFJobResumed");
  EXPECT_EQ(suspended_condition.message, "TFJob mnist is resumed.");
  EXPECT_THAT(Describe(resumed.actions),
              ElementsAre("Start PS 0", "Start Worker 0", "Start Worker 1"));

  ReconcileResult running_again = simulation.Step();
  EXPECT_EQ(JobState(running_again.status), "Running");
  EXPECT_FALSE(IsSuspended(running_again.status));
}

TEST(ReconcileTest, JobCreatedSuspendedStartsNothing) {
  Job job = MakeJob({{"Worker", 1, kNever}});
  job.run_policy.suspend = true;
  Simulation simulation(job);
  ReconcileResult result = simulation.Step();
  EXPECT_THAT(Describe(result.status.conditions), ElementsAre("Created True", "Suspended True"));
  EXPECT_THAT(result.actions, IsEmpty());
  EXPECT_FALSE(result.status.start_time);
  EXPECT_TRUE(IsSuspended(result.status));
}

TEST(ReconcileTest, FinishedJobIgnoresSuspend) {
  Simulation simulation(MakeJob({{"Worker", 1, kNever}}));
  simulation.StartRunning();
  simulation.Exit("Worker", 0, 0);
  simulation.Step();
  simulation.job().run_policy.suspend = true;
  ReconcileResult result = simulation.Step();
  EXPECT_EQ(JobState(result.status), "Succeeded");
  EXPECT_THAT(result.events, IsEmpty());
}

// ---- Failed is terminal; dynamic workers ----

TEST(ReconcileTest, FailedJobChangesNoMore) {
  Simulation simulation(MakeJob({{"Worker", 2, kNever}, {"PS", 1, kNever}}));
  simulation.StartRunning();
  simulation.Exit("PS", 0, 1);
  ReconcileResult failed = simulation.Step();
  ASSERT_EQ(JobState(failed.status), "Failed");
  simulation.Advance(seconds(60));
  simulation.Exit("Worker", 0, 0);
  simulation.Exit("Worker", 1, 3);
  ReconcileResult later = simulation.Step();
  EXPECT_THAT(later.events, IsEmpty());
  EXPECT_THAT(later.actions, IsEmpty());
  EXPECT_EQ(JobState(later.status), "Failed");
  EXPECT_EQ(later.status.completion_time, failed.status.completion_time);
  EXPECT_THAT(Describe(later.status.conditions),
              ElementsAre("Created True", "Running False", "Failed True"));
}

TEST(ReconcileTest, DynamicWorkerFailuresDoNotFailTheJob) {
  for (RestartPolicy policy : {kNever, kExitCode}) {
    SCOPED_TRACE(ToString(policy));
    Job job = MakeJob({{"Worker", 3, policy}, {"PS", 1, policy}});
    job.kind_spec[kEnableDynamicWorkerField] = true;
    Simulation simulation(job);
    simulation.StartRunning();
    simulation.Exit("Worker", 1, 1);
    ReconcileResult result = simulation.Step();
    EXPECT_EQ(JobState(result.status), "Running");
    EXPECT_EQ(result.status.replica_statuses.at("Worker").failed, 1);
    EXPECT_EQ(result.events.size(), 1u);  // ExitedWithCode only
    EXPECT_THAT(simulation.Step().events, IsEmpty());
    simulation.Exit("Worker", 0, 0);
    EXPECT_EQ(JobState(simulation.Step().status), "Succeeded");
  }
  Job job = MakeJob({{"Worker", 1, kNever}, {"PS", 1, kNever}});
  job.kind_spec[kEnableDynamicWorkerField] = true;
  Simulation simulation(job);
  simulation.StartRunning();
  simulation.Exit("PS", 0, 1);
  EXPECT_EQ(JobState(simulation.Step().status), "Failed");
}

// ---- SetCondition (§3.9) ----

class SetConditionTest : public ::testing::Test {
 protected:
  const Time t1_ = kStart;
  const Time t2_ = kStart + seconds(10);
  JobStatus status_;
};

TEST_F(SetConditionTest, SameStatusAndReasonChangesNothing) {
  SetCondition(status_, "Running", "True", "TFJobRunning", "first", t1_);
  SetCondition(status_, "Created", "True", "TFJobCreated", "created", t1_);
  SetCondition(status_, "Running", "True", "TFJobRunning", "second", t2_);
  EXPECT_THAT(Describe(status_.conditions), ElementsAre("Running True", "Created True"));
  EXPECT_EQ(status_.conditions[0].message, "first");
  EXPECT_EQ(status_.conditions[0].last_update_time, t1_);
}

TEST_F(SetConditionTest, NewReasonKeepsTransitionTimeAndMovesToTheEnd) {
  SetCondition(status_, "Running", "False", "TFJobSuspended", "suspended", t1_);
  SetCondition(status_, "Created", "True", "TFJobCreated", "created", t1_);
  SetCondition(status_, "Running", "False", "TFJobOther", "other", t2_);
  EXPECT_THAT(Describe(status_.conditions), ElementsAre("Created True", "Running False"));
  EXPECT_EQ(status_.conditions[1].last_transition_time, t1_);
  EXPECT_EQ(status_.conditions[1].last_update_time, t2_);
  EXPECT_EQ(status_.conditions[1].reason, "TFJobOther");
}

TEST_F(SetConditionTest, NewStatusIsATransition) {
  SetCondition(status_, "Suspended", "True", "TFJobSuspended", "s", t1_);
  SetCondition(status_, "Suspended", "False", "TFJobResumed", "r", t2_);
  ASSERT_EQ(status_.conditions.size(), 1u);
  EXPECT_EQ(status_.conditions[0].last_transition_time, t2_);
}

TEST_F(SetConditionTest, RunningAndRestartingTurnEachOtherOff) {
  SetCondition(status_, "Created", "True", "TFJobCreated", "c", t1_);
  SetCondition(status_, "Running", "True", "TFJobRunning", "r", t1_);
  SetCondition(status_, "Restarting", "True", "TFJobRestarting", "x", t2_);
  EXPECT_THAT(Describe(status_.conditions),
              ElementsAre("Created True", "Running False", "Restarting True"));
  SetCondition(status_, "Running", "True", "TFJobRunning", "r", t2_);
  EXPECT_THAT(Describe(status_.conditions),
              ElementsAre("Created True", "Restarting False", "Running True"));
  EXPECT_EQ(JobState(status_), "Running");
}

TEST_F(SetConditionTest, FinishingTurnsRunningOffButKeepsIt) {
  for (const std::string finish : {"Succeeded", "Failed"}) {
    SCOPED_TRACE(finish);
    JobStatus status;
    SetCondition(status, "Created", "True", "TFJobCreated", "c", t1_);
    SetCondition(status, "Running", "True", "TFJobRunning", "r", t1_);
    SetCondition(status, finish, "True", "TFJob" + finish, "done", t2_);
    EXPECT_THAT(Describe(status.conditions),
                ElementsAre("Created True", "Running False", finish + " True"));
    // The operator flips the status only.
    EXPECT_EQ(status.conditions[1].last_transition_time, t1_);
    EXPECT_EQ(JobState(status), finish);
    EXPECT_TRUE(IsFinished(status));
  }
}

TEST_F(SetConditionTest, FailedIsTerminal) {
  SetCondition(status_, "Failed", "True", "TFJobFailed", "f", t1_);
  SetCondition(status_, "Running", "True", "TFJobRunning", "r", t2_);
  SetCondition(status_, "Succeeded", "True", "TFJobSucceeded", "s", t2_);
  SetCondition(status_, "Failed", "False", "TFJobOther", "o", t2_);
  EXPECT_THAT(Describe(status_.conditions), ElementsAre("Failed True"));
  EXPECT_TRUE(IsFailed(status_));
  EXPECT_FALSE(IsSucceeded(status_));
}

TEST(JobStateTest, EmptyWithoutConditions) { EXPECT_EQ(JobState(JobStatus{}), ""); }

// ---- Odds and ends ----

TEST(ReconcileTest, StatusTimesAreWholeSeconds) {
  Job job = MakeJob({{"Worker", 1, kNever}});
  const Time now = kStart + std::chrono::milliseconds(1750);
  ReconcileResult result = Reconcile(job, JobStatus{}, {}, now);
  EXPECT_EQ(result.status.start_time, kStart + seconds(1));
  EXPECT_EQ(result.status.conditions[0].last_update_time, kStart + seconds(1));
}

TEST(RestartBackoffTest, DoublesFromOneSecondUpToAMinute) {
  EXPECT_EQ(RestartBackoff(0), seconds(1));
  EXPECT_EQ(RestartBackoff(1), seconds(2));
  EXPECT_EQ(RestartBackoff(5), seconds(32));
  EXPECT_EQ(RestartBackoff(6), seconds(60));
  EXPECT_EQ(RestartBackoff(1000), seconds(60));
  EXPECT_EQ(RestartBackoff(-1), seconds(1));
}

TEST(ReplicaPhaseTest, NamedAsPodPhases) {
  EXPECT_EQ(ToString(ReplicaPhase::kPending), "Pending");
  EXPECT_EQ(ToString(ReplicaPhase::kRunning), "Running");
  EXPECT_EQ(ToString(ReplicaPhase::kSucceeded), "Succeeded");
  EXPECT_EQ(ToString(ReplicaPhase::kFailed), "Failed");
}

}  // namespace
}  // namespace cohort::job
