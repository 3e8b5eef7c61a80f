// Faults of a parameter-server job end to end: the wide & deep taxi job of taxi-train (chief,
// two ps, two workers) under the real `cohort` supervisor, with one process SIGKILLed while it
// trains:
//   - a killed worker is restarted (OnFailure), creates its variables again (a no-op on the
//     servers) and continues from where the job is, while the others never stop;
//   - a killed ps is restarted, reloads its shard from the newest whole checkpoint, and the job
//     completes with a good model;
//   - a ps that stays down (restartPolicy Never) fails the job, with the ps named, instead of
//     leaving the others hanging.
// Each job trains one epoch over the generated data set (shared by the tests, generated once);
// about 20 s each on 2 cores.
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <filesystem>
#include <regex>

#include "testing/cohort_runner.h"
#include "testing/scratch_directory.h"
#include "testing/wait.h"

namespace {

namespace fs = std::filesystem;
using cohort::testing::FindTrainerProcess;
using cohort::testing::ReadText;
using cohort::testing::WaitForChildOrStop;
using cohort::testing::WaitUntil;
using std::chrono::seconds;

const fs::path kTaxiTrain = fs::path(COHORT_BINARY_DIR) / "examples/taxi/taxi-train";

// The data set is the same for every job of a test process; generating it once saves seconds per
// job. It lives in a directory of this process's own, removed at exit, so that no run meets a
// data set an earlier run left (which cohort-train refuses when the generator has changed).
const fs::path& DataDir() {
  static const cohort::testing::ScratchDirectory dir("cohort-ps-job-data");
  return dir.path();
}

class ParameterServerJobTest : public ::testing::Test {
 protected:
  // A job of chief, 2 ps and 2 workers writing under the sandbox's <name>/, every replica with the
  // flags below plus `extra_flags`.
  fs::path WriteManifest(const std::string& name, const std::string& ps_restart_policy,
                         const std::vector<std::string>& extra_flags = {}) {
    const fs::path out = sandbox_.root() / name;
    std::string args;
    std::vector<std::string> flags = {"--model=wide_deep",
                                      "--data_dir=" + DataDir().string(),
                                      "--epochs=1",
                                      "--per_worker_batch=256",
                                      "--checkpoint_every_steps=100",
                                      "--ps_retry_timeout_s=5",
                                      "--threads=1",
                                      "--checkpoint_path=" + (out / "checkpoints").string(),
                                      "--saved_model_path=" + (out / "model").string()};
    flags.insert(flags.end(), extra_flags.begin(), extra_flags.end());
    for (const std::string& flag : flags) {
      args += "                - \"" + flag + "\"\n";
    }
    std::string manifest = "apiVersion: kubeflow.org/v1\nkind: TFJob\nmetadata:\n  name: " + name +
                           "\nspec:\n  runPolicy:\n    backoffLimit: 6\n  tfReplicaSpecs:\n";
    for (const auto& [type, replicas, policy] :
         std::vector<std::tuple<std::string, int, std::string>>{
             {"Chief", 1, "OnFailure"}, {"PS", 2, ps_restart_policy}, {"Worker", 2, "OnFailure"}}) {
      manifest += "    " + type + ":\n      replicas: " + std::to_string(replicas) +
                  "\n      restartPolicy: " + policy +
                  "\n      template:\n        spec:\n          containers:\n"
                  "            - name: tensorflow\n              image: localhost/taxi-train\n"
                  "              args:\n" +
                  args;
    }
    return sandbox_.WriteFile(name + ".yaml", manifest);
  }

  // Starts `cohort run` of the job with output to `log`.
  pid_t StartJob(const fs::path& manifest, const fs::path& log) {
    return sandbox_.StartCohort(
        {"run", manifest.string(), "--image", "localhost/taxi-train=" + kTaxiTrain.string()}, log);
  }

  // Waits (at most 300 s) for the chief's first periodic checkpoint of job `name`, so that
  // training is under way, then SIGKILLs the trainer of replica `type`-`index`.
  ::testing::AssertionResult KillOnceTrainingIsUnderWay(const std::string& name,
                                                        const std::string& type, int index,
                                                        const fs::path& log) {
    // BackupAndRestore(--checkpoint_path) keeps the servers' checkpoints in <dir>/ps.
    const fs::path dir = sandbox_.root() / name / "checkpoints" / "ps";
    const bool checkpointed = WaitUntil(
        [&] {
          std::error_code error;
          for (const auto& entry : fs::directory_iterator(dir, error)) {
            if (entry.path().extension() == ".manifest") return true;
          }
          return false;
        },
        seconds(300), std::chrono::milliseconds(50));
    if (!checkpointed) {
      return ::testing::AssertionFailure() << "no checkpoint in " << dir << " after 300 s:\n"
                                           << ReadText(log);
    }
    const pid_t victim = FindTrainerProcess(name, type, index);
    if (victim <= 0) {
      return ::testing::AssertionFailure() << "no trainer runs " << type << "-" << index << ":\n"
                                           << ReadText(log);
    }
    if (::kill(victim, SIGKILL) != 0) {
      return ::testing::AssertionFailure() << "cannot kill " << type << "-" << index;
    }
    return ::testing::AssertionSuccess();
  }

