// LocalProcessBackend with real processes: exits observed, a stopped replica gone, the restart
// banner, and no descriptor of the backend's leaking into a replica.
#include "exec/local_process_backend.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>

#include "exec_test_support.h"
#include "testing/host.h"

namespace cohort::exec {
namespace {

using ::testing::ContainsRegex;
using ::testing::HasSubstr;

const ReplicaId kWorker0{"Worker", 0};

class LocalProcessBackendTest : public ::testing::Test {
 protected:
  std::unique_ptr<LocalProcessBackend> NewBackend(LogRotation rotation = {}) {
    LocalProcessBackend::Options options;
    options.log_rotation = rotation;
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

// $(NAME) in a replica's command and args is expanded as the kubelet expands it, with the
// variables its pod would have: COHORT_JOB_NAME, the container's env and TF_CONFIG; not the
// supervisor's own environment (HOME), and `$$` is a literal `$`.
TEST_F(LocalProcessBackendTest, ArgsExpandTheJobsNameAndTheContainersVariablesAsKubernetesDoes) {
  std::unique_ptr<LocalProcessBackend> backend = NewBackend();
  ASSERT_NE(backend, nullptr);
  job::Job job = JobFromYaml(R"(apiVersion: kubeflow.org/v1
kind: TFJob
metadata: {name: taxi-2}
spec:
  tfReplicaSpecs:
    Worker:
      template:
        spec:
          containers:
            - name: tensorflow
              image: test
              command: [/bin/sh, -c, 'echo "$1 $2 $3 $4"', sh]
              args: [--dir=/tmp/$(COHORT_JOB_NAME)/x, $(GREETING), $(HOME), $$(COHORT_JOB_NAME)]
              env: [{name: GREETING, value: hi}]
)");
  ASSERT_TRUE(backend->Start({kWorker0, &job, 0, 0}).ok());
  std::vector<ReplicaState> states = ObserveUntil(*backend, [](const auto& states) {
    return states.size() == 1 && states[0].phase != job::ReplicaPhase::kRunning;
  });
  ASSERT_EQ(states.size(), 1u);
  EXPECT_EQ(states[0].exit_code, 0);
  EXPECT_THAT(Log(), HasSubstr("--dir=/tmp/taxi-2/x hi $(HOME) $(COHORT_JOB_NAME)\n"));
  backend->Stop(kWorker0, StopMode::kGraceful);
}

// The exited run's own lines come back (not the earlier run's, not the restart banner), and an
// exit of 127 in the first second gets a hint naming the command.
TEST_F(LocalProcessBackendTest, AnExitBringsTheRunsLastLinesAndACommandThatCannotRunItsHint) {
  std::unique_ptr<LocalProcessBackend> backend = NewBackend();
  ASSERT_NE(backend, nullptr);
  job::Job job = ShellJob("tail", 1, "echo first run; exit 4");
  ASSERT_TRUE(backend->Start({kWorker0, &job, 0, 0}).ok());
  auto exited = [](const auto& states) {
    return states.size() == 1 && states[0].phase != job::ReplicaPhase::kRunning;
  };
  std::vector<ReplicaState> states = ObserveUntil(*backend, exited);
  ASSERT_EQ(states.size(), 1u);
  EXPECT_THAT(states[0].output_tail, ::testing::ElementsAre("first run"));
  EXPECT_EQ(states[0].exit_hint, "");

  job::Job second = ShellJob("tail", 1, "echo one; echo two; exit 127");
  ASSERT_TRUE(backend->Start({kWorker0, &second, 1, 4}).ok());
  states = ObserveUntil(*backend, exited);
  ASSERT_EQ(states.size(), 1u);
  EXPECT_EQ(states[0].exit_code, 127);
  EXPECT_THAT(states[0].output_tail, ::testing::ElementsAre("one", "two"));
  EXPECT_EQ(states[0].exit_hint,
            "exit code 127 within its first second: its command could not be run (not found); "
            "it ran /bin/sh -c 'echo one; echo two; exit 127'");
  backend->Stop(kWorker0, StopMode::kGraceful);
}

// The signal that killed a replica is told apart from a code it exited with itself.
TEST_F(LocalProcessBackendTest, AKillingSignalIsToldApartFromAnExitCode) {
  std::unique_ptr<LocalProcessBackend> backend = NewBackend();
  ASSERT_NE(backend, nullptr);
  auto exited = [](const auto& states) {
    return states.size() == 1 && states[0].phase != job::ReplicaPhase::kRunning;
  };
  // `$$$$`: args are read as Kubernetes reads them, where `$$` is one literal `$`.
  job::Job killed = ShellJob("signal", 1, "kill -SEGV $$$$");
  ASSERT_TRUE(backend->Start({kWorker0, &killed, 0, 0}).ok());
  std::vector<ReplicaState> states = ObserveUntil(*backend, exited);
  ASSERT_EQ(states.size(), 1u);
  EXPECT_EQ(states[0].exit_code, 139);
  EXPECT_EQ(states[0].signal, SIGSEGV);
  EXPECT_FALSE(states[0].oom_killed);

  job::Job exits = ShellJob("signal", 1, "exit 137");
  ASSERT_TRUE(backend->Start({kWorker0, &exits, 1, 139}).ok());
  states = ObserveUntil(*backend, exited);
  ASSERT_EQ(states.size(), 1u);
  EXPECT_EQ(states[0].exit_code, 137);
  EXPECT_EQ(states[0].signal, 0);
  EXPECT_FALSE(states[0].oom_killed);  // a 137 is never taken for an OOM kill
  backend->Stop(kWorker0, StopMode::kGraceful);
}

// A memory cgroup of this process's own (v1 "memory" or v2), limited to `limit_bytes`, removed
// by the destructor; empty path where this machine does not let the test make one.
class MemoryCgroup {
 public:
  explicit MemoryCgroup(int64_t limit_bytes) {
    std::string text = ReadWhole("/proc/self/cgroup");
    std::istringstream lines(text);
    std::string line;
    while (std::getline(lines, line)) {
      const size_t first = line.find(':'), second = line.find(':', first + 1);
      if (first == std::string::npos || second == std::string::npos) continue;
      const std::string controllers = line.substr(first + 1, second - first - 1);
      const std::string own = line.substr(second + 1);
      std::filesystem::path base;
      std::string limit_file;
      if (controllers == "memory") {
        base = "/sys/fs/cgroup/memory" + own;
        limit_file = "memory.limit_in_bytes";
      } else if (controllers.empty() &&
                 std::filesystem::exists("/sys/fs/cgroup/cgroup.controllers")) {
        base = "/sys/fs/cgroup" + own;
        limit_file = "memory.max";
      } else {
        continue;
      }
      std::filesystem::path path = base / ("cohort-oom-test-" + std::to_string(getpid()));
      std::error_code error;
      if (!std::filesystem::create_directory(path, error)) continue;
      std::ofstream(path / limit_file) << limit_bytes;
      if (std::filesystem::exists(path / "cgroup.procs")) {
        path_ = path;
        return;
      }
      std::filesystem::remove(path, error);
    }
  }
  ~MemoryCgroup() {
    std::error_code error;
    if (!path_.empty()) std::filesystem::remove(path_, error);
  }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

// A real OOM kill, where the machine allows one: the replica moves itself into a memory cgroup
// of 32 MiB and grows past it; the kernel's record says so, and the backend reports it.
TEST_F(LocalProcessBackendTest, AnOomKillIsReportedWhenTheKernelRecordsIt) {
  MemoryCgroup cgroup(32 << 20);
  if (cgroup.path().empty()) {
    COHORT_SKIP_OR_FAIL_IN_CI(
        "no memory cgroup can be made here (it needs root and a writable "
        "cgroup file system)");
  }
  if (access("/dev/kmsg", R_OK) != 0) {
    COHORT_SKIP_OR_FAIL_IN_CI("the kernel's log (/dev/kmsg) cannot be read here");
  }
  std::unique_ptr<LocalProcessBackend> backend = NewBackend();
  ASSERT_NE(backend, nullptr);
  job::Job job = ShellJob("oom", 1,
                          "echo $$$$ > " + (cgroup.path() / "cgroup.procs").string() +
                              "; x=$(head -c 268435456 /dev/zero | tr \"\\0\" a); echo survived");
  ASSERT_TRUE(backend->Start({kWorker0, &job, 0, 0}).ok());
  std::vector<ReplicaState> states = ObserveUntil(*backend, [](const auto& states) {
    return states.size() == 1 && states[0].phase != job::ReplicaPhase::kRunning;
  });
  ASSERT_EQ(states.size(), 1u);
  EXPECT_EQ(states[0].signal, SIGKILL) << Log();
  EXPECT_TRUE(states[0].oom_killed) << Log();
  backend->Stop(kWorker0, StopMode::kGraceful);
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

// Each replica is told its own TensorBoard directory, <summaries>/<type>-<index>, the same on
// every run (cluster/summary_location.h).
TEST_F(LocalProcessBackendTest, EachReplicaIsToldItsSummaryDirectory) {
  LocalProcessBackend::Options options;
  options.logs_directory = scratch_.path();
  options.summaries_directory = scratch_.path() / "summaries";
  StatusOr<std::unique_ptr<LocalProcessBackend>> backend =
      LocalProcessBackend::Create(std::move(options));
  ASSERT_TRUE(backend.ok()) << backend.status().ToString();
  job::Job job = ShellJob("summaries", 1, "echo \"summaries: $COHORT_SUMMARY_DIR\"");
  ASSERT_TRUE((*backend)->Start({kWorker0, &job, 0, 0}).ok());
  ObserveUntil(**backend, [](const auto& states) {
    return states.size() == 1 && states[0].phase != job::ReplicaPhase::kRunning;
  });
  EXPECT_THAT(Log(),
              HasSubstr("summaries: " + (scratch_.path() / "summaries" / "worker-0").string()));
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

// The issue's probe: a replica that wrote 1 GiB kept 1.1 GB of log. Its output now goes through
// the supervisor, which rotates the log at the bound and keeps the start, the last files and the
// current one; the run's last lines still come back at its exit.
TEST_F(LocalProcessBackendTest, AChattyReplicasLogIsRotatedAtItsBound) {
  std::unique_ptr<LocalProcessBackend> backend =
      NewBackend(LogRotation{.max_bytes = 64 * 1024, .max_files = 2});
  ASSERT_NE(backend, nullptr);
  // 4 MiB of numbered lines, then a last line.
  job::Job job = ShellJob("chatty", 1, "echo first line; seq 1 600000; echo last line; exit 3");
  ASSERT_TRUE(backend->Start({kWorker0, &job, 0, 0}).ok());
  std::vector<ReplicaState> states = ObserveUntil(*backend, [](const auto& states) {
    return states.size() == 1 && states[0].phase != job::ReplicaPhase::kRunning;
  });
  ASSERT_EQ(states.size(), 1u);
  EXPECT_EQ(states[0].exit_code, 3);
  ASSERT_FALSE(states[0].output_tail.empty());
  EXPECT_EQ(states[0].output_tail.back(), "last line");
  const std::filesystem::path log = scratch_.path() / "worker-0.log";
  uint64_t total = 0;
  std::vector<std::string> files;
  for (const auto& entry : std::filesystem::directory_iterator(scratch_.path())) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("worker-0.log", 0) != 0) continue;
    files.push_back(name);
    EXPECT_LE(entry.file_size(), 64u * 1024) << name;
    total += entry.file_size();
  }
  std::sort(files.begin(), files.end());
  EXPECT_EQ(files, (std::vector<std::string>{"worker-0.log", "worker-0.log.1", "worker-0.log.2",
                                             "worker-0.log.start"}));
  EXPECT_LE(total, 4u * 64 * 1024);
  // The start is the job's first output; the rotated files follow each other without a gap.
  EXPECT_EQ(ReadWhole(std::filesystem::path(log.string() + ".start")).substr(0, 13),
            "first line\n1\n");
  const std::string older = ReadWhole(std::filesystem::path(log.string() + ".2"));
  const std::string newer = ReadWhole(std::filesystem::path(log.string() + ".1"));
  const std::string current = ReadWhole(log);
  const std::string joined = older + newer + current;
  EXPECT_EQ(joined.substr(joined.size() - 10), "last line\n");
  std::istringstream lines(joined.substr(joined.find('\n') + 1));
  std::string line;
  long previous = -1;
  while (std::getline(lines, line) && line != "last line") {
    const long number = std::stol(line);
    if (previous >= 0) {
      EXPECT_EQ(number, previous + 1);
      if (number != previous + 1) break;
    }
    previous = number;
  }
  EXPECT_EQ(previous, 600000);
  backend->Stop(kWorker0, StopMode::kGraceful);
}

// The replica inherits its output pipe as stdout and stderr, and none of the descriptors the
// backend opened (its self-pipe, the logs, the pipe's read end).
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
  ASSERT_EQ(standard.size(), 3u) << Log();
  EXPECT_EQ(*standard.begin(), "0 /dev/null");
  const std::string out = *std::next(standard.begin());
  const std::string err = *std::next(standard.begin(), 2);
  EXPECT_THAT(out, ::testing::StartsWith("1 pipe:[")) << Log();
  EXPECT_EQ(err.substr(1), out.substr(1)) << "stdout and stderr are the same pipe";
}

}  // namespace
}  // namespace cohort::exec
