// The end of a cohort-train job and its storage failures, with the real program:
//   - A task killed at any point of the end sequence (model written, manifest written, completion
//     marker written) and restarted never trains again, finishes, and leaves no temporary file;
//     temporary files of dead writers are removed at start.
//   - A full disk under the backup ends the task with exit 3 and one error line naming the file
//     and "No space left on device", not a libtorch stack trace, and leaves no partial file.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <string>
#include <vector>

#include "testing/files.h"
#include "testing/host.h"
#include "testing/processes.h"
#include "testing/scratch_directory.h"
#include "testing/small_file_system.h"
#include "testing/synthetic_data.h"

namespace cohort::train {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

const fs::path kCohortTrain = fs::path(COHORT_BINARY_DIR) / "apps/cohort-train/cohort-train";

// Every ".<name>.tmp<pid>" file under `dir`.
std::vector<std::string> TemporaryFiles(const fs::path& dir) {
  std::vector<std::string> found;
  std::error_code error;
  for (auto it = fs::recursive_directory_iterator(dir, error);
       !error && it != fs::recursive_directory_iterator(); it.increment(error)) {
    const std::string name = it->path().filename().string();
    if (name.rfind('.', 0) == 0 && name.find(".tmp") != std::string::npos) {
      found.push_back(it->path().string());
    }
  }
  return found;
}

class EndOfTrainingTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(fs::exists(kCohortTrain)) << kCohortTrain;
    fs::create_directories(data_);
    testing::WriteDatasetFiles(testing::MakeSyntheticDataset(256, 1), data_.string(), "train",
                               false);
    testing::WriteDatasetFiles(testing::MakeSyntheticDataset(64, 2), data_.string(), "t10k", false);
  }

  std::vector<std::string> Flags(const fs::path& backup) const {
    return {"--data_dir=" + data_.string(),
            "--epochs=2",
            "--steps_per_epoch=4",
            "--per_worker_batch=16",
            "--threads=1",
            "--checkpoint_path=" + backup.string(),
            "--saved_model_path=" + saved_.string()};
  }

  // Starts cohort-train alone, as a task of the run whose secret is `secret`, output in `log`.
  pid_t Start(const std::vector<std::string>& flags, const fs::path& log,
              const std::string& secret = "end of training test") const {
    std::vector<std::string> arguments = {kCohortTrain.string()};
    arguments.insert(arguments.end(), flags.begin(), flags.end());
    const pid_t pid = fork();
    if (pid == 0) {
      const int fd = open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      dup2(fd, STDOUT_FILENO);
      dup2(fd, STDERR_FILENO);
      unsetenv("TF_CONFIG");
      setenv("COHORT_JOB_SECRET", secret.c_str(), 1);
      std::vector<char*> argv;
      for (std::string& argument : arguments) argv.push_back(argument.data());
      argv.push_back(nullptr);
      execv(argv[0], argv.data());
      _exit(127);
    }
    return pid;
  }

  // Runs cohort-train to its end; its exit code, its output in `*output`.
  int Run(const std::vector<std::string>& flags, std::string* output,
          const std::string& secret = "end of training test") const {
    const fs::path log = scratch_.path() / "run.log";
    const int code =
        cohort::testing::WaitForChildOrSignal(Start(flags, log, secret), 240s, SIGKILL);
    *output = cohort::testing::ReadText(log);
    return code;
  }

  cohort::testing::ScratchDirectory scratch_{"cohort-end-of-training"};
  const fs::path data_ = scratch_.path() / "data";
  const fs::path saved_ = scratch_.path() / "saved";
};

// Kill points are file events of the end sequence, in order; the test kills as soon as it sees
// one (a run that got further before the kill landed still has to pass the same checks).
TEST_F(EndOfTrainingTest, AKillAnywhereInTheEndSequenceNeverTrainsAgain) {
  for (const char* event :
       {"saved/weights.pt", "saved/manifest.json", "backup/training_complete"}) {
    SCOPED_TRACE(event);
    fs::remove_all(saved_);
    const fs::path backup = scratch_.path() / "backup";
    fs::remove_all(backup);
    const std::vector<std::string> flags = Flags(backup);
    const fs::path log = scratch_.path() / "killed.log";
    const pid_t pid = Start(flags, log);
    const bool seen = cohort::testing::WaitForFile(scratch_.path() / event, 240s);
    kill(pid, SIGKILL);
    const int killed = cohort::testing::WaitForChildOrSignal(pid, 60s, SIGKILL);
    const std::string killed_output = cohort::testing::ReadText(log);
    ASSERT_TRUE(seen) << killed_output;
    // Both epochs were trained before the end sequence began.
    ASSERT_NE(killed_output.find("epoch 2/2:"), std::string::npos) << killed_output;

    // A writer killed mid-write leaves its temporary file; a dead pid's is removed at start.
    const std::string stale = ".weights.pt.tmp9999999";
    cohort::testing::WriteText(saved_ / stale, "partial");
    if (fs::exists(backup / "chief")) {
      cohort::testing::WriteText(backup / "chief" / ".ckpt-3.pt.tmp9999999", "partial");
    }

    std::string output;
    ASSERT_EQ(Run(flags, &output), 0) << "killed with " << killed << "\n" << output;
    EXPECT_EQ(output.find("epoch 1/2:"), std::string::npos) << "trained again:\n" << output;
    const bool resumed_past_the_end =
        output.find("resuming from epoch 3 step 0") != std::string::npos;
    const bool found_complete =
        output.find("this run already completed training") != std::string::npos;
    EXPECT_TRUE(resumed_past_the_end || found_complete) << output;
    // How the kill landed, for the record: 137 before the task ended, 0 after.
    RecordProperty(std::string("killed_at_") + event,
                   std::to_string(killed) + (found_complete ? " completed" : " resumed"));
    EXPECT_NE(output.find("test accuracy"), std::string::npos) << output;
    EXPECT_NE(output.find("saved model: " + saved_.string()), std::string::npos) << output;
    EXPECT_TRUE(fs::exists(saved_ / "manifest.json"));
    EXPECT_TRUE(fs::exists(saved_ / "weights.pt"));
    EXPECT_FALSE(fs::exists(backup / "chief")) << "the backup outlived a finished job";
    EXPECT_EQ(TemporaryFiles(scratch_.path()), std::vector<std::string>());
  }
}

