#include "train/backup_and_restore.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "test_support.h"
#include "testing/scratch_directory.h"
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
  const BackupOptions backup{dir_ + "/backup", /*save_every_steps=*/4, true};
  {
    auto trainer = MakeTrainer(SmallRun(), data_, &strategy_);
    BackupAndRestore callback(backup);
    CrashAfterStep crash(10);  // backups were taken at steps 4, 6 (epoch end) and 8
    Status status = trainer->Fit({&callback, &crash});
    ASSERT_EQ(status.code(), Status::Code::kUnavailable);
    auto latest = ReadLatestCheckpoint(dir_ + "/backup/chief");
    ASSERT_TRUE(latest.ok() && latest->has_value());
    // max_to_keep = 1
    int files = 0;
    for (const auto& entry : fs::directory_iterator(dir_ + "/backup/chief")) {
      files += entry.path().extension() == ".pt";
    }
    EXPECT_EQ(files, 1);
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
  // Deleted once training completed, as Keras does.
  EXPECT_FALSE(fs::exists(dir_ + "/backup"));
}

TEST_F(BackupAndRestoreTest, EpochBackupsResumeAtTheNextEpoch) {
  const BackupOptions backup{dir_ + "/backup", 0, true};
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
  BackupAndRestore callback(BackupOptions{dir_ + "/backup", 0, /*delete_on_success=*/false});
  ASSERT_TRUE(trainer->Fit({&callback}).ok());
  auto latest = ReadLatestCheckpoint(dir_ + "/backup/chief");
  ASSERT_TRUE(latest.ok());
  EXPECT_EQ(latest->value_or(""), "ckpt-3");
}

// A step backup taken at an epoch's last step is a position before that epoch's end: the resumed
// run trains no step of it, evaluates, and logs no made-up training figures for it.
TEST_F(BackupAndRestoreTest, ResumeAfterAnEpochsLastStepReportsNoTrainingFigures) {
  const std::vector<float> expected = Uninterrupted();
  const BackupOptions backup{dir_ + "/backup", /*save_every_steps=*/3, true};
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
  const BackupOptions backup{dir_ + "/backup", 4, true};
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

// A minimal TrainingState for checking where files go.
class FakeState : public TrainingState {
 public:
  Status Save(const std::string& path) override {
    testing::WriteFile(path, "state");
    saved.push_back(path);
    return Status::OK();
  }
  Status Load(const std::string&) override { return Status::OK(); }
  Status SaveWeights(const std::string& path) override { return Save(path); }
  TrainingPosition position() const override { return {1, 0}; }
  std::vector<std::string> saved;
};

TEST_F(BackupAndRestoreTest, NonChiefWorkersWriteToATemporaryDirectoryAndRemoveIt) {
  FitPlan plan;
  plan.num_workers = 3;
  plan.rank = 2;
  plan.is_chief = false;
  plan.task_index = 2;
  plan.steps_per_epoch = 6;
  FakeState state;
  BackupAndRestore callback(BackupOptions{dir_ + "/backup", 0, true});
  ASSERT_TRUE(callback.OnEpochEnd(plan, state, EpochLogs{}).ok());
  ASSERT_EQ(state.saved.size(), 1u);
  EXPECT_EQ(state.saved[0], dir_ + "/backup/workertemp_2/ckpt-1.pt");
  EXPECT_FALSE(fs::exists(dir_ + "/backup/workertemp_2"));
  EXPECT_FALSE(fs::exists(dir_ + "/backup/chief"));
  // Nothing to restore from on a non-chief: the chief's state is broadcast.
  EXPECT_TRUE(callback.RestoreState(plan, state).ok());
}

}  // namespace
}  // namespace cohort::train
