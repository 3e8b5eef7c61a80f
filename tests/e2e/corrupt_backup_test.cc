// Issue 29's probe, end to end: a 2-worker cohort-train job under the real `cohort` supervisor;
// while the chief is SIGSTOPped, bytes are flipped in its newest backup, then it is SIGKILLed.
// The restarted chief finds the backup's checksum wrong, says so, restores the older backup that
// BackupAndRestore kept, and the job Succeeds with a sane accuracy and a saved model that
// `--evaluate` reads (its metrics are numbers). Short: 2 epochs of 20 steps, about 30 s on 2 cores.
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <regex>

#include "testing/cohort_runner.h"
#include "testing/processes.h"
#include "testing/wait.h"

namespace {

namespace fs = std::filesystem;
using cohort::testing::ReadText;
using std::chrono::seconds;

const fs::path kCohortTrain = fs::path(COHORT_BINARY_DIR) / "apps/cohort-train/cohort-train";

class CorruptBackupTest : public ::testing::Test {
 protected:
  fs::path WriteManifest(const std::string& name) {
    const fs::path out = sandbox_.root() / name;
    std::string args;
    for (const std::string& flag : std::vector<std::string>{
             "--epochs=2", "--steps_per_epoch=20", "--per_worker_batch=32", "--seed=7",
             "--threads=1", "--backup_every_steps=4", "--backups_to_keep=2",
             "--checkpoint_path=" + (out / "backup").string(),
             "--saved_model_path=" + (out / "model").string()}) {
      args += "                - \"" + flag + "\"\n";
    }
    return sandbox_.WriteFile(
        name + ".yaml",
        "apiVersion: kubeflow.org/v1\nkind: TFJob\nmetadata:\n  name: " + name +
            "\nspec:\n  runPolicy:\n    backoffLimit: 4\n  tfReplicaSpecs:\n    Worker:\n"
            "      replicas: 2\n      restartPolicy: OnFailure\n      template:\n        spec:\n"
            "          containers:\n            - name: tensorflow\n"
            "              image: cohort/train\n              args:\n" +
            args);
  }

  cohort::testing::CohortSandbox sandbox_;
};

// The newest backup the state file names ("ckpt-<n>"), or "" when it names none yet.
std::string NewestBackup(const fs::path& state) {
  std::smatch match;
  const std::string text = ReadText(state);
  if (!std::regex_search(text, match, std::regex("model_checkpoint_path: \"(ckpt-[0-9]+)\""))) {
    return "";
  }
  return match[1];
}

TEST_F(CorruptBackupTest, AFlippedNewestBackupFallsBackToTheOlderOneAndTheJobSucceeds) {
  ASSERT_TRUE(fs::exists(kCohortTrain)) << kCohortTrain;
  const fs::path log = sandbox_.root() / "corrupt.log";
  pid_t cohort = sandbox_.StartCohort({"run", WriteManifest("corrupt").string(), "--image",
                                       "cohort/train=" + kCohortTrain.string()},
                                      log);
  const fs::path chief_dir = sandbox_.root() / "corrupt" / "backup" / "chief";
  // Two backups kept (ckpt-2 and ckpt-3 at the least): one to corrupt, one to fall back to.
  ASSERT_TRUE(cohort::testing::WaitUntil(
      [&] {
        const std::string newest = NewestBackup(chief_dir / "checkpoint");
        return !newest.empty() && std::stoi(newest.substr(5)) >= 3;
      },
      seconds(180)))
      << ReadText(log);
  const pid_t chief = cohort::testing::FindTrainerProcess("corrupt", "worker", 0);
  ASSERT_GT(chief, 0) << ReadText(log);
  ASSERT_EQ(::kill(chief, SIGSTOP), 0);
  // Stopped, the chief writes nothing more: the state file names the newest whole backup.
  const std::string newest = NewestBackup(chief_dir / "checkpoint");
  const fs::path victim = chief_dir / (newest + ".pt");
  std::string bytes = ReadText(victim);
  ASSERT_GT(bytes.size(), 1000u);
  for (int i = 1; i <= 10; ++i) {
    for (int j = 0; j < 64; ++j) bytes[bytes.size() * i / 11 + j] ^= 0x5a;
  }
  sandbox_.WriteFile((victim.lexically_relative(sandbox_.root())).string(), bytes);
  ASSERT_EQ(::kill(chief, SIGKILL), 0);

  ASSERT_EQ(cohort::testing::WaitForChildOrStop(cohort, seconds(240)), 0) << ReadText(log);
  const std::string output = ReadText(log);
  EXPECT_NE(output.find("Succeeded"), std::string::npos) << output;
  // The corrupt backup was named with its checksums and skipped; an older one was restored.
  EXPECT_NE(output.find("BackupAndRestore: skipped " + newest + ": " + victim.string() +
                        ": checksum mismatch: expected "),
            std::string::npos)
      << output;
  std::smatch restored;
  ASSERT_TRUE(std::regex_search(output, restored,
                                std::regex("BackupAndRestore: restored .*/(ckpt-[0-9]+)\\.pt")))
      << output;
  EXPECT_LT(std::stoi(std::string(restored[1]).substr(5)), std::stoi(newest.substr(5)));
  EXPECT_FALSE(std::regex_search(output, std::regex("loss:? -?nan"))) << output;

  // A sane model, saved with numbers for metrics, that --evaluate reads.
  const nlohmann::json manifest =
      nlohmann::json::parse(ReadText(sandbox_.root() / "corrupt" / "model" / "manifest.json"));
  ASSERT_TRUE(manifest.at("metrics").at("test_loss").is_number()) << manifest.dump();
  EXPECT_GT(manifest.at("metrics").at("test_accuracy").get<double>(), 0.5) << manifest.dump();
  const cohort::testing::CommandResult evaluated =
      cohort::testing::RunCommand(kCohortTrain.string() + " --evaluate --threads=1 --model_path " +
                                  (sandbox_.root() / "corrupt" / "model").string());
  EXPECT_EQ(evaluated.exit_code, 0) << evaluated.output;
}

}  // namespace
