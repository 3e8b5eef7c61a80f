// The fault-tolerance scenario end to end: a 3-worker TFJob of cohort-train under the real `cohort`
// supervisor; one worker is SIGKILLed mid-epoch; the survivors notice through the collectives and
// exit with the retryable code; OnFailure restarts them; all resume from the chief's backup; the
// job Succeeds with the accuracy of an uninterrupted run of the same seed. About 80 s on 2 cores;
// ./run-tests.sh runs it every time.
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <filesystem>
#include <fstream>
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

class KillWorkerTest : public ::testing::Test {
 protected:
  // A 3-worker job of cohort-train writing under the sandbox's <name>/.
  fs::path WriteManifest(const std::string& name) {
    const fs::path out = sandbox_.root() / name;
    std::string args;
    for (const std::string& flag :
         std::vector<std::string>{"--epochs=3", "--steps_per_epoch=100", "--per_worker_batch=64",
                                  "--seed=7", "--threads=1", "--backup_every_steps=25",
                                  "--checkpoint_path=" + (out / "backup").string(),
                                  "--saved_model_path=" + (out / "model").string(),
                                  "--tensorboard_dir=" + (out / "logs").string()}) {
      args += "                - \"" + flag + "\"\n";
    }
    return sandbox_.WriteFile(
        name + ".yaml",
        "apiVersion: kubeflow.org/v1\nkind: TFJob\nmetadata:\n  name: " + name +
            "\nspec:\n  runPolicy:\n    backoffLimit: 6\n  tfReplicaSpecs:\n    Worker:\n"
            "      replicas: 3\n      restartPolicy: OnFailure\n      template:\n        spec:\n"
            "          containers:\n            - name: tensorflow\n"
            "              image: cohort/train\n              args:\n" +
            args);
  }

  // Starts `cohort run` of the job named `name`, output to `log`.
  pid_t StartJob(const std::string& name, const fs::path& log) {
    return sandbox_.StartCohort(
        {"run", WriteManifest(name).string(), "--image", "cohort/train=" + kCohortTrain.string()},
        log);
  }

  double TestAccuracy(const std::string& name) {
    const std::string text = ReadText(sandbox_.root() / name / "model" / "manifest.json");
    return nlohmann::json::parse(text).at("metrics").at("test_accuracy").get<double>();
  }

  cohort::testing::CohortSandbox sandbox_;
};

TEST_F(KillWorkerTest, JobSurvivesAKilledWorkerAndMatchesAnUninterruptedRun) {
  ASSERT_TRUE(fs::exists(kCohortTrain)) << kCohortTrain;
  const fs::path reference_log = sandbox_.root() / "reference.log";
  ASSERT_EQ(cohort::testing::WaitForChildOrStop(StartJob("reference", reference_log), seconds(600)),
            0)
      << ReadText(reference_log);
  const double reference = TestAccuracy("reference");

  const fs::path log = sandbox_.root() / "killed.log";
  pid_t cohort = StartJob("killed", log);
  // Wait for the chief's second step backup (global step 50 of 100 in epoch 1), then strike.
  const fs::path state = sandbox_.root() / "killed" / "backup" / "chief" / "checkpoint";
  ASSERT_TRUE(cohort::testing::WaitUntil(
      [&] { return ReadText(state).find("ckpt-2") != std::string::npos; }, seconds(300)))
      << ReadText(log);
  const pid_t victim = cohort::testing::FindTrainerProcess("killed", "worker", 1);
  ASSERT_GT(victim, 0) << ReadText(log);
  ASSERT_EQ(::kill(victim, SIGKILL), 0);

  ASSERT_EQ(cohort::testing::WaitForChildOrStop(cohort, seconds(600)), 0) << ReadText(log);
  const std::string output = ReadText(log);
  EXPECT_NE(output.find("Succeeded"), std::string::npos) << output;
  // The survivors named the dead worker and asked to be restarted.
  EXPECT_NE(output.find("worker:1"), std::string::npos) << output;
  EXPECT_NE(output.find("exiting with 138"), std::string::npos) << output;
  // Everyone resumed from the backup, and said where.
  std::smatch match;
  ASSERT_TRUE(
      std::regex_search(output, match, std::regex("resuming from epoch ([0-9]+) step ([0-9]+)")))
      << output;
  EXPECT_EQ(match[1], "1") << "killed during the first epoch";
  EXPECT_GE(std::stoi(match[2]), 50);
  EXPECT_NEAR(TestAccuracy("killed"), reference, 0.01);

  // Only the chief's files are left: the other workers' temporary directories are gone, and so is
  // the backup, as Keras removes it once training completes; the run's completion marker stays.
  const fs::path out = sandbox_.root() / "killed";
  for (const auto& entry : fs::recursive_directory_iterator(out)) {
    EXPECT_EQ(entry.path().filename().string().rfind("workertemp_", 0), std::string::npos)
        << entry.path();
  }
  EXPECT_FALSE(fs::exists(out / "backup" / "chief"));
  EXPECT_TRUE(fs::exists(out / "backup" / "training_complete"));
  // TensorBoard: an event file for the training run and one after the restart, and the
  // validation scalars.
  int train_event_files = 0;
  for (const auto& entry : fs::directory_iterator(out / "logs" / "train")) {
    train_event_files += entry.path().filename().string().rfind("events.out.tfevents.", 0) == 0;
  }
  EXPECT_GE(train_event_files, 2);
  EXPECT_FALSE(fs::is_empty(out / "logs" / "validation"));

  // The saved model evaluates to the accuracy its manifest records.
  const cohort::testing::CommandResult evaluated = cohort::testing::RunCommand(
      kCohortTrain.string() + " --evaluate --threads=1 --model_path " + (out / "model").string());
  const std::string& evaluation = evaluated.output;
  ASSERT_EQ(evaluated.exit_code, 0) << evaluation;
  ASSERT_TRUE(std::regex_search(evaluation, match, std::regex("test accuracy ([0-9]+\\.[0-9]+)")))
      << evaluation;
  EXPECT_NEAR(std::stod(match[1]), TestAccuracy("killed"), 1e-4) << evaluation;
}

}  // namespace
