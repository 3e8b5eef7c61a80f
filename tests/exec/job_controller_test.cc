// JobController over a fake backend and an in-memory store: the control loop's paths (restart
// with back-off, backoff limit, suspend and resume, TTL deletion, active deadline, a replica that
// cannot start, a stop asked by the user) on a fake clock, without a process.
#include "exec/job_controller.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <csignal>
#include <sstream>

#include "exec/memory_job_store.h"
#include "exec_test_support.h"
#include "fake_replica_backend.h"
#include "job/log_policy.h"
#include "job/spec_parser.h"
#include "job/status_json.h"
#include "testing/test_kind.h"

namespace cohort::exec {
namespace {

using std::chrono::seconds;
using ::testing::Contains;
using ::testing::HasSubstr;
using ::testing::Not;
using Exit = FakeReplicaBackend::Exit;

const ReplicaId kWorker0{"Worker", 0};
const ReplicaId kWorker1{"Worker", 1};

class JobControllerTest : public ::testing::Test {
 protected:
  // Creates job "job" of `workers` Worker replicas with `restart_policy` and `run_policy`.
  void CreateJob(int workers, const std::string& restart_policy, const std::string& run_policy = "",
                 const std::string& log_policies = "") {
    std::ostringstream yaml;
    yaml << "apiVersion: kubeflow.org/v1\nkind: TFJob\nmetadata:\n  name: job\n";
    if (!log_policies.empty()) {
      yaml << "  annotations:\n    cohort.dev/log-policies: '" << log_policies << "'\n";
    }
    yaml << "spec:\n";
    if (!run_policy.empty()) yaml << "  runPolicy: " << run_policy << "\n";
    yaml << "  tfReplicaSpecs:\n    Worker:\n      replicas: " << workers
         << "\n      restartPolicy: " << restart_policy
         << "\n      template:\n        spec:\n          containers:\n"
         << "            - {name: tensorflow, image: test}\n";
    job::Job job = JobFromYaml(yaml.str());
    store_.SetCreationTime(start_);
    ASSERT_TRUE(store_.CreateJob(job, nullptr).ok());
    std::map<std::string, int> ports;
    for (int index = 0; index < workers; ++index)
      ports["worker-" + std::to_string(index)] = 4000 + index;
    ASSERT_TRUE(store_.WriteEndpoints(key_, ports).ok());
  }

  StatusOr<job::JobStatus> Run(FakeReplicaBackend& backend) {
    ControllerObserver observer;
    observer.on_event = [this](const job::Event& event) { reported_.push_back(event.reason); };
    controller_ =
        std::make_unique<JobController>(store_, backend, key_, observer, [this] { return now_; });
    return controller_->Run();
  }

  std::vector<std::string> StoredEventReasons() const {
    std::vector<std::string> reasons;
    StatusOr<std::vector<job::Event>> events = store_.ReadEvents(key_);
    for (const job::Event& event : *events) reasons.push_back(event.reason);
    return reasons;
  }

  static std::vector<std::string> ConditionTypes(const job::JobStatus& status) {
    std::vector<std::string> types;
    for (const job::JobCondition& condition : status.conditions) types.push_back(condition.type);
    return types;
  }

