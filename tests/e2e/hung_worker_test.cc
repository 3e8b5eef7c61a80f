// Issue 17, end to end: a 3-worker cohort-train job under the real `cohort` supervisor.
//  - A worker SIGSTOPped mid-epoch is declared hung by its peers, which exit 138 leaving a peer
//    report; the supervisor stops the hung worker (SIGTERM, SIGKILL after its grace period) and
//    restarts it per its policy; training resumes from the chief's last backup within twice the
//    peer timeout plus the restart, and the job completes.
//  - Two crashes of one worker pass backoffLimit 2: each crash and the group restart it causes
//    count once.
// Minutes on 2 cores: label "long".
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <filesystem>
#include <regex>
#include <string>
#include <vector>

#include "testing/cohort_runner.h"
#include "testing/processes.h"
#include "testing/wait.h"

namespace {

namespace fs = std::filesystem;
using cohort::testing::ReadText;
using std::chrono::seconds;

const fs::path kCohortTrain = fs::path(COHORT_BINARY_DIR) / "apps/cohort-train/cohort-train";

constexpr int kPeerTimeoutSeconds = 5;
constexpr int kBackupEverySteps = 10;
constexpr int kStepsPerEpoch = 60;
// terminationGracePeriodSeconds of the workers: how long a SIGSTOPped worker, which cannot act on
// SIGTERM, waits for its SIGKILL.
constexpr int kGracePeriodSeconds = 3;

class HungWorkerTest : public ::testing::Test {
 protected:
  // A 3-worker OnFailure job of cohort-train writing under the sandbox's <name>/.
  fs::path WriteManifest(const std::string& name, int backoff_limit) {
    const fs::path out = sandbox_.root() / name;
    std::string args;
    for (const std::string& flag : std::vector<std::string>{
             "--epochs=2", "--steps_per_epoch=" + std::to_string(kStepsPerEpoch),
             "--per_worker_batch=32", "--seed=7", "--threads=1",
             "--backup_every_steps=" + std::to_string(kBackupEverySteps),
             "--peer_timeout_s=" + std::to_string(kPeerTimeoutSeconds), "--startup_timeout_s=120",
             "--checkpoint_path=" + (out / "backup").string(),
             "--saved_model_path=" + (out / "model").string()}) {
      args += "                - \"" + flag + "\"\n";
    }
    return sandbox_.WriteFile(
        name + ".yaml",
        "apiVersion: kubeflow.org/v1\nkind: TFJob\nmetadata:\n  name: " + name +
            "\nspec:\n  runPolicy:\n    backoffLimit: " + std::to_string(backoff_limit) +
            "\n  tfReplicaSpecs:\n    Worker:\n      replicas: 3\n      restartPolicy: OnFailure\n"
            "      template:\n        spec:\n          terminationGracePeriodSeconds: " +
            std::to_string(kGracePeriodSeconds) +
            "\n          containers:\n            - name: tensorflow\n"
            "              image: cohort/train\n              args:\n" +
            args);
  }

  pid_t StartJob(const std::string& name, int backoff_limit, const fs::path& log) {
    return sandbox_.StartCohort({"run", WriteManifest(name, backoff_limit).string(), "--image",
                                 "cohort/train=" + kCohortTrain.string()},
                                log);
  }

  // The chief's backup number ("ckpt-N" in its checkpoint file), 0 before the first.
  int LatestBackup(const std::string& name) {
    const std::string state = ReadText(sandbox_.root() / name / "backup" / "chief" / "checkpoint");
    std::smatch match;
    if (!std::regex_search(state, match, std::regex("ckpt-([0-9]+)"))) return 0;
    return std::stoi(match[1]);
  }

  // Global steps that resumed training after a restart, in the order logged.
  static std::vector<int> ResumedGlobalSteps(const std::string& output) {
    std::vector<int> steps;
    const std::regex resumed("resuming from epoch [0-9]+ step [0-9]+ \\(global step ([0-9]+)\\)");
    for (auto it = std::sregex_iterator(output.begin(), output.end(), resumed);
         it != std::sregex_iterator(); ++it) {
      steps.push_back(std::stoi((*it)[1]));
    }
    return steps;
  }

  static int Count(const std::string& text, const std::string& what) {
    int count = 0;
    for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) {
      ++count;
    }
    return count;
  }

  cohort::testing::CohortSandbox sandbox_;
};

