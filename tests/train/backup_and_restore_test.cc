#include "train/backup_and_restore.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <optional>

#include "base/file.h"
#include "test_support.h"
#include "testing/host.h"
#include "testing/scratch_directory.h"
#include "testing/small_file_system.h"
#include "train/checkpoint_state.h"
#include "train/progress_callback.h"
#include "train/summary/event.pb.h"
#include "train/summary/tfrecord.h"
#include "train/tensorboard_callback.h"

namespace cohort::train {
namespace {

namespace fs = std::filesystem;
using testing::MakeTrainer;
using testing::SmallData;
using testing::SmallRun;

// Stands in for a SIGKILL: stops training with a retryable error after a given global step.
class CrashAfterStep : public Callback {
 public:
  explicit CrashAfterStep(int64_t step) : step_(step) {}
  Status OnBatchEnd(const FitPlan&, TrainingState&, const BatchLogs& logs) override {
    if (logs.global_step == step_) return Status::Unavailable("simulated crash");
    return Status::OK();
  }

 private:
  int64_t step_;
};

class BackupAndRestoreTest : public ::testing::Test {
 protected:
  std::vector<float> Uninterrupted() {
    auto trainer = MakeTrainer(SmallRun(), data_, &strategy_);
    EXPECT_TRUE(trainer->Fit({}).ok());
    return trainer->ParameterVector();
  }

