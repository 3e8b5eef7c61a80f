// The fit loop trains a model that is not an image classifier through its two interfaces
// (BatchSource, TrainableModel): the regression of regression_model.h, in one process. The
// multi-worker run of the same model is in multi_worker_test.cc.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "regression_model.h"
#include "test_support.h"
#include "testing/scratch_directory.h"
#include "train/model_checkpoint.h"
#include "train/model_manifest.h"
#include "train/progress_callback.h"
#include "train/tensorboard_callback.h"

namespace cohort::train {
namespace {

namespace fs = std::filesystem;

// Keeps what the fit loop reported at each epoch end.
class RecordEpochs : public Callback {
 public:
  Status OnEpochEnd(const FitPlan&, TrainingState&, const EpochLogs& logs) override {
    epochs.push_back(logs);
    return Status::OK();
  }
  std::vector<EpochLogs> epochs;
};

TEST(CustomModel, TrainsARegressionThroughTheInterfaces) {
  testing::UseOneComputeThread();
  const cohort::testing::ScratchDirectory scratch("cohort-custom-model");
  const std::string dir = scratch.path().string();
  testing::RegressionData data;
  TrainerOptions options = testing::SmallRun();
  options.epochs = 4;
  options.steps_per_epoch = 0;  // one pass over the 256 samples: 32 steps of 8
  SingleProcessStrategy strategy;
  auto trainer = Trainer::Create(options, testing::RegressionModel::Factory(), &data.train,
                                 &data.test, &strategy);
  ASSERT_TRUE(trainer.ok()) << trainer.status().ToString();
  EXPECT_EQ((*trainer)->plan().model_name, "regression");
  EXPECT_EQ((*trainer)->plan().steps_per_epoch, 32);

  auto before = (*trainer)->Evaluate();
  ASSERT_TRUE(before.ok()) << before.status().ToString();
  RecordEpochs record;
  ModelCheckpoint best(ModelCheckpointOptions{dir + "/best", /*save_best_only=*/true});
  TensorBoardCallback tensorboard(TensorBoardOptions{dir + "/logs", 0});
  std::FILE* log = std::fopen((dir + "/progress.log").c_str(), "w");
  ASSERT_NE(log, nullptr);
  ProgressCallback progress(log, /*bar=*/false);
  ASSERT_TRUE((*trainer)->Fit({&record, &best, &tensorboard, &progress}).ok());
  std::fclose(log);
  // The progress lines name the model's metric where an image model's name accuracy.
  std::ifstream in(dir + "/progress.log");
  const std::string lines((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(lines.find("- mean_absolute_error 0."), std::string::npos) << lines;
  EXPECT_NE(lines.find("- val_mean_absolute_error 0."), std::string::npos) << lines;
  auto after = (*trainer)->Evaluate();
  ASSERT_TRUE(after.ok()) << after.status().ToString();

  // The loop averaged the model's own metric and knows nothing of accuracy.
  ASSERT_EQ(record.epochs.size(), 4u);
  for (const EpochLogs& logs : record.epochs) {
    EXPECT_EQ(logs.metrics.size(), 1u);
    EXPECT_EQ(logs.val_metrics.size(), 1u);
    EXPECT_TRUE(logs.metrics.count("mean_absolute_error"));
  }
  EXPECT_EQ(after->samples, 64);
  EXPECT_LT(after->loss, before->loss * 0.2) << "before: " << before->loss;
  EXPECT_LT(after->metrics.at("mean_absolute_error"), before->metrics.at("mean_absolute_error"));
  EXPECT_DOUBLE_EQ(record.epochs.back().val_loss, after->loss);
  // Without accuracy, save_best_only keeps the epochs whose val_loss fell.
  EXPECT_TRUE(fs::exists(dir + "/best/ckpt-1.pt"));

  ASSERT_TRUE(
      (*trainer)->SaveModel(dir + "/model", {{"test_loss", after->loss}}, "synthetic").ok());
  auto manifest = ReadManifest(dir + "/model");
  ASSERT_TRUE(manifest.ok()) << manifest.status().ToString();
  EXPECT_EQ(manifest->model, "regression");
  EXPECT_EQ(manifest->input_shape, (std::vector<int64_t>{testing::kRegressionInputs}));
  EXPECT_TRUE(manifest->classes.empty());
  EXPECT_EQ(manifest->training.global_steps, 4 * 32);
  EXPECT_TRUE(fs::exists(dir + "/model/weights.pt"));
}

// A source's error stops training and names the step whose batch it could not gather.
class FailingSource : public testing::VectorSource {
 public:
  FailingSource() : VectorSource(64, 3) {}
  StatusOr<Batch> Gather(const std::vector<int64_t>& indices) const override {
    return Status::IOError("the disk ate it");
  }
};

TEST(CustomModel, ASourceErrorStopsTrainingNamingTheStep) {
  testing::UseOneComputeThread();
  FailingSource train;
  testing::VectorSource test(16, 4);
  SingleProcessStrategy strategy;
  auto trainer = Trainer::Create(testing::SmallRun(), testing::RegressionModel::Factory(), &train,
                                 &test, &strategy);
  ASSERT_TRUE(trainer.ok()) << trainer.status().ToString();
  Status status = (*trainer)->Fit({});
  EXPECT_EQ(status.code(), Status::Code::kIOError);
  EXPECT_NE(status.ToString().find("step 0"), std::string::npos) << status.ToString();
}

}  // namespace
}  // namespace cohort::train