TEST_F(HungWorkerTest, AStoppedWorkerIsRestartedAndTheJobCompletes) {
  ASSERT_TRUE(fs::exists(kCohortTrain)) << kCohortTrain;
  const fs::path log = sandbox_.root() / "hung.log";
  const pid_t cohort = StartJob("hung", /*backoff_limit=*/1, log);
  // Mid-epoch: after the chief's second backup of the first epoch (global step 20 of 60).
  ASSERT_TRUE(cohort::testing::WaitUntil([&] { return LatestBackup("hung") >= 2; }, seconds(300)))
      << ReadText(log);
  const pid_t victim = cohort::testing::FindTrainerProcess("hung", "worker", 1);
  ASSERT_GT(victim, 0) << ReadText(log);
  ASSERT_EQ(::kill(victim, SIGSTOP), 0);
  const auto stopped_at = std::chrono::steady_clock::now();
  // The group stalls at its next all-reduce; whatever backup the chief made by then is the one
  // to resume from, and nothing it writes while stalled is newer.
  const int backup_at_stop = LatestBackup("hung");

  // Twice the peer timeout to be declared hung, then the restart: the hung worker's grace period,
  // the restart back-off (1 s), and starting three trainers on a busy 2-core machine.
  const auto restart_allowance = seconds(kGracePeriodSeconds + 1 + 40);
  const auto bound = 2 * seconds(kPeerTimeoutSeconds) + restart_allowance;
  ASSERT_TRUE(
      cohort::testing::WaitUntil([&] { return !ResumedGlobalSteps(ReadText(log)).empty(); }, bound))
      << "training did not resume within " << bound.count() << " s of the SIGSTOP\n"
      << ReadText(log);
  const double resumed_after =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - stopped_at).count();
  RecordProperty("seconds_from_sigstop_to_resume", std::to_string(resumed_after));
  std::printf("training resumed %.1f s after the SIGSTOP (bound %lld s)\n", resumed_after,
              static_cast<long long>(bound.count()));

  ASSERT_EQ(cohort::testing::WaitForChildOrStop(cohort, seconds(600)), 0) << ReadText(log);
  const std::string output = ReadText(log);
  EXPECT_NE(output.find("Succeeded"), std::string::npos) << output;
  // The peers named the hung worker, the supervisor stopped it, and the job said why.
  EXPECT_NE(
      output.find("worker-1 hung (no heartbeat for " + std::to_string(kPeerTimeoutSeconds) + " s)"),
      std::string::npos)
      << output;
  EXPECT_NE(output.find("Unhealthy"), std::string::npos) << output;
  // At most one backup interval was lost: everyone resumed from the backup made before the stop.
  const std::vector<int> resumed = ResumedGlobalSteps(output);
  ASSERT_FALSE(resumed.empty()) << output;
  for (int step : resumed) EXPECT_GE(step, backup_at_stop * kBackupEverySteps) << output;
  EXPECT_NE(::kill(victim, 0), 0) << "the stopped worker still exists";
}

// Issue 17 item 4: backoffLimit 2 survives two crashes of one worker, although each crash also
// takes its two peers down (exit 138) and all three are restarted.
TEST_F(HungWorkerTest, BackoffLimitTwoSurvivesTwoCrashesOfOneWorker) {
  ASSERT_TRUE(fs::exists(kCohortTrain)) << kCohortTrain;
  const fs::path log = sandbox_.root() / "crashes.log";
  const pid_t cohort = StartJob("crashes", /*backoff_limit=*/2, log);
  for (int crash = 1; crash <= 2; ++crash) {
    // Each crash once training is under way again: the first after the chief's first backup, the
    // second once all three restarted workers have resumed and the chief has made a new backup.
    const fs::path state = sandbox_.root() / "crashes" / "backup" / "chief" / "checkpoint";
    ASSERT_TRUE(cohort::testing::WaitUntil(
        [&] {
          return static_cast<int>(ResumedGlobalSteps(ReadText(log)).size()) >= 3 * (crash - 1);
        },
        seconds(300)))
        << "crash " << crash << "\n"
        << ReadText(log);
    const std::string backup_before = ReadText(state);
    ASSERT_TRUE(cohort::testing::WaitUntil(
        [&] { return fs::exists(state) && ReadText(state) != backup_before; }, seconds(300)))
        << "crash " << crash << "\n"
        << ReadText(log);
    const pid_t victim = cohort::testing::FindTrainerProcess("crashes", "worker", 1);
    ASSERT_GT(victim, 0) << ReadText(log);
    ASSERT_EQ(::kill(victim, SIGKILL), 0);
  }
  ASSERT_EQ(cohort::testing::WaitForChildOrStop(cohort, seconds(600)), 0) << ReadText(log);
  const std::string output = ReadText(log);
  EXPECT_NE(output.find("Succeeded"), std::string::npos) << output;
  EXPECT_EQ(output.find("backoff limit"), std::string::npos) << output;
  // Each crash restarted all three workers: six restarts made, two counted.
  EXPECT_EQ(Count(output, "resuming from epoch"), 6) << output;
}

}  // namespace
