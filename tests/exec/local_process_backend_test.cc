// LocalProcessBackend with real processes: exits observed, a stopped replica gone, the restart
// banner, and no descriptor of the backend's leaking into a replica.
#include "exec/local_process_backend.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <csignal>
#include <set>
#include <thread>

#include "exec_test_support.h"

namespace cohort::exec {
namespace {

using ::testing::ContainsRegex;
using ::testing::HasSubstr;

const ReplicaId kWorker0{"Worker", 0};

class LocalProcessBackendTest : public ::testing::Test {
 protected:
  std::unique_ptr<LocalProcessBackend> NewBackend() {
    LocalProcessBackend::Options options;
    options.logs_directory = scratch_.path();
    options.ports = {{"worker-0", 4000}};
    options.secret = "s3cret";
    StatusOr<std::unique_ptr<LocalProcessBackend>> backend =
        LocalProcessBackend::Create(std::move(options));
    EXPECT_TRUE(backend.ok()) << backend.status().ToString();
    return backend.ok() ? std::move(*backend) : nullptr;
  }

  // Observes until `done` holds for what it sees, for at most 10 s.
  static std::vector<ReplicaState> ObserveUntil(
      LocalProcessBackend& backend,
      const std::function<bool(const std::vector<ReplicaState>&)>& done) {
    auto give_up = Clock::now() + std::chrono::seconds(10);
    std::vector<ReplicaState> states = backend.Observe();
    while (!done(states) && Clock::now() < give_up) {
      backend.WaitForChange(Clock::now() + std::chrono::milliseconds(200));
      states = backend.Observe();
    }
    return states;
  }

  std::string Log() const { return ReadWhole(scratch_.path() / "worker-0.log"); }