  const Time start_ = *ParseTime("2026-01-01T00:00:00Z");
  Time now_ = start_;
  MemoryJobStore store_;
  JobKey key_{"default", "job"};
  std::unique_ptr<JobController> controller_;
  std::vector<std::string> reported_;  // event reasons the observer saw
};

TEST_F(JobControllerTest, WorkersThatSucceedFinishTheJobAndLeaveTheirRows) {
  CreateJob(2, "Never");
  FakeReplicaBackend backend(&now_, [](const ReplicaId&, int) { return Exit{seconds(3), 0}; });
  StatusOr<job::JobStatus> status = Run(backend);
  ASSERT_TRUE(status.ok()) << status.status().ToString();
  EXPECT_TRUE(job::IsSucceeded(*status));
  ASSERT_EQ(backend.starts().size(), 2u);
  EXPECT_EQ(backend.starts()[0].restart_count, 0);

  // What the store holds is what Run returned, and every event the observer saw.
  StatusOr<job::JobStatus> stored = store_.ReadStatus(key_);
  ASSERT_TRUE(stored.ok());
  EXPECT_EQ(job::JobStatusToJson(*stored), job::JobStatusToJson(*status));
  EXPECT_EQ(StoredEventReasons(), reported_);
  EXPECT_EQ(std::count(reported_.begin(), reported_.end(), "SuccessfulCreatePod"), 2);

  std::vector<ReplicaRow> rows = store_.ReadReplicas(key_);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[1].name, "worker-1");
  EXPECT_EQ(rows[1].phase, "Succeeded");
  EXPECT_EQ(rows[1].port, 4001);
  EXPECT_EQ(rows[1].exit_code, 0);
  EXPECT_EQ(rows[1].pid, 0);
  EXPECT_EQ(rows[1].finished_at, start_ + seconds(3));
}

TEST_F(JobControllerTest, AFailedReplicaIsRestartedAfterItsBackOff) {
  CreateJob(1, "OnFailure");
  FakeReplicaBackend backend(&now_, [](const ReplicaId&, int run) {
    return run == 0 ? Exit{seconds(2), 1} : Exit{seconds(2), 0};
  });
  StatusOr<job::JobStatus> status = Run(backend);
  ASSERT_TRUE(status.ok()) << status.status().ToString();
  EXPECT_TRUE(job::IsSucceeded(*status));
  EXPECT_THAT(ConditionTypes(*status), Contains("Restarting"));

  ASSERT_EQ(backend.starts().size(), 2u);
  const auto& restart = backend.starts()[1];
  EXPECT_EQ(restart.restart_count, 1);
  EXPECT_EQ(restart.previous_exit_code, 1);
  Time exited = backend.starts()[0].at + seconds(2);
  EXPECT_GE(restart.at - exited, job::RestartBackoff(0));
  EXPECT_LT(restart.at - exited, job::RestartBackoff(0) + seconds(1));
  EXPECT_EQ(store_.ReadReplicas(key_)[0].restarts, 1);
}

TEST_F(JobControllerTest, TheBackOffGrowsUntilTheBackoffLimitFailsTheJob) {
  CreateJob(1, "OnFailure", "{backoffLimit: 2}");
  FakeReplicaBackend backend(&now_, [](const ReplicaId&, int) { return Exit{seconds(1), 1}; });
  StatusOr<job::JobStatus> status = Run(backend);
  ASSERT_TRUE(status.ok()) << status.status().ToString();
  ASSERT_TRUE(job::IsFailed(*status));
  EXPECT_THAT(status->conditions.back().message,
              HasSubstr("backoff limit: worker-0 exited with code 1 at "));
  EXPECT_THAT(status->conditions.back().message, HasSubstr(" after 2 restarts"));

  // The failed replica keeps its row, with every restart it made and its last exit.
  std::vector<ReplicaRow> rows = store_.ReadReplicas(key_);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].name, "worker-0");
  EXPECT_EQ(rows[0].phase, "Failed");
  EXPECT_EQ(rows[0].restarts, 2);
  EXPECT_EQ(rows[0].exit_code, 1);
  EXPECT_EQ(rows[0].pid, 0);

  ASSERT_EQ(backend.starts().size(), 3u);
  for (int restart = 1; restart <= 2; ++restart) {
    auto gap = backend.starts()[restart].at - (backend.starts()[restart - 1].at + seconds(1));
    EXPECT_GE(gap, job::RestartBackoff(restart - 1)) << "restart " << restart;
    EXPECT_LT(gap, job::RestartBackoff(restart - 1) + seconds(1)) << "restart " << restart;
  }
}

// Worker 1 hangs: it never exits by itself. Worker 0 gives up on it, exits 138 leaving a peer
// report, and the controller stops worker 1 as failed (StopMode::kAsFailed), so that its restart
// policy restarts it; the episode uses one restart of backoffLimit 1, and the job completes.
TEST_F(JobControllerTest, AReplicaItsPeersReportHungIsStoppedAndRestarted) {
  CreateJob(2, "OnFailure", "{backoffLimit: 1}");
  FakeReplicaBackend backend(&now_, [](const ReplicaId& id, int run) -> std::optional<Exit> {
    if (run > 0) return Exit{seconds(5), 0};
    if (id == kWorker1) return std::nullopt;  // hung: runs until stopped
    return Exit{seconds(30), 138, "peer worker:1 hung (no heartbeat for 30 s)"};
  });
  StatusOr<job::JobStatus> status = Run(backend);
  ASSERT_TRUE(status.ok()) << status.status().ToString();
  EXPECT_TRUE(job::IsSucceeded(*status));
  ASSERT_FALSE(backend.stops().empty());
  const FakeReplicaBackend::StopRecord& stop = backend.stops().front();
  EXPECT_EQ(stop.id, kWorker1);
  EXPECT_EQ(stop.mode, StopMode::kAsFailed);
  EXPECT_EQ(stop.at, start_ + seconds(30));
  EXPECT_THAT(StoredEventReasons(), Contains("Unhealthy"));
  std::vector<ReplicaRow> rows = store_.ReadReplicas(key_);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].restarts, 1);
  EXPECT_EQ(rows[1].restarts, 1);
  for (const auto& start : backend.starts()) {
    if (start.restart_count == 1 && start.id == kWorker1) {
      EXPECT_EQ(start.previous_exit_code, 143);
    }
  }
}

