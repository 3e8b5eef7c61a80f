// A NaN or infinite loss stops training at once: the step is not applied, and by the policy the
// run stops naming the step or rolls back to the newest good backup with a lower learning rate.
// A model with non-finite weights or metrics is never saved.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <limits>
#include <set>

#include "test_support.h"
#include "testing/scratch_directory.h"
#include "train/backup_and_restore.h"
#include "train/model_manifest.h"

namespace cohort::train {
namespace {

namespace fs = std::filesystem;
using testing::SmallData;
using testing::SmallRun;

// The cnn classifier, with a NaN loss at the training steps (counted from 1, per process, so a
// step redone after a rollback counts again) in `poisoned`,
// and, with `nan_weights`, a NaN in its first parameter from the start.
class PoisonedModel : public TrainableModel {
 public:
  PoisonedModel(std::unique_ptr<TrainableModel> inner, std::set<int> poisoned, bool nan_weights)
      : inner_(std::move(inner)), poisoned_(std::move(poisoned)) {
    if (nan_weights) {
      torch::NoGradGuard no_grad;
      inner_->module().parameters()[0].view({-1})[0] = std::numeric_limits<float>::quiet_NaN();
    }
  }
  const std::string& name() const override { return inner_->name(); }
  torch::nn::Module& module() override { return inner_->module(); }
  StepResult Step(const Batch& batch) override {
    StepResult result = inner_->Step(batch);
    // Evaluation calls Step too, without gradients: only training steps count.
    if (torch::GradMode::is_enabled() && poisoned_.count(++steps_)) {
      result.loss = result.loss * std::nan("");
    }
    return result;
  }
  void DescribeInputs(ModelManifest* manifest) const override { inner_->DescribeInputs(manifest); }

 private:
  std::unique_ptr<TrainableModel> inner_;
  std::set<int> poisoned_;
  int steps_ = 0;
};

class NonFiniteTest : public ::testing::Test {
 protected:
  std::unique_ptr<Trainer> Make(const TrainerOptions& options, std::set<int> poisoned,
                                bool nan_weights = false) {
    testing::UseOneComputeThread();
    ModelFactory cnn = data_.Cnn();
    ModelFactory factory = [cnn, poisoned,
                            nan_weights]() -> StatusOr<std::unique_ptr<TrainableModel>> {
      auto inner = cnn();
      if (!inner.ok()) return inner.status();
      return std::unique_ptr<TrainableModel>(
          std::make_unique<PoisonedModel>(std::move(inner).value(), poisoned, nan_weights));
    };
    auto trainer =
        Trainer::Create(options, factory, &data_.train_source, &data_.test_source, &strategy_);
    EXPECT_TRUE(trainer.ok()) << trainer.status().ToString();
    return std::move(trainer).value();
  }

  static bool AllFinite(const std::vector<float>& values) {
    for (float value : values) {
      if (!std::isfinite(value)) return false;
    }
    return true;
  }