  cohort::testing::ScratchDirectory scratch_{"cohort-backup"};
  const std::string dir_ = scratch_.path().string();
  SmallData data_;
  SingleProcessStrategy strategy_;
};

// A run killed mid-epoch and restarted ends with exactly the weights of a run never interrupted:
// the backup holds weights, optimizer and RNG state, and the data order is a function of the step.
TEST_F(BackupAndRestoreTest, ResumedRunMatchesUninterruptedRun) {
  const std::vector<float> expected = Uninterrupted();
  const BackupOptions backup{dir_ + "/backup", /*save_every_steps=*/4, true, ""};
  {
    auto trainer = MakeTrainer(SmallRun(), data_, &strategy_);
    BackupAndRestore callback(backup);
    CrashAfterStep crash(10);  // backups were taken at steps 4, 6 (epoch end) and 8
    Status status = trainer->Fit({&callback, &crash});
    ASSERT_EQ(status.code(), Status::Code::kUnavailable);
    auto latest = ReadLatestCheckpoint(dir_ + "/backup/chief");
    ASSERT_TRUE(latest.ok() && latest->has_value());
    // backups_to_keep = 2: ckpt-2 (step 6) and ckpt-3 (step 8), each with its manifest.
    std::vector<std::string> files;
    for (const auto& entry : fs::directory_iterator(dir_ + "/backup/chief")) {
      files.push_back(entry.path().filename().string());
    }
    std::sort(files.begin(), files.end());
    EXPECT_EQ(files, (std::vector<std::string>{"checkpoint", "ckpt-2.manifest.json", "ckpt-2.pt",
                                               "ckpt-3.manifest.json", "ckpt-3.pt"}));
  }
  auto trainer = MakeTrainer(SmallRun(), data_, &strategy_);
  BackupAndRestore callback(backup);
  ::testing::internal::CaptureStdout();
  Status status = trainer->Fit({&callback});
  const std::string output = ::testing::internal::GetCapturedStdout();
  ASSERT_TRUE(status.ok()) << status.ToString();
  // Global step 8 is epoch 2 (steps 6..11), 2 steps in.
  EXPECT_NE(output.find("resuming from epoch 2 step 2 (global step 8)"), std::string::npos)
      << output;
  EXPECT_EQ(trainer->global_step(), 18);
  EXPECT_EQ(trainer->ParameterVector(), expected);
  // Kept past the fit (the program still has its model to save), deleted when the program says
  // the job has finished.
  EXPECT_TRUE(fs::exists(dir_ + "/backup/chief/checkpoint"));
  ASSERT_TRUE(callback.DeleteBackup(trainer->plan()).ok());
  EXPECT_FALSE(fs::exists(dir_ + "/backup"));
}

TEST_F(BackupAndRestoreTest, EpochBackupsResumeAtTheNextEpoch) {
  const BackupOptions backup{dir_ + "/backup", 0, true, ""};
  {
    auto trainer = MakeTrainer(SmallRun(), data_, &strategy_);
    BackupAndRestore callback(backup);
    CrashAfterStep crash(9);
    ASSERT_FALSE(trainer->Fit({&callback, &crash}).ok());
  }
  auto trainer = MakeTrainer(SmallRun(), data_, &strategy_);
  BackupAndRestore callback(backup);
  ::testing::internal::CaptureStdout();
  ASSERT_TRUE(trainer->Fit({&callback}).ok());
  const std::string output = ::testing::internal::GetCapturedStdout();
  EXPECT_NE(output.find("resuming from epoch 2 step 0 (global step 6)"), std::string::npos)
      << output;
}

TEST_F(BackupAndRestoreTest, KeepsTheBackupWhenAskedTo) {
  auto trainer = MakeTrainer(SmallRun(), data_, &strategy_);
  BackupAndRestore callback(BackupOptions{dir_ + "/backup", 0, /*delete_on_success=*/false, ""});
  ASSERT_TRUE(trainer->Fit({&callback}).ok());
  auto latest = ReadLatestCheckpoint(dir_ + "/backup/chief");
  ASSERT_TRUE(latest.ok());
  EXPECT_EQ(latest->value_or(""), "ckpt-3");
}

// A step backup taken at an epoch's last step is a position before that epoch's end: the resumed
// run trains no step of it, evaluates, and logs no made-up training figures for it.
TEST_F(BackupAndRestoreTest, ResumeAfterAnEpochsLastStepReportsNoTrainingFigures) {
  const std::vector<float> expected = Uninterrupted();
  const BackupOptions backup{dir_ + "/backup", /*save_every_steps=*/3, true, ""};
  const TensorBoardOptions tensorboard{dir_ + "/logs", 0};
  {
    auto trainer = MakeTrainer(SmallRun(), data_, &strategy_);
    BackupAndRestore callback(backup);
    CrashAfterStep crash(6);  // after the backup at step 6, before epoch 1's end
    ::testing::internal::CaptureStdout();
    ASSERT_FALSE(trainer->Fit({&callback, &crash}).ok());
    ::testing::internal::GetCapturedStdout();
  }
  auto trainer = MakeTrainer(SmallRun(), data_, &strategy_);
  BackupAndRestore callback(backup);
  TensorBoardCallback summaries(tensorboard);
  ProgressCallback progress(stdout, /*bar=*/false);
  ::testing::internal::CaptureStdout();
  ASSERT_TRUE(trainer->Fit({&callback, &summaries, &progress}).ok());
  const std::string output = ::testing::internal::GetCapturedStdout();
  EXPECT_NE(output.find("resuming from epoch 1 step 6 (global step 6)"), std::string::npos)
      << output;
  EXPECT_NE(output.find("epoch 1/3: 0 steps in"), std::string::npos) << output;
  EXPECT_NE(output.find("no steps left after the resume"), std::string::npos) << output;
  EXPECT_EQ(trainer->ParameterVector(), expected);

  // The training log has epoch figures for epochs 2 and 3 only (global steps 12 and 18).
  std::vector<int64_t> epoch_loss_steps;
  for (const auto& entry : fs::directory_iterator(dir_ + "/logs/train")) {
    auto records = ReadTfRecordFile(entry.path().string());
    ASSERT_TRUE(records.ok()) << records.status().ToString();
    for (const std::string& record : *records) {
      proto::Event event;
      ASSERT_TRUE(event.ParseFromString(record));
      for (const auto& value : event.summary().value()) {
        if (value.tag() == "epoch_loss") epoch_loss_steps.push_back(event.step());
      }
    }
  }
  EXPECT_EQ(epoch_loss_steps, (std::vector<int64_t>{12, 18}));
}

// After a restart TensorBoard must drop what the interrupted run logged after its backup: the new
// event file starts with SessionLog START at the first step the resumed run logs again.
TEST_F(BackupAndRestoreTest, ResumeWritesSessionStartForTensorBoard) {
  const BackupOptions backup{dir_ + "/backup", 4, true, ""};
  const TensorBoardOptions tensorboard{dir_ + "/logs", 1};
  {
    auto trainer = MakeTrainer(SmallRun(), data_, &strategy_);
    BackupAndRestore callback(backup);
    TensorBoardCallback summaries(tensorboard);
    CrashAfterStep crash(10);
    ASSERT_FALSE(trainer->Fit({&callback, &summaries, &crash}).ok());
  }
  auto trainer = MakeTrainer(SmallRun(), data_, &strategy_);
  BackupAndRestore callback(backup);
  TensorBoardCallback summaries(tensorboard);
  ::testing::internal::CaptureStdout();
  ASSERT_TRUE(trainer->Fit({&callback, &summaries}).ok());
  ::testing::internal::GetCapturedStdout();

  std::vector<std::string> files;
  for (const auto& entry : fs::directory_iterator(dir_ + "/logs/train")) {
    files.push_back(entry.path().string());
  }
  std::sort(files.begin(), files.end());
  ASSERT_EQ(files.size(), 2u);
  auto records = ReadTfRecordFile(files[1]);
  ASSERT_TRUE(records.ok()) << records.status().ToString();
  ASSERT_GE(records->size(), 3u);
  proto::Event start, first_scalar;
  ASSERT_TRUE(start.ParseFromString((*records)[1]));
  EXPECT_EQ(start.session_log().status(), proto::SessionLog::START);
  EXPECT_EQ(start.step(), 9);
  ASSERT_TRUE(first_scalar.ParseFromString((*records)[2]));
  EXPECT_EQ(first_scalar.step(), 9);
  EXPECT_EQ(first_scalar.summary().value(0).tag(), "batch_loss");
}

// A minimal TrainingState for checking where files go; Save writes `bytes` bytes through the
// file layer, as the trainer does.
class FakeState : public TrainingState {
 public:
  StatusOr<FileChecksum> Save(const std::string& path) override {
    saved.push_back(path);
    return WriteFileWithChecksum(path, std::string(bytes, 's'));
  }
  Status Load(std::string_view bytes, const std::string& origin) override {
    loaded.push_back(origin);
    return Status::OK();
  }
  StatusOr<FileChecksum> SaveWeights(const std::string& path) override { return Save(path); }
  TrainingPosition position() const override { return {epoch, 0}; }
  std::vector<std::string> saved;
  std::vector<std::string> loaded;
  size_t bytes = 5;
  int epoch = 1;
};

// Only the chief's backup is ever read, so the other workers write none (Keras has them write a
// full copy into workertemp_<index> and delete it).
TEST_F(BackupAndRestoreTest, NonChiefWorkersWriteNothing) {
  FitPlan plan;
  plan.num_workers = 3;
  plan.rank = 2;
  plan.is_chief = false;
  plan.task_index = 2;
  plan.steps_per_epoch = 6;
  FakeState state;
  BackupAndRestore callback(BackupOptions{dir_ + "/backup", 0, true, "run-a"});
  ASSERT_TRUE(callback.OnEpochEnd(plan, state, EpochLogs{}).ok());
  EXPECT_TRUE(state.saved.empty());
  ASSERT_TRUE(callback.MarkComplete(plan, "done\n").ok());
  EXPECT_FALSE(fs::exists(dir_ + "/backup"));
  // Nothing to restore from on a non-chief: the chief's state is broadcast.
  EXPECT_TRUE(callback.RestoreState(plan, state).ok());
}

// The marker says that run "run-a" completed; it counts for that run only, survives the backup's
// deletion, and a later run's chief removes it when it starts training.
TEST_F(BackupAndRestoreTest, TheCompletionMarkerBelongsToItsRun) {
  const std::string backup_dir = dir_ + "/backup";
  FitPlan plan;
  plan.steps_per_epoch = 6;
  FakeState state;
  BackupAndRestore run_a(BackupOptions{backup_dir, 0, true, "run-a"});
  ASSERT_TRUE(run_a.OnEpochEnd(plan, state, EpochLogs{}).ok());
  EXPECT_EQ(*BackupAndRestore::CompletedRun(backup_dir, "run-a"), std::nullopt);
  ASSERT_TRUE(run_a.MarkComplete(plan, "test accuracy 0.9\n").ok());
  ASSERT_TRUE(run_a.DeleteBackup(plan).ok());
  EXPECT_FALSE(fs::exists(backup_dir + "/chief"));
  EXPECT_EQ(*BackupAndRestore::CompletedRun(backup_dir, "run-a"),
            std::optional<std::string>("test accuracy 0.9\n"));
  EXPECT_EQ(*BackupAndRestore::CompletedRun(backup_dir, "run-b"), std::nullopt);
  // Open mode: runs cannot be told apart, so no marker counts.
  EXPECT_EQ(*BackupAndRestore::CompletedRun(backup_dir, ""), std::nullopt);

  BackupAndRestore run_b(BackupOptions{backup_dir, 0, true, "run-b"});
  ASSERT_TRUE(run_b.RestoreState(plan, state).ok());
  EXPECT_FALSE(fs::exists(backup_dir + "/" + kTrainingCompleteFile));

  // Open mode writes no marker, and the deletion takes the whole directory.
  BackupAndRestore open(BackupOptions{backup_dir, 0, true, ""});
  ASSERT_TRUE(open.OnEpochEnd(plan, state, EpochLogs{}).ok());
  ASSERT_TRUE(open.MarkComplete(plan, "done\n").ok());
  ASSERT_TRUE(open.DeleteBackup(plan).ok());
  EXPECT_FALSE(fs::exists(backup_dir));
}

// A chief killed mid-write left temporary files; the next chief removes them before restoring.
TEST_F(BackupAndRestoreTest, RestoringRemovesADeadWritersTemporaryFiles) {
  const std::string chief = dir_ + "/backup/chief";
  fs::create_directories(chief);
  testing::WriteFile(chief + "/.ckpt-2.pt.tmp9999999", "partial");
  FitPlan plan;
  FakeState state;
  BackupAndRestore callback(BackupOptions{dir_ + "/backup", 0, true, "run-a"});
  ASSERT_TRUE(callback.RestoreState(plan, state).ok());
  EXPECT_FALSE(fs::exists(chief + "/.ckpt-2.pt.tmp9999999"));
}

// A backup that cannot be written (a full disk) is an error naming the file and the system's
// words; the state file still names the last good backup, which stays whole, and nothing partial
// is left.
TEST_F(BackupAndRestoreTest, AFailedBackupKeepsTheLastGoodOne) {
  cohort::testing::SmallFileSystem disk(64 * 1024);
  if (!disk.mounted()) COHORT_SKIP_OR_FAIL_IN_CI(disk.why_not());
  const std::string backup_dir = (disk.path() / "backup").string();
  FitPlan plan;
  plan.steps_per_epoch = 6;
  FakeState state;
  state.bytes = 16 * 1024;
  BackupAndRestore callback(BackupOptions{backup_dir, 0, true, "run-a"});
  ASSERT_TRUE(callback.OnEpochEnd(plan, state, EpochLogs{}).ok());
  state.bytes = 128 * 1024;
  state.epoch = 2;
  Status status = callback.OnEpochEnd(plan, state, EpochLogs{});
  EXPECT_EQ(status.code(), Status::Code::kIOError);
  EXPECT_NE(status.message().find("BackupAndRestore: ckpt-2 not written, ckpt-1 stays the backup: "
                                  "cannot write " +
                                  backup_dir + "/chief/.ckpt-2.pt.tmp"),
            std::string::npos)
      << status.ToString();
  EXPECT_NE(status.message().find("No space left on device"), std::string::npos);
  EXPECT_EQ(ReadLatestCheckpoint(backup_dir + "/chief")->value_or(""), "ckpt-1");
  EXPECT_EQ(ReadWholeFile(backup_dir + "/chief/ckpt-1.pt")->size(), 16u * 1024);
  std::vector<std::string> files;
  for (const auto& entry : fs::directory_iterator(backup_dir + "/chief")) {
    files.push_back(entry.path().filename().string());
  }
  std::sort(files.begin(), files.end());
  EXPECT_EQ(files, (std::vector<std::string>{"checkpoint", "ckpt-1.manifest.json", "ckpt-1.pt"}));
}

}  // namespace
}  // namespace cohort::train