// The other replicas, still running when the limit fails the job, are stopped: none stays Running
// or active, and the failing one keeps its restarts.
TEST_F(JobControllerTest, AfterTheBackoffLimitNoReplicaIsRunningOrActive) {
  CreateJob(3, "OnFailure", "{backoffLimit: 2}");
  FakeReplicaBackend backend(&now_, [](const ReplicaId& id, int) -> std::optional<Exit> {
    if (id.index == 1) return Exit{seconds(1), 3};
    return std::nullopt;
  });
  StatusOr<job::JobStatus> status = Run(backend);
  ASSERT_TRUE(status.ok()) << status.status().ToString();
  ASSERT_TRUE(job::IsFailed(*status));
  EXPECT_THAT(status->conditions.back().message, HasSubstr("worker-1 exited with code 3 at "));
  const job::ReplicaStatus& workers = status->replica_statuses.at("Worker");
  EXPECT_EQ(workers.active, 0);
  EXPECT_EQ(workers.failed, 1);
  EXPECT_EQ(backend.running(), 0);

  std::vector<ReplicaRow> rows = store_.ReadReplicas(key_);
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[1].name, "worker-1");
  EXPECT_EQ(rows[1].phase, "Failed");
  EXPECT_EQ(rows[1].restarts, 2);
  EXPECT_EQ(rows[1].exit_code, 3);
  for (const ReplicaRow& row : rows) {
    EXPECT_NE(row.phase, "Running") << row.name;
    EXPECT_EQ(row.pid, 0) << row.name;
  }
  EXPECT_EQ(rows[0].phase, "Stopped");
  EXPECT_EQ(rows[2].phase, "Stopped");
}

// Under Never one failed worker fails the job while the others run: they are stopped, and the
// final status counts none of them as active.
TEST_F(JobControllerTest, AFailedJobCountsNoReplicaAsActive) {
  CreateJob(3, "Never");
  FakeReplicaBackend backend(&now_, [](const ReplicaId& id, int) -> std::optional<Exit> {
    if (id.index == 2) return Exit{seconds(1), 1};
    return std::nullopt;
  });
  StatusOr<job::JobStatus> status = Run(backend);
  ASSERT_TRUE(status.ok()) << status.status().ToString();
  ASSERT_TRUE(job::IsFailed(*status));
  EXPECT_EQ(status->replica_statuses.at("Worker").active, 0);
  EXPECT_EQ(status->replica_statuses.at("Worker").failed, 1);
  StatusOr<job::JobStatus> stored = store_.ReadStatus(key_);
  ASSERT_TRUE(stored.ok());
  EXPECT_EQ(stored->replica_statuses.at("Worker").active, 0);
  EXPECT_EQ(backend.running(), 0);
}

// What each cleanPodPolicy leaves of a job that failed while two of its workers ran (Never, worker
// 2 exits 1), as Kubeflow's operator does (docs/behaviour.md §3.8): None keeps every pod, Running
// deletes the running ones and keeps the finished one, All deletes every one. Locally nothing
// outlives the job, so under None the running workers are stopped as well, but kept: each row
// stays listed with its final phase and exit code (SIGTERM's 143), and event StoppedPod says why.
TEST_F(JobControllerTest, EachCleanPodPolicyKeepsTheRowsKubeflowKeeps) {
  struct Expected {
    std::string policy;
    std::vector<bool> removed;  // worker-0, worker-1, worker-2
    int deleted_events;
    int stopped_events;
  };
  for (const Expected& expected : {Expected{"None", {false, false, false}, 0, 2},
                                   Expected{"Running", {true, true, false}, 2, 0},
                                   Expected{"All", {true, true, true}, 2, 0}}) {
    SCOPED_TRACE("cleanPodPolicy " + expected.policy);
    if (store_.Exists(key_)) ASSERT_TRUE(store_.DeleteJob(key_).ok());
    reported_.clear();
    now_ = start_;
    CreateJob(3, "Never", "{cleanPodPolicy: " + expected.policy + "}");
    FakeReplicaBackend backend(&now_, [](const ReplicaId& id, int) -> std::optional<Exit> {
      if (id.index == 2) return Exit{seconds(1), 1};
      return std::nullopt;
    });
    StatusOr<job::JobStatus> status = Run(backend);
    ASSERT_TRUE(status.ok()) << status.status().ToString();
    ASSERT_TRUE(job::IsFailed(*status));
    EXPECT_EQ(backend.running(), 0);
    EXPECT_EQ(status->replica_statuses.at("Worker").active, 0);
    EXPECT_EQ(std::count(reported_.begin(), reported_.end(), "SuccessfulDeletePod"),
              expected.deleted_events);
    EXPECT_EQ(std::count(reported_.begin(), reported_.end(), "StoppedPod"),
              expected.stopped_events);
    std::vector<ReplicaRow> rows = store_.ReadReplicas(key_);
    ASSERT_EQ(rows.size(), 3u);
    for (size_t index = 0; index < rows.size(); ++index) {
      const ReplicaRow& row = rows[index];
      EXPECT_EQ(row.name, "worker-" + std::to_string(index));
      EXPECT_EQ(row.removed, expected.removed[index]) << row.name;
      EXPECT_EQ(row.pid, 0) << row.name;
    }
    EXPECT_EQ(rows[2].phase, "Failed");
    EXPECT_EQ(rows[2].exit_code, 1);
    if (expected.policy == "None") {
      for (int index : {0, 1}) {
        EXPECT_EQ(rows[index].phase, "Failed") << rows[index].name;
        EXPECT_EQ(rows[index].exit_code, 143) << rows[index].name;
        EXPECT_TRUE(rows[index].finished_at.has_value()) << rows[index].name;
      }
    }
  }
}