  cohort::testing::CohortSandbox sandbox_;
};

// The chief's final "auc 0.XXXX", or -1 when it printed none.
double FinalAuc(const std::string& output) {
  std::smatch match;
  if (!std::regex_search(output, match, std::regex("\\[chief-0\\] auc ([0-9.]+)"))) return -1;
  return std::stod(match[1]);
}

// One epoch reaches about 0.90 against a ceiling of 0.917; a model broken by a fault (lost or
// reset variables) would be far below.
constexpr double kMinimumAuc = 0.88;
// A sync epoch makes a third as many steps (each averages three batches): about 0.89.
constexpr double kMinimumSyncAuc = 0.87;

// With bounded staleness, as the workers run at most 4 steps ahead of the slowest: a killed worker
// must stop counting as the slowest, or the others would wait for it.
TEST_F(ParameterServerJobTest, KilledWorkerRejoinsAndTheJobCompletes) {
  const fs::path log = sandbox_.root() / "job.log";
  pid_t cohort = StartJob(WriteManifest("worker-killed", "OnFailure", {"--max_staleness=4"}), log);
  ASSERT_TRUE(KillOnceTrainingIsUnderWay("worker-killed", "worker", 1, log));

  ASSERT_EQ(WaitForChildOrStop(cohort, seconds(600)), 0) << ReadText(log);
  const std::string output = ReadText(log);
  EXPECT_NE(output.find("job default/worker-killed Succeeded"), std::string::npos) << output;
  // The restarted worker joined a job already under way, not from the start.
  std::smatch match;
  ASSERT_TRUE(
      std::regex_search(output, match, std::regex("worker:1 starts at global step ([1-9][0-9]*)")))
      << output;
  EXPECT_GE(FinalAuc(output), kMinimumAuc) << output;
}

TEST_F(ParameterServerJobTest, KilledServerRestartsFromTheLatestCheckpoint) {
  const fs::path log = sandbox_.root() / "job.log";
  pid_t cohort = StartJob(WriteManifest("ps-killed", "OnFailure"), log);
  ASSERT_TRUE(KillOnceTrainingIsUnderWay("ps-killed", "ps", 1, log));

  ASSERT_EQ(WaitForChildOrStop(cohort, seconds(600)), 0) << ReadText(log);
  const std::string output = ReadText(log);
  EXPECT_NE(output.find("job default/ps-killed Succeeded"), std::string::npos) << output;
  EXPECT_TRUE(std::regex_search(
      output, std::regex("ps:1 serving .* restored the checkpoint of global step [1-9]")))
      << output;
  EXPECT_GE(FinalAuc(output), kMinimumAuc) << output;
}

// Sync mode: each global step averages one gradient of every training task, so the job takes
// (trips / (batch x tasks)) steps and still learns.
TEST_F(ParameterServerJobTest, SyncTrainingCompletesWithAGoodModel) {
  const fs::path log = sandbox_.root() / "job.log";
  pid_t cohort = StartJob(WriteManifest("sync", "OnFailure", {"--mode=sync"}), log);
  ASSERT_EQ(WaitForChildOrStop(cohort, seconds(600)), 0) << ReadText(log);
  const std::string output = ReadText(log);
  EXPECT_NE(output.find("job default/sync Succeeded"), std::string::npos) << output;
  EXPECT_NE(output.find("ps:0 serving sync training"), std::string::npos) << output;
  EXPECT_GE(FinalAuc(output), kMinimumSyncAuc) << output;
}

TEST_F(ParameterServerJobTest, ServerThatStaysDownFailsTheJobNamingIt) {
  const fs::path log = sandbox_.root() / "job.log";
  pid_t cohort = StartJob(WriteManifest("ps-down", "Never"), log);
  ASSERT_TRUE(KillOnceTrainingIsUnderWay("ps-down", "ps", 0, log));

  const int code = WaitForChildOrStop(cohort, seconds(300));
  const std::string output = ReadText(log);
  ASSERT_NE(code, -1) << "the job hung after its ps died:\n" << output;
  EXPECT_NE(code, 0) << output;
  EXPECT_NE(output.find("job default/ps-down Failed"), std::string::npos) << output;
  EXPECT_NE(output.find("ps-down-ps-0"), std::string::npos) << output;
  EXPECT_EQ(FinalAuc(output), -1) << output;
}

}  // namespace