  cohort::testing::ScratchDirectory scratch_{"cohort-non-finite"};
  const std::string dir_ = scratch_.path().string();
  SmallData data_;
  SingleProcessStrategy strategy_;
};

// The default policy: the run stops at the step, naming it, with a permanent error, and the
// weights are those from before it.
TEST_F(NonFiniteTest, StopPolicyEndsTheRunNamingTheStepAndDoesNotApplyIt) {
  auto trainer = Make(SmallRun(), {10});
  ::testing::internal::CaptureStdout();
  Status status = trainer->Fit({});
  ::testing::internal::GetCapturedStdout();
  ASSERT_EQ(status.code(), Status::Code::kFailedPrecondition) << status.ToString();
  EXPECT_NE(status.message().find("training step 9"), std::string::npos) << status.message();
  EXPECT_NE(status.message().find("the loss is nan"), std::string::npos) << status.message();
  EXPECT_NE(status.message().find("the step was not applied"), std::string::npos);
  EXPECT_EQ(trainer->global_step(), 9);
  EXPECT_TRUE(AllFinite(trainer->ParameterVector()));
}

// Rollback: the newest good backup is loaded (step 8), the learning rate halved, and training
// finishes; a second bad step rolls back again; past max_rollbacks the run stops.
TEST_F(NonFiniteTest, RollbackPolicyGoesBackToTheLastGoodBackupWithALowerLearningRate) {
  TrainerOptions options = SmallRun();
  options.non_finite = TrainerOptions::NonFinitePolicy::kRollback;
  options.max_rollbacks = 2;
  BackupAndRestore backup(BackupOptions{dir_ + "/backup", /*save_every_steps=*/4, true, ""});
  auto trainer = Make(options, {10, 14});
  ::testing::internal::CaptureStdout();
  Status status = trainer->Fit({&backup});
  const std::string output = ::testing::internal::GetCapturedStdout();
  ASSERT_TRUE(status.ok()) << status.ToString();
  EXPECT_NE(output.find("the loss is nan and the gradient norm nan; the step was not applied; "
                        "rolled back to global step 8"),
            std::string::npos)
      << output;
  EXPECT_NE(output.find("with learning rate 0.005 (rollback 1 of at most 2)"), std::string::npos)
      << output;
  EXPECT_NE(output.find("with learning rate 0.0025 (rollback 2 of at most 2)"), std::string::npos)
      << output;
  EXPECT_EQ(trainer->global_step(), 18);
  EXPECT_TRUE(AllFinite(trainer->ParameterVector()));

  fs::remove_all(dir_ + "/backup");
  options.max_rollbacks = 1;
  auto again = Make(options, {10, 14});
  BackupAndRestore second(BackupOptions{dir_ + "/backup", 4, true, ""});
  ::testing::internal::CaptureStdout();
  status = again->Fit({&second});
  ::testing::internal::GetCapturedStdout();
  EXPECT_EQ(status.code(), Status::Code::kFailedPrecondition);
  EXPECT_NE(status.message().find("already rolled back 1 times"), std::string::npos)
      << status.message();
}

// Rollback without a backup to go back to is the stop policy.
TEST_F(NonFiniteTest, RollbackWithoutABackupStops) {
  TrainerOptions options = SmallRun();
  options.non_finite = TrainerOptions::NonFinitePolicy::kRollback;
  auto trainer = Make(options, {3});
  ::testing::internal::CaptureStdout();
  Status status = trainer->Fit({});
  ::testing::internal::GetCapturedStdout();
  EXPECT_EQ(status.code(), Status::Code::kFailedPrecondition);
  EXPECT_NE(status.message().find("no BackupAndRestore to roll back to"), std::string::npos);
}

// A model with NaN weights, or a NaN metric, is not saved: nothing is written.
TEST_F(NonFiniteTest, ANonFiniteModelOrMetricIsNeverSaved) {
  auto poisoned = Make(SmallRun(), {}, /*nan_weights=*/true);
  Status status = poisoned->SaveModel(dir_ + "/model", {{"test_accuracy", 0.5}}, "");
  EXPECT_EQ(status.code(), Status::Code::kFailedPrecondition);
  EXPECT_NE(status.message().find("holds NaN or infinite values"), std::string::npos)
      << status.message();
  EXPECT_FALSE(fs::exists(dir_ + "/model/manifest.json"));

  auto healthy = Make(SmallRun(), {});
  status = healthy->SaveModel(dir_ + "/model", {{"test_loss", std::nan("")}}, "");
  EXPECT_EQ(status.code(), Status::Code::kFailedPrecondition);
  EXPECT_NE(status.message().find("its metric \"test_loss\" is nan"), std::string::npos)
      << status.message();
  EXPECT_FALSE(fs::exists(dir_ + "/model/manifest.json"));
  EXPECT_EQ(ParseNonFinitePolicy("rollback").value(), TrainerOptions::NonFinitePolicy::kRollback);
  EXPECT_FALSE(ParseNonFinitePolicy("ignore").ok());
}

}  // namespace
}  // namespace cohort::train