TEST_F(JobControllerTest, SuspendStopsTheRunningReplicaAndResumeStartsItAgain) {
  CreateJob(1, "Never");
  FakeReplicaBackend backend(&now_, [](const ReplicaId&, int run) -> std::optional<Exit> {
    if (run == 0) return std::nullopt;  // runs until stopped
    return Exit{seconds(1), 0};
  });
  bool suspended = false, resumed = false;
  int running_while_suspended = 0;
  backend.at_wait = [&](Time now) {
    if (!suspended && now >= start_ + seconds(5)) {
      ASSERT_TRUE(store_.SetSuspended(key_, true).ok());
      suspended = true;
    } else if (suspended && !resumed && now >= start_ + seconds(10)) {
      ASSERT_TRUE(store_.SetSuspended(key_, false).ok());
      resumed = true;
    } else if (suspended && !resumed && now > start_ + seconds(6)) {
      running_while_suspended += backend.running();
    }
  };
  StatusOr<job::JobStatus> status = Run(backend);
  ASSERT_TRUE(status.ok()) << status.status().ToString();
  EXPECT_TRUE(job::IsSucceeded(*status));
  EXPECT_THAT(ConditionTypes(*status), Contains("Suspended"));
  EXPECT_EQ(running_while_suspended, 0);

  ASSERT_FALSE(backend.stops().empty());
  EXPECT_EQ(backend.stops()[0].id, kWorker0);
  EXPECT_TRUE(backend.stops()[0].was_running);
  EXPECT_EQ(backend.stops()[0].mode, StopMode::kGraceful);
  EXPECT_GE(backend.stops()[0].at, start_ + seconds(5));
  ASSERT_EQ(backend.starts().size(), 2u);
  EXPECT_GE(backend.starts()[1].at, start_ + seconds(10));
  EXPECT_EQ(backend.starts()[1].restart_count, 0);  // a resumed job starts afresh
  EXPECT_THAT(reported_, Contains("SuccessfulDeletePod"));
}

// A TTL of 0 deletes the job as soon as it finishes; a longer one is left to whichever command
// looks at the job once it has run out (LocalJobs::Tidy), since the controller is gone by then.
TEST_F(JobControllerTest, ATtlOfZeroDeletesTheJobWhenItFinishes) {
  CreateJob(1, "Never", "{ttlSecondsAfterFinished: 0}");
  FakeReplicaBackend backend(&now_, [](const ReplicaId&, int) { return Exit{seconds(1), 0}; });
  StatusOr<job::JobStatus> status = Run(backend);
  ASSERT_TRUE(status.ok()) << status.status().ToString();
  EXPECT_TRUE(job::IsSucceeded(*status));
  EXPECT_FALSE(store_.Exists(key_));
  EXPECT_EQ(reported_.back(), "SuccessfulDeleteJob");
  EXPECT_LT(now_, start_ + seconds(2));
}

TEST_F(JobControllerTest, TheActiveDeadlineFailsTheJobAndStopsItsReplicas) {
  CreateJob(2, "Never", "{activeDeadlineSeconds: 3}");
  FakeReplicaBackend backend(&now_, [](const ReplicaId&, int) { return std::nullopt; });
  StatusOr<job::JobStatus> status = Run(backend);
  ASSERT_TRUE(status.ok()) << status.status().ToString();
  ASSERT_TRUE(job::IsFailed(*status));
  EXPECT_THAT(status->conditions.back().message,
              HasSubstr("active longer than specified deadline"));
  EXPECT_GE(now_, start_ + seconds(3));
  EXPECT_LT(now_, start_ + seconds(5));
  EXPECT_EQ(backend.running(), 0);
  EXPECT_EQ(std::count(reported_.begin(), reported_.end(), "SuccessfulDeletePod"), 2);
  // Stopped replicas are gone as deleted pods are, and their rows say so: none is Running.
  std::vector<ReplicaRow> rows = store_.ReadReplicas(key_);
  ASSERT_EQ(rows.size(), 2u);
  for (const ReplicaRow& row : rows) {
    EXPECT_TRUE(row.removed) << row.name;
    EXPECT_EQ(row.phase, "Stopped") << row.name;
    EXPECT_EQ(row.pid, 0) << row.name;
    EXPECT_FALSE(row.exit_code.has_value()) << row.name;
  }
  EXPECT_EQ(status->replica_statuses.at("Worker").active, 0);
}

TEST_F(JobControllerTest, AReplicaThatCannotStartFailsLikeAContainerThatExited) {
  CreateJob(1, "Never");
  FakeReplicaBackend backend(&now_, [](const ReplicaId&, int) { return Exit{seconds(1), 0}; });
  backend.refuse_to_start.insert(kWorker0);
  StatusOr<job::JobStatus> status = Run(backend);
  ASSERT_TRUE(status.ok()) << status.status().ToString();
  EXPECT_TRUE(job::IsFailed(*status));
  StatusOr<std::vector<job::Event>> events = store_.ReadEvents(key_);
  ASSERT_TRUE(events.ok());
  auto failed = std::find_if(events->begin(), events->end(), [](const job::Event& event) {
    return event.reason == "FailedCreatePod";
  });
  ASSERT_NE(failed, events->end());
  EXPECT_EQ(failed->message, "Error creating: cannot execute fake");
  std::vector<ReplicaRow> rows = store_.ReadReplicas(key_);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].phase, "Failed");
  EXPECT_EQ(rows[0].exit_code, 127);
}

