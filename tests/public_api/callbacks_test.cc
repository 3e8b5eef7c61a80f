// cohort/callbacks.h through Fit: a run stopped mid-way resumes from its backup, a restarted task
// of a completed run trains no more, and the checkpoint and TensorBoard files appear.
#include "cohort/callbacks.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <torch/torch.h>

#include <atomic>
#include <filesystem>

#include "api_test_support.h"
#include "cohort/fit.h"
#include "cohort/status.h"

namespace cohort {
namespace {

using api_testing::TempDir;
using api_testing::TestStrategyOptions;

// A source that fails once `failing_after` batches have been gathered, as a killed worker stops.
class FailingSource : public BatchSource {
 public:
  FailingSource(TensorSource source, int64_t failing_after)
      : source_(std::move(source)), failing_after_(failing_after) {}
  int64_t size() const override { return source_.size(); }
  Batch Get(const std::vector<int64_t>& indices) const override {
    if (failing_after_ >= 0 && gathered_++ >= failing_after_) {
      throw std::runtime_error("the disk went away");
    }
    return source_.Get(indices);
  }

 private:
  TensorSource source_;
  int64_t failing_after_;
  mutable std::atomic<int64_t> gathered_{0};
};

TensorSource Regression(int64_t samples) {
  torch::manual_seed(4);
  const torch::Tensor x = torch::randn({samples, 3});
  return TensorSource(x, x.sum(1, /*keepdim=*/true));
}

FitOptions Options() {
  FitOptions options;
  options.epochs = 4;
  options.per_worker_batch = 8;  // 16 steps per epoch of 128 samples
  options.eval_batch = 64;
  return options;
}

// Sets COHORT_JOB_SECRET for the test's life, so that runs have an identity.
class JobSecret {
 public:
  JobSecret() { setenv("COHORT_JOB_SECRET", "0123456789abcdef0123456789abcdef", 1); }
  ~JobSecret() { unsetenv("COHORT_JOB_SECRET"); }
};

TEST(Callbacks, AStoppedRunResumesFromItsBackupAndEndsIt) {
  const JobSecret secret;
  TempDir dir;
  MultiWorkerMirrored strategy(Cluster::FromTfConfig(""), TestStrategyOptions());
  const TensorSource data = Regression(128);

  {  // The first run stops in its third epoch, after a backup every 4 steps.
    torch::nn::Linear linear(3, 1);
    torch::optim::Adam optimizer(linear->parameters(), 0.05);
    FitOptions options = Options();
    options.callbacks = {BackupAndRestore(dir / "backup", /*save_every_steps=*/4)};
    FailingSource failing(data, /*failing_after=*/40);
    try {
      Fit(strategy, linear, optimizer, failing, data, MeanSquaredError(), options);
      FAIL() << "the run did not stop";
    } catch (const Error& error) {
      EXPECT_NE(std::string(error.what()).find("the disk went away"), std::string::npos)
          << error.what();
    }
    EXPECT_TRUE(std::filesystem::exists(dir / "backup/chief"));
  }

  // The restarted run resumes; the backup is gone once it completes.
  torch::nn::Linear linear(3, 1);
  torch::optim::Adam optimizer(linear->parameters(), 0.05);
  FitOptions options = Options();
  options.callbacks = {BackupAndRestore(dir / "backup", 4)};
  ::testing::internal::CaptureStdout();
  const FitResult result =
      Fit(strategy, linear, optimizer, data, data, MeanSquaredError(), options);
  const std::string printed = ::testing::internal::GetCapturedStdout();
  EXPECT_NE(printed.find("resuming from epoch 3"), std::string::npos) << printed;
  EXPECT_EQ(result.global_steps, 64);
  EXPECT_FALSE(result.already_complete);
  EXPECT_FALSE(std::filesystem::exists(dir / "backup/chief"));

  // A task of the same run restarted after the end trains no more and reports the run's figures.
  torch::nn::Linear again(3, 1);
  torch::optim::Adam again_optimizer(again->parameters(), 0.05);
  const FitResult repeated =
      Fit(strategy, again, again_optimizer, data, data, MeanSquaredError(), options);
  EXPECT_TRUE(repeated.already_complete);
  EXPECT_EQ(repeated.global_steps, 64);
  EXPECT_DOUBLE_EQ(repeated.loss, result.loss);
}

TEST(Callbacks, CheckpointsAndTensorBoardFilesAreWritten) {
  TempDir dir;
  MultiWorkerMirrored strategy(Cluster::FromTfConfig(""), TestStrategyOptions());
  const TensorSource data = Regression(64);
  torch::nn::Linear linear(3, 1);
  torch::optim::SGD optimizer(linear->parameters(), 0.05);
  FitOptions options = Options();
  options.epochs = 2;
  options.callbacks = {ModelCheckpoint(dir / "checkpoints"), TensorBoard(dir / "logs"), Progress()};
  ::testing::internal::CaptureStdout();
  Fit(strategy, linear, optimizer, data, data, MeanSquaredError(), options);
  const std::string printed = ::testing::internal::GetCapturedStdout();
  EXPECT_NE(printed.find("epoch 2/2"), std::string::npos) << printed;
  EXPECT_TRUE(std::filesystem::exists(dir / "checkpoints/ckpt-1.pt"));
  EXPECT_TRUE(std::filesystem::exists(dir / "checkpoints/ckpt-2.pt"));
  EXPECT_TRUE(std::filesystem::exists(dir / "logs/train"));
  EXPECT_TRUE(std::filesystem::exists(dir / "logs/validation"));
}

TEST(Callbacks, ADirectoryIsRequired) {
  EXPECT_THROW(BackupAndRestore(""), Error);
  EXPECT_THROW(ModelCheckpoint(""), Error);
  EXPECT_THROW(TensorBoard(""), Error);
}

}  // namespace
}  // namespace cohort