  ScratchDirectory scratch_;
};

TEST_F(LocalProcessBackendTest, AnExitIsObservedWithItsCode) {
  std::unique_ptr<LocalProcessBackend> backend = NewBackend();
  ASSERT_NE(backend, nullptr);
  job::Job job =
      ShellJob("exits", 1, "echo \"port of worker-0: $TF_CONFIG $COHORT_JOB_SECRET\"; exit 3");
  StatusOr<ReplicaState> started = backend->Start({kWorker0, &job, 0, 0});
  ASSERT_TRUE(started.ok()) << started.status().ToString();
  EXPECT_GT(started->pid, 0);
  EXPECT_EQ(started->phase, job::ReplicaPhase::kRunning);

  std::vector<ReplicaState> states = ObserveUntil(*backend, [](const auto& states) {
    return states.size() == 1 && states[0].phase != job::ReplicaPhase::kRunning;
  });
  ASSERT_EQ(states.size(), 1u);
  EXPECT_EQ(states[0].phase, job::ReplicaPhase::kFailed);
  EXPECT_EQ(states[0].exit_code, 3);
  EXPECT_EQ(states[0].pid, 0);
  EXPECT_TRUE(states[0].finished_at.has_value());
  EXPECT_THAT(Log(), HasSubstr(" s3cret\n"));  // one replica: no TF_CONFIG

  // An exited replica that is stopped is removed at once.
  backend->Stop(kWorker0, StopMode::kGraceful);
  EXPECT_TRUE(backend->Observe().empty());
}

TEST_F(LocalProcessBackendTest, AStoppedReplicaIsAbsentOnceItHasExited) {
  std::unique_ptr<LocalProcessBackend> backend = NewBackend();
  ASSERT_NE(backend, nullptr);
  std::filesystem::path ready = scratch_.path() / "ready";
  job::Job job = ShellJob("stops", 1,
                          "trap \"echo got TERM; exit 0\" TERM; echo > " + ready.string() +
                              "; while true; do sleep 0.05; done");
  StatusOr<ReplicaState> started = backend->Start({kWorker0, &job, 0, 0});
  ASSERT_TRUE(started.ok()) << started.status().ToString();
  // The replica says when its trap is set.
  auto give_up = Clock::now() + std::chrono::seconds(10);
  while (!std::filesystem::exists(ready) && Clock::now() < give_up) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ASSERT_TRUE(std::filesystem::exists(ready));
  backend->Stop(kWorker0, StopMode::kGraceful);
  std::vector<ReplicaState> states = backend->Observe();
  if (!states.empty()) EXPECT_TRUE(states[0].stopping);
  states = ObserveUntil(*backend, [](const auto& states) { return states.empty(); });
  EXPECT_TRUE(states.empty());
  EXPECT_FALSE(ProcessRuns(started->pid));
  EXPECT_THAT(Log(), HasSubstr("got TERM"));
}

// Each run gets an empty termination-message file named by COHORT_TERMINATION_MESSAGE_PATH; what
// the run leaves there comes back with its exit. A stop "as failed" keeps the replica, exited.
TEST_F(LocalProcessBackendTest, ATerminationMessageComesBackWithTheExit) {
  LocalProcessBackend::Options options;
  options.logs_directory = scratch_.path();
  options.termination_messages_directory = scratch_.path() / "termination";
  StatusOr<std::unique_ptr<LocalProcessBackend>> backend =
      LocalProcessBackend::Create(std::move(options));
  ASSERT_TRUE(backend.ok()) << backend.status().ToString();
  job::Job job = ShellJob("messages", 1,
                          "test -s \"$COHORT_TERMINATION_MESSAGE_PATH\" && exit 9; "
                          "echo \"peer worker:1 hung (no heartbeat for 30 s)\" > "
                          "\"$COHORT_TERMINATION_MESSAGE_PATH\"; exit 138");
  for (int run = 0; run < 2; ++run) {  // the second run finds the file empty again
    ASSERT_TRUE((*backend)->Start({kWorker0, &job, run, run == 0 ? 0 : 138}).ok());
    std::vector<ReplicaState> states = ObserveUntil(**backend, [](const auto& states) {
      return states.size() == 1 && states[0].phase != job::ReplicaPhase::kRunning;
    });
    ASSERT_EQ(states.size(), 1u);
    EXPECT_EQ(states[0].exit_code, 138) << "run " << run;
    EXPECT_EQ(states[0].termination_message, "peer worker:1 hung (no heartbeat for 30 s)\n");
  }

  job::Job hangs = ShellJob("hangs", 1, "exec sleep 60");
  ASSERT_TRUE((*backend)->Start({kWorker0, &hangs, 2, 138}).ok());
  (*backend)->Stop(kWorker0, StopMode::kAsFailed);
  std::vector<ReplicaState> states = ObserveUntil(**backend, [](const auto& states) {
    return states.size() == 1 && states[0].phase == job::ReplicaPhase::kFailed;
  });
  ASSERT_EQ(states.size(), 1u);
  EXPECT_EQ(states[0].exit_code, 128 + SIGTERM);
  EXPECT_EQ(states[0].termination_message, "");
}

TEST_F(LocalProcessBackendTest, ARestartIsAnnouncedInTheLog) {
  std::unique_ptr<LocalProcessBackend> backend = NewBackend();
  ASSERT_NE(backend, nullptr);
  job::Job job = ShellJob("restarts", 1, "echo second run");
  ASSERT_TRUE(backend->Start({kWorker0, &job, /*restart_count=*/1, /*previous=*/137}).ok());
  ObserveUntil(*backend, [](const auto& states) {
    return states.size() == 1 && states[0].phase == job::ReplicaPhase::kSucceeded;
  });
  EXPECT_THAT(Log(), ContainsRegex("^===== cohort: restart 1 of worker-0 at [0-9TZ:-]+ "
                                   "\\(previous exit code 137\\) =====\nsecond run\n$"));
}

// The replica inherits its log as stdout and stderr, and none of the descriptors the backend
// opened (its self-pipe, the log's own descriptor).
TEST_F(LocalProcessBackendTest, AReplicaInheritsNoDescriptorOfTheBackend) {
  std::set<std::string> before;
  for (const auto& entry : std::filesystem::directory_iterator("/proc/self/fd")) {
    std::error_code error;
    before.insert(std::filesystem::read_symlink(entry.path(), error).string());
  }
  std::unique_ptr<LocalProcessBackend> backend = NewBackend();
  ASSERT_NE(backend, nullptr);
  // ls lists the replica's descriptors as it was started (exec keeps them).
  job::Job job = ShellJob("descriptors", 1, "exec ls -l /proc/self/fd");
  ASSERT_TRUE(backend->Start({kWorker0, &job, 0, 0}).ok());
  ObserveUntil(*backend, [](const auto& states) {
    return states.size() == 1 && states[0].phase != job::ReplicaPhase::kRunning;
  });
  std::istringstream lines(Log());
  std::string line;
  std::set<std::string> standard;
  while (std::getline(lines, line)) {
    size_t arrow = line.find(" -> ");
    if (arrow == std::string::npos) continue;
    size_t space = line.rfind(' ', arrow - 1);
    std::string fd = line.substr(space + 1, arrow - space - 1);
    std::string target = line.substr(arrow + 4);
    if (fd == "0" || fd == "1" || fd == "2") {
      standard.insert(fd + " " + target);
      continue;
    }
    // Anything else was already open, without close-on-exec, in the process that started it, or
    // is ls's own directory.
    if (target.rfind("/proc/", 0) == 0) continue;
    EXPECT_TRUE(before.count(target)) << "fd " << fd << " -> " << target << "\n" << Log();
  }
  std::string log_path = (scratch_.path() / "worker-0.log").string();
  EXPECT_EQ(standard, (std::set<std::string>{"0 /dev/null", "1 " + log_path, "2 " + log_path}))
      << Log();
}

}  // namespace
}  // namespace cohort::exec