TEST_F(JobControllerTest, AStopRequestFailsTheJobAndStopsEveryReplica) {
  CreateJob(2, "OnFailure");
  FakeReplicaBackend backend(&now_, [](const ReplicaId&, int) { return std::nullopt; });
  backend.at_wait = [&](Time now) {
    if (now >= start_ + seconds(2) && backend.stops().empty()) controller_->RequestStop(SIGINT);
  };
  StatusOr<job::JobStatus> status = Run(backend);
  ASSERT_TRUE(status.ok()) << status.status().ToString();
  ASSERT_TRUE(job::IsFailed(*status));
  EXPECT_EQ(status->conditions.back().message,
            "TFJob default/job was stopped by the user (Ctrl-C) before it finished.");
  ASSERT_EQ(backend.stops().size(), 2u);
  EXPECT_EQ(backend.stops()[0].id, kWorker0);
  EXPECT_EQ(backend.stops()[1].id, kWorker1);
  EXPECT_EQ(backend.running(), 0);
  EXPECT_EQ(backend.starts().size(), 2u);  // nothing restarted after the stop
}

// A replica that ignores SIGTERM is killed at once when the user asks a second time.
TEST_F(JobControllerTest, ASecondStopRequestKillsWithoutWaitingForTheGracePeriod) {
  CreateJob(2, "Never");
  FakeReplicaBackend backend(&now_, [](const ReplicaId&, int) { return std::nullopt; });
  backend.ignore_graceful_stops = true;
  int requests = 0;
  backend.at_wait = [&](Time now) {
    if ((requests == 0 && now >= start_ + seconds(2)) ||
        (requests == 1 && now >= start_ + seconds(4))) {
      controller_->RequestStop(SIGTERM);
      ++requests;
    }
  };
  StatusOr<job::JobStatus> status = Run(backend);
  ASSERT_TRUE(status.ok()) << status.status().ToString();
  EXPECT_THAT(status->conditions.back().message, HasSubstr("was stopped by signal 15"));
  std::set<ReplicaId> killed;
  for (const auto& stop : backend.stops()) {
    if (stop.mode == StopMode::kNow) {
      EXPECT_GE(stop.at, start_ + seconds(4));
      killed.insert(stop.id);
    }
  }
  EXPECT_EQ(killed, (std::set<ReplicaId>{kWorker0, kWorker1}));
  EXPECT_EQ(backend.running(), 0);
  // cleanPodPolicy None (the default) keeps both, killed.
  for (const ReplicaRow& row : store_.ReadReplicas(key_)) {
    EXPECT_FALSE(row.removed) << row.name;
    EXPECT_EQ(row.phase, "Failed") << row.name;
    EXPECT_EQ(row.exit_code, 137) << row.name;
  }
}

// ---- Log policies, the failure message and the kept log lines ----

// `exit`, whose run wrote `output`.
Exit Writing(Exit exit, std::vector<std::string> output) {
  exit.output = std::move(output);
  return exit;
}

TEST_F(JobControllerTest, APermanentLogPolicyStopsTheRestartsAndTheMessageQuotesTheLine) {
  CreateJob(2, "OnFailure", "",
            R"([{"name": "cuda-oom", "pattern": "CUDA out of memory", "action": "permanent"}])");
  FakeReplicaBackend backend(&now_, [](const ReplicaId& id, int) -> std::optional<Exit> {
    if (id.index == 0) return std::nullopt;
    return Writing(Exit{seconds(2), 1},
                   {"step 10", "RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB",
                    "Traceback follows", ""});
  });
  StatusOr<job::JobStatus> status = Run(backend);
  ASSERT_TRUE(status.ok()) << status.status().ToString();
  ASSERT_TRUE(job::IsFailed(*status));
  EXPECT_EQ(backend.starts().size(), 2u);  // worker-1 was not restarted
  EXPECT_EQ(status->conditions.back().message,
            "TFJob default/job has failed because 1 Worker replica(s) failed: worker-1 exited "
            "with code 1 at 2026-01-01T00:00:02Z after 0 restarts; its log: \"RuntimeError: CUDA "
            "out of memory. Tried to allocate 2.00 GiB\" (log policy cuda-oom: permanent).");
  // The row keeps the run's last lines (blank ones left out) after the job has ended.
  std::vector<ReplicaRow> rows = store_.ReadReplicas(key_);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[1].phase, "Failed");
  EXPECT_THAT(rows[1].last_log_lines,
              ::testing::ElementsAre("step 10",
                                     "RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB",
                                     "Traceback follows"));
}