namespace cohort::train {
namespace {

// Flips bytes of `path` in place at ten offsets spread over the file, as a failing disk or a
// stray write would.
void FlipBytes(const std::string& path) {
  std::string bytes = *ReadWholeFile(path);
  for (int i = 1; i <= 10; ++i) bytes[bytes.size() * i / 11] ^= 0x5a;
  testing::WriteFile(path, bytes);
}

class BackupFallbackTest : public BackupAndRestoreTest {
 protected:
  // A run that took backups at steps 4 (ckpt-1), 6 (ckpt-2, the epoch's end) and 8 (ckpt-3) and
  // then crashed, keeping ckpt-2 and ckpt-3.
  void CrashAfterThreeBackups(int backups_to_keep = 2) {
    auto trainer = MakeTrainer(SmallRun(), data_, &strategy_);
    BackupAndRestore callback(Options(backups_to_keep));
    CrashAfterStep crash(10);
    ::testing::internal::CaptureStdout();
    ASSERT_EQ(trainer->Fit({&callback, &crash}).code(), Status::Code::kUnavailable);
    ::testing::internal::GetCapturedStdout();
  }
  BackupOptions Options(int backups_to_keep = 2) const {
    return BackupOptions{dir_ + "/backup", /*save_every_steps=*/4, true, "", backups_to_keep};
  }
  // Restarts the run; what Fit returned, and what it printed.
  std::pair<Status, std::string> Restart(std::vector<float>* parameters = nullptr) {
    auto trainer = MakeTrainer(SmallRun(), data_, &strategy_);
    BackupAndRestore callback(Options());
    ::testing::internal::CaptureStdout();
    Status status = trainer->Fit({&callback});
    std::string output = ::testing::internal::GetCapturedStdout();
    if (parameters) *parameters = trainer->ParameterVector();
    return {status, output};
  }
  std::string Chief(const std::string& file) const { return dir_ + "/backup/chief/" + file; }
};

// Flipped bytes in the newest backup: its checksum no longer matches, it is named and skipped,
// and the run resumes from the older backup and ends exactly as an uninterrupted run.
TEST_F(BackupFallbackTest, ACorruptNewestBackupFallsBackToTheOlderOne) {
  const std::vector<float> expected = Uninterrupted();
  CrashAfterThreeBackups();
  const std::string manifest = *ReadWholeFile(Chief("ckpt-3.manifest.json"));
  FlipBytes(Chief("ckpt-3.pt"));
  std::vector<float> parameters;
  auto [status, output] = Restart(&parameters);
  ASSERT_TRUE(status.ok()) << status.ToString();
  EXPECT_NE(output.find("BackupAndRestore: skipped ckpt-3: " + Chief("ckpt-3.pt") +
                        ": checksum mismatch: expected "),
            std::string::npos)
      << output;
  EXPECT_NE(output.find("found "), std::string::npos) << output;
  EXPECT_NE(output.find("BackupAndRestore: restored " + Chief("ckpt-2.pt") + " (global step 6)"),
            std::string::npos)
      << output;
  EXPECT_NE(output.find("resuming from epoch 2 step 0 (global step 6)"), std::string::npos)
      << output;
  EXPECT_EQ(parameters, expected);
  // The manifest recorded the expected checksum that the message names.
  EXPECT_NE(manifest.find("\"sha256\""), std::string::npos);
}

// A newest backup cut short (truncated, its file gone, or its manifest never written) is skipped
// for the older one in the same way.
TEST_F(BackupFallbackTest, ATruncatedMissingOrUnlistedNewestBackupFallsBack) {
  for (const std::string damage : {"truncated", "missing", "no manifest"}) {
    SCOPED_TRACE(damage);
    fs::remove_all(dir_ + "/backup");
    CrashAfterThreeBackups();
    if (damage == "truncated") {
      std::string bytes = *ReadWholeFile(Chief("ckpt-3.pt"));
      testing::WriteFile(Chief("ckpt-3.pt"), bytes.substr(0, bytes.size() / 2));
    } else if (damage == "missing") {
      fs::remove(Chief("ckpt-3.pt"));
    } else {
      fs::remove(Chief("ckpt-3.manifest.json"));
    }
    auto [status, output] = Restart();
    ASSERT_TRUE(status.ok()) << status.ToString();
    EXPECT_NE(output.find("BackupAndRestore: skipped ckpt-3: "), std::string::npos) << output;
    EXPECT_NE(output.find("restored " + Chief("ckpt-2.pt")), std::string::npos) << output;
  }
}

// When no backup verifies, restoring fails permanently (FailedPrecondition: cohort-train exits 1)
// naming every backup and why, and loads nothing.
TEST_F(BackupFallbackTest, NoBackupThatVerifiesFailsNamingThemAll) {
  CrashAfterThreeBackups();
  FlipBytes(Chief("ckpt-3.pt"));
  FlipBytes(Chief("ckpt-2.pt"));
  auto [status, output] = Restart();
  ASSERT_EQ(status.code(), Status::Code::kFailedPrecondition) << status.ToString();
  EXPECT_NE(status.message().find("no backup in " + dir_ +
                                  "/backup/chief can be restored (2 "
                                  "tried, newest first)"),
            std::string::npos)
      << status.message();
  EXPECT_NE(status.message().find("ckpt-3: " + Chief("ckpt-3.pt") + ": checksum mismatch"),
            std::string::npos);
  EXPECT_NE(status.message().find("ckpt-2: " + Chief("ckpt-2.pt") + ": checksum mismatch"),
            std::string::npos);
  EXPECT_EQ(output.find("restored"), std::string::npos) << output;
}

// backups_to_keep bounds the backups on disk; the state file lists those kept, oldest first.
TEST_F(BackupFallbackTest, KeepsTheNewestBackupsAsAsked) {
  CrashAfterThreeBackups(/*backups_to_keep=*/3);
  EXPECT_EQ(*ReadCheckpointState(dir_ + "/backup/chief"),
            (std::vector<std::string>{"ckpt-1", "ckpt-2", "ckpt-3"}));
  fs::remove_all(dir_ + "/backup");
  CrashAfterThreeBackups(/*backups_to_keep=*/1);
  EXPECT_EQ(*ReadCheckpointState(dir_ + "/backup/chief"), (std::vector<std::string>{"ckpt-3"}));
  EXPECT_FALSE(fs::exists(Chief("ckpt-2.pt")));
  EXPECT_FALSE(fs::exists(Chief("ckpt-2.manifest.json")));
}

}  // namespace
}  // namespace cohort::train