// The completion marker belongs to its run: the same job run again (a new secret) trains.
TEST_F(EndOfTrainingTest, ALaterRunOfTheJobTrainsAfresh) {
  const fs::path backup = scratch_.path() / "backup";
  std::string output;
  ASSERT_EQ(Run(Flags(backup), &output, "first run"), 0) << output;
  EXPECT_TRUE(fs::exists(backup / "training_complete"));
  EXPECT_FALSE(fs::exists(backup / "chief"));
  ASSERT_EQ(Run(Flags(backup), &output, "first run"), 0) << output;
  EXPECT_NE(output.find("this run already completed training"), std::string::npos) << output;
  ASSERT_EQ(Run(Flags(backup), &output, "second run"), 0) << output;
  EXPECT_NE(output.find("epoch 1/2:"), std::string::npos) << output;
}

TEST_F(EndOfTrainingTest, AFullDiskIsOneLineNamingTheFileAndExitThree) {
  cohort::testing::SmallFileSystem disk(64 * 1024);
  if (!disk.mounted()) COHORT_SKIP_OR_FAIL_IN_CI(disk.why_not());
  const fs::path backup = disk.path() / "backup";
  std::string output;
  EXPECT_EQ(Run(Flags(backup), &output), 3) << output;
  EXPECT_NE(
      output.find(
          "cohort-train: error: I/O error: BackupAndRestore: ckpt-1 not written, no backup yet: "
          "cannot write "),
      std::string::npos)
      << output;
  EXPECT_NE(output.find((backup / "chief" / ".ckpt-1.pt.tmp").string()), std::string::npos)
      << output;
  EXPECT_NE(output.find("No space left on device"), std::string::npos) << output;
  EXPECT_NE(output.find("a restart does not cure"), std::string::npos) << output;
  EXPECT_EQ(output.find("terminate called"), std::string::npos) << output;
  EXPECT_EQ(output.find("c10::Error"), std::string::npos) << output;
  EXPECT_EQ(TemporaryFiles(disk.path()), std::vector<std::string>());
}

TEST_F(EndOfTrainingTest, StorageUrlsAreCheckedOrRefusedNamingTheFlag) {
  // The path flags that take a bucket check it before training: with no credentials the error
  // names the flag, the URL and what to set.
  for (const std::string& flag :
       std::vector<std::string>{"--saved_model_path", "--tensorboard_dir", "--data_dir"}) {
    std::string output;
    EXPECT_EQ(Run({flag + "=gs://bucket/dir"}, &output), 2) << output;
    EXPECT_NE(output.find(flag + ": gs://bucket/dir: no Cloud Storage credentials for gs://"),
              std::string::npos)
        << output;
  }
  {
    // --model_checkpoint_path writes local files only.
    std::string output;
    EXPECT_EQ(Run({"--model_checkpoint_path=gs://bucket/dir"}, &output), 2) << output;
    EXPECT_NE(output.find("--model_checkpoint_path: \"gs://bucket/dir\" is a URL (gs://)"),
              std::string::npos)
        << output;
    EXPECT_NE(output.find("give the mounted path, e.g. /mnt/gs/bucket/dir"), std::string::npos)
        << output;
  }
  // --checkpoint_path takes s3:// and gs:// (base/storage.h), refused before training when
  // malformed, of another scheme, or without settings.
  std::string output;
  EXPECT_EQ(Run({"--checkpoint_path=hdfs://namenode/checkpoints"}, &output), 2) << output;
  EXPECT_NE(output.find("unsupported scheme 'hdfs'"), std::string::npos) << output;
  EXPECT_EQ(Run({"--checkpoint_path=s3://Bad_Bucket/dir"}, &output), 2) << output;
  EXPECT_NE(output.find("bucket name 'Bad_Bucket'"), std::string::npos) << output;
  EXPECT_EQ(Run({"--checkpoint_path=gs://bucket/dir"}, &output), 2) << output;
  EXPECT_NE(output.find("GS_ACCESS_KEY_ID"), std::string::npos) << output;
  EXPECT_FALSE(fs::exists("gs:")) << "a URL became a local directory";
}

}  // namespace
}  // namespace cohort::train