// A full disk is permanent by Cohort's own rule: a restart would redo the work only to fill the
// same disk again.
TEST_F(JobControllerTest, AFullDiskIsNotRestarted) {
  CreateJob(1, "OnFailure");
  FakeReplicaBackend backend(&now_, [](const ReplicaId&, int) -> std::optional<Exit> {
    return Writing(Exit{seconds(2), 3}, {"epoch 1/3: 312 steps",
                                         "cohort-train: error: I/O error: cannot write "
                                         "/ckpt/.ckpt-1.pt.tmp7: No space left on device"});
  });
  StatusOr<job::JobStatus> status = Run(backend);
  ASSERT_TRUE(status.ok()) << status.status().ToString();
  ASSERT_TRUE(job::IsFailed(*status));
  EXPECT_EQ(backend.starts().size(), 1u);
  EXPECT_THAT(status->conditions.back().message,
              ::testing::HasSubstr("No space left on device\" (log policy disk-full: permanent)"));
}

TEST_F(JobControllerTest, PoliciesFromTheConfigApplyAfterTheJobsOwn) {
  CreateJob(1, "OnFailure", "{backoffLimit: 1}",
            R"([{"pattern": "transient", "action": "retryable"}])");
  FakeReplicaBackend backend(&now_, [](const ReplicaId&, int run) {
    return Writing(Exit{seconds(1), 1}, {run == 0 ? "transient disk error" : "disk full"});
  });
  StatusOr<std::vector<job::LogPolicy>> config = job::ParseLogPolicies(
      nlohmann::json::parse(R"([{"pattern": "disk", "action": "permanent"}])"), "config");
  ASSERT_TRUE(config.ok());
  controller_ = std::make_unique<JobController>(store_, backend, key_, ControllerObserver{},
                                                [this] { return now_; });
  controller_->AddLogPolicies(*config);
  StatusOr<job::JobStatus> status = controller_->Run();
  ASSERT_TRUE(status.ok()) << status.status().ToString();
  ASSERT_TRUE(job::IsFailed(*status));
  // The first failure matched both: the job's retryable rule decided, and it was restarted. The
  // second matched only the config's permanent rule.
  EXPECT_EQ(backend.starts().size(), 2u);
  EXPECT_THAT(status->conditions.back().message,
              HasSubstr("after 1 restart; its log: \"disk full\" (log policy disk: permanent)"));
}

// Without a policy the failure still says why, in the replica's last line; a replica that keeps
// failing ends the job with its name, exit code and that line (issue 15's done-when).
TEST_F(JobControllerTest, AWorkerThatKeepsFailingEndsTheJobNamingItsCodeAndLastLine) {
  CreateJob(2, "OnFailure", "{backoffLimit: 2}");
  FakeReplicaBackend backend(&now_, [](const ReplicaId& id, int) -> std::optional<Exit> {
    if (id.index == 0) return std::nullopt;
    return Writing(Exit{seconds(1), 3}, {"loading data", "error: cannot open /data/train.csv"});
  });
  StatusOr<job::JobStatus> status = Run(backend);
  ASSERT_TRUE(status.ok()) << status.status().ToString();
  ASSERT_TRUE(job::IsFailed(*status));
  const std::string& message = status->conditions.back().message;
  EXPECT_THAT(message, HasSubstr("worker-1 exited with code 3 at "));
  EXPECT_THAT(message, HasSubstr("after 2 restarts; its last log line: \"error: cannot open "
                                 "/data/train.csv\""));
}

// A usage hint after the error (as a refused flag ends) is not quoted as the reason.
TEST_F(JobControllerTest, TheFailureQuotesTheErrorLineNotTheHintAfterIt) {
  CreateJob(1, "Never");
  FakeReplicaBackend backend(&now_, [](const ReplicaId&, int) -> std::optional<Exit> {
    return Writing(Exit{seconds(1), 2},
                   {"cohort-train: error: The following argument was not expected: --bogus",
                    "Run cohort-train --help for usage."});
  });
  StatusOr<job::JobStatus> status = Run(backend);
  ASSERT_TRUE(status.ok()) << status.status().ToString();
  ASSERT_TRUE(job::IsFailed(*status));
  EXPECT_THAT(status->conditions.back().message,
              HasSubstr("its last error line: \"cohort-train: error: The following argument was "
                        "not expected: --bogus\""));
}

TEST_F(JobControllerTest, AReplicaThatCannotStartSaysWhyInTheJobsMessage) {
  CreateJob(1, "Never");
  FakeReplicaBackend backend(&now_, [](const ReplicaId&, int) { return Exit{seconds(1), 0}; });
  backend.refuse_to_start.insert(kWorker0);
  StatusOr<job::JobStatus> status = Run(backend);
  ASSERT_TRUE(status.ok()) << status.status().ToString();
  ASSERT_TRUE(job::IsFailed(*status));
  EXPECT_THAT(status->conditions.back().message,
              HasSubstr("worker-0 exited with code 127 at 2026-01-01T00:00:00Z after 0 restarts; "
                        "it could not be started: cannot execute fake."));
}

// ---- The status is true at every moment: a table over the controller's runs ----

struct StatusCase {
  std::string name;
  int workers;
  std::string restart_policy;
  std::string run_policy;
  FakeReplicaBackend::Script script;
  std::optional<seconds> suspend_at;  // suspended then, resumed 5 s later
};

void PrintTo(const StatusCase& c, std::ostream* out) { *out << c.name; }

class StatusTruthTest : public JobControllerTest,
                        public ::testing::WithParamInterface<StatusCase> {};

// At every wait of the controller (what `get` and `describe` read while it rests) and after the
// end: ACTIVE is the number of rows Running, no row is Running once the job has finished,
// ACTIVE + SUCCEEDED + FAILED never exceed the replicas, and RESTARTS never shrinks, across
// suspend and resume too.
TEST_P(StatusTruthTest, CountsMatchTheRowsAndRestartsNeverShrink) {
  const StatusCase& c = GetParam();
  CreateJob(c.workers, c.restart_policy, c.run_policy);
  FakeReplicaBackend backend(&now_, c.script);
  int last_restarts = 0;
  int checks = 0;
  bool suspended = false, resumed = false;
  auto check = [&](const std::string& when) {
    ++checks;
    StatusOr<job::JobStatus> status = store_.ReadStatus(key_);
    ASSERT_TRUE(status.ok());
    std::vector<ReplicaRow> rows = store_.ReadReplicas(key_);
    int running = 0, restarts = 0;
    for (const ReplicaRow& row : rows) {
      running += !row.removed && row.phase == "Running";
      restarts += row.restarts;
      if (job::IsFinished(*status)) {
        EXPECT_NE(row.phase, "Running") << when << ": " << row.name;
        EXPECT_NE(row.phase, "Pending") << when << ": " << row.name;
      }
      if (row.phase != "Running" && row.phase != "Terminating") {
        EXPECT_EQ(row.pid, 0) << when << ": " << row.name;
      }
    }
    const job::ReplicaStatus counts = status->replica_statuses.count("Worker")
                                          ? status->replica_statuses.at("Worker")
                                          : job::ReplicaStatus{};
    EXPECT_EQ(counts.active, running) << when;
    EXPECT_LE(counts.active + counts.succeeded + counts.failed, c.workers) << when;
    if (job::IsFinished(*status)) {
      EXPECT_EQ(counts.active, 0) << when;
    }
    EXPECT_GE(restarts, last_restarts) << when << ": RESTARTS shrank";
    last_restarts = restarts;
  };
  backend.at_wait = [&](Time now) {
    check("at " + FormatTime(now));
    if (c.suspend_at && !suspended && now >= start_ + *c.suspend_at) {
      ASSERT_TRUE(store_.SetSuspended(key_, true).ok());
      suspended = true;
    } else if (suspended && !resumed && now >= start_ + *c.suspend_at + seconds(5)) {
      ASSERT_TRUE(store_.SetSuspended(key_, false).ok());
      resumed = true;
    }
  };
  StatusOr<job::JobStatus> status = Run(backend);
  ASSERT_TRUE(status.ok()) << status.status().ToString();
  EXPECT_TRUE(job::IsFinished(*status));
  check("after the end");
  EXPECT_GT(checks, 2);
}

std::optional<FakeReplicaBackend::Exit> RunsUntilStopped() { return std::nullopt; }

INSTANTIATE_TEST_SUITE_P(
    Runs, StatusTruthTest,
    ::testing::Values(StatusCase{"NeverOneFailsOthersRun", 3, "Never", "",
                                 [](const ReplicaId& id, int) -> std::optional<Exit> {
                                   if (id.index == 2) return Exit{seconds(1), 1};
                                   return RunsUntilStopped();
                                 },
                                 std::nullopt},
                      StatusCase{"OnFailureBackoffLimit", 3, "OnFailure", "{backoffLimit: 3}",
                                 [](const ReplicaId& id, int) -> std::optional<Exit> {
                                   if (id.index == 1) return Exit{seconds(1), 3};
                                   return RunsUntilStopped();
                                 },
                                 std::nullopt},
                      StatusCase{"OnFailureRecovers", 2, "OnFailure", "",
                                 [](const ReplicaId& id, int run) -> std::optional<Exit> {
                                   if (id.index == 0 && run < 2) return Exit{seconds(1), 1};
                                   return Exit{seconds(8), 0};
                                 },
                                 std::nullopt},
                      StatusCase{"ExitCodeKilledThenSucceeds", 2, "ExitCode", "",
                                 [](const ReplicaId& id, int run) -> std::optional<Exit> {
                                   if (id.index == 1 && run == 0) return Exit{seconds(2), 137};
                                   return Exit{seconds(6), 0};
                                 },
                                 std::nullopt},
                      StatusCase{"AlwaysPastItsDeadline", 2, "Always", "{activeDeadlineSeconds: 7}",
                                 [](const ReplicaId&, int) -> std::optional<Exit> {
                                   return Exit{seconds(2), 0};
                                 },
                                 std::nullopt},
                      StatusCase{"CleanPodPolicyAllAtSuccess", 3, "Never", "{cleanPodPolicy: All}",
                                 [](const ReplicaId& id, int) -> std::optional<Exit> {
                                   if (id.index == 0) return Exit{seconds(3), 0};
                                   return RunsUntilStopped();
                                 },
                                 std::nullopt},
                      // Two restarts before the suspension: RESTARTS stays 2 after the resume, and
                      // grows from there.
                      StatusCase{"RestartsThenSuspendAndResume", 1, "OnFailure", "",
                                 [](const ReplicaId&, int run) -> std::optional<Exit> {
                                   if (run < 2) return Exit{seconds(1), 1};
                                   if (run == 2) return RunsUntilStopped();
                                   if (run == 3) return Exit{seconds(1), 1};
                                   return Exit{seconds(2), 0};
                                 },
                                 seconds(8)}),
    [](const ::testing::TestParamInfo<StatusCase>& info) { return info.param.name; });

TEST_F(JobControllerTest, RestartsAreNotForgottenAcrossSuspendAndResume) {
  CreateJob(1, "OnFailure");
  FakeReplicaBackend backend(&now_, [](const ReplicaId&, int run) -> std::optional<Exit> {
    if (run < 2) return Exit{seconds(1), 1};
    if (run == 2) return std::nullopt;
    if (run == 3) return Exit{seconds(1), 1};
    return Exit{seconds(2), 0};
  });
  bool suspended = false, resumed = false;
  backend.at_wait = [&](Time now) {
    if (!suspended && now >= start_ + seconds(8)) {
      ASSERT_TRUE(store_.SetSuspended(key_, true).ok());
      suspended = true;
    } else if (suspended && !resumed && now >= start_ + seconds(13)) {
      ASSERT_TRUE(store_.SetSuspended(key_, false).ok());
      resumed = true;
    }
  };
  StatusOr<job::JobStatus> status = Run(backend);
  ASSERT_TRUE(status.ok()) << status.status().ToString();
  EXPECT_TRUE(job::IsSucceeded(*status));
  EXPECT_TRUE(resumed);
  // Two restarts before the suspension, one after: three, as many as were made.
  ASSERT_EQ(backend.starts().size(), 5u);
  std::vector<ReplicaRow> rows = store_.ReadReplicas(key_);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].restarts, 3);
}

TEST_F(JobControllerTest, AFinishedJobIsNotRunAgain) {
  CreateJob(1, "Never");
  job::JobStatus finished;
  job::SetCondition(finished, job::kConditionSucceeded, "True", "TFJobSucceeded", "done", start_);
  ASSERT_TRUE(store_.WriteStatus(key_, finished).ok());
  FakeReplicaBackend backend(&now_, [](const ReplicaId&, int) { return Exit{seconds(1), 0}; });
  StatusOr<job::JobStatus> status = Run(backend);
  EXPECT_EQ(status.status().code(), Status::Code::kFailedPrecondition);
  EXPECT_TRUE(backend.starts().empty());
}

// The controller knows no kind: a job of the ShellJob test double (its own replica types, reason
// prefix and success rule: without a Leader, every Node must succeed) runs through the same loop,
// store and backend.
TEST(JobControllerKindTest, RunsAJobOfAnyKind) {
  const Time start = *ParseTime("2026-01-01T00:00:00Z");
  Time now = start;
  StatusOr<job::Job> job = job::DefaultAndValidate(job::ParseJob(
      "apiVersion: example.com/v1alpha1\nkind: ShellJob\nmetadata: {name: shell}\nspec:\n"
      "  mode: parallel\n  shellReplicaSpecs:\n"
      "    Node: {replicas: 2, template: {spec: {containers: [{name: shell, image: test}]}}}\n",
      "shell.yaml", nullptr, job::testing::ShellRegistry()));
  ASSERT_TRUE(job.ok()) << job.status().ToString();
  MemoryJobStore store(job::testing::ShellRegistry());
  store.SetCreationTime(start);
  ASSERT_TRUE(store.CreateJob(*job, nullptr).ok());
  ASSERT_TRUE(
      store.WriteEndpoints({"default", "shell"}, {{"node-0", 4001}, {"node-1", 4002}}).ok());
  // Node 0 finishes first: under TFJob's rule worker 0 would decide, here the job waits for Node 1.
  FakeReplicaBackend backend(&now, [](const ReplicaId& id, int) {
    return Exit{seconds(id.index == 0 ? 2 : 10), 0};
  });
  JobController controller(store, backend, {"default", "shell"}, {}, [&] { return now; });
  StatusOr<job::JobStatus> status = controller.Run();
  ASSERT_TRUE(status.ok()) << status.status().ToString();
  EXPECT_TRUE(job::IsSucceeded(*status));
  EXPECT_EQ(*status->completion_time, start + seconds(10));
  ASSERT_EQ(backend.starts().size(), 2u);
  for (const auto& started : backend.starts()) EXPECT_EQ(started.kind, "ShellJob");
  EXPECT_EQ(status->conditions.back().reason, "ShellSucceeded");
  StatusOr<std::vector<job::Event>> events = store.ReadEvents({"default", "shell"});
  ASSERT_TRUE(events.ok());
  std::vector<std::string> reasons;
  for (const job::Event& event : *events) reasons.push_back(event.reason);
  EXPECT_THAT(reasons, Contains("ShellSucceeded"));
  EXPECT_THAT(reasons, Not(Contains(HasSubstr("TFJob"))));
}

}  // namespace
}  // namespace cohort::exec
