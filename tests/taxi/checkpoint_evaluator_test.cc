// The evaluator side-car on checkpoints written to disk as the servers write them: it exits after
// its own run's final checkpoint, and asked to stop (the job ended, SIGTERM) it still evaluates
// the newest whole checkpoint before it returns.
#include "train/parameter_server/checkpoint_evaluator.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "ps/checkpoint.h"
#include "ps/shard_store.h"
#include "taxi/taxi_examples.h"
#include "taxi/taxi_generator.h"
#include "taxi/wide_deep_model.h"
#include "testing/scratch_directory.h"
#include "testing/synthetic_data.h"
#include "train/parameter_server/parameter_server_trainer.h"

namespace cohort::taxi {
namespace {

namespace fs = std::filesystem;
using train::CheckpointEvaluatorOptions;
using train::Evaluation;
using train::kFinalCheckpointFile;
using train::RunIdentity;

class CheckpointEvaluatorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    trips_ = GenerateTaxiTrips(3, TaxiSplit::kEval, 200);
    auto statistics = ComputeTaxiNumericStatistics(trips_);
    ASSERT_TRUE(statistics.ok()) << statistics.status().ToString();
    encoder_.emplace(*statistics);
    config_.embedding_width = 2;
    config_.hidden_units = {4};
  }

  // A whole checkpoint of the model's initial variables at `step`, as one ps would save it.
  void WriteCheckpoint(int64_t step) {
    auto model = WideDeepModel::Create(config_);
    ASSERT_TRUE(model.ok()) << model.status().ToString();
    ps::ShardStore store(0, 1);
    for (const ps::DenseVariable& variable : model->DenseVariables()) {
      std::vector<float> initial = variable.initial;
      initial.resize(static_cast<size_t>(variable.shape.rows * variable.shape.row_width));
      ASSERT_TRUE(store
                      .CreateDense({variable.shape.name, 0, variable.shape.rows,
                                    variable.shape.row_width, variable.optimizer},
                                   initial)
                      .ok());
    }
    for (const ps::EmbeddingTableSpec& table : model->Tables()) {
      ASSERT_TRUE(store.CreateTable(table).ok());
    }
    auto saved = ps::SaveShard(store, dir_, step);
    ASSERT_TRUE(saved.ok()) << saved.status().ToString();
    ASSERT_TRUE(ps::WriteManifest(dir_, {step, 1, {*saved}}).ok());
  }

  cohort::StatusOr<Evaluation> Run(std::function<bool()> stop_requested,
                                   std::chrono::milliseconds idle_timeout) {
    CheckpointEvaluatorOptions options;
    options.checkpoint_dir = dir_;
    options.poll_interval = std::chrono::milliseconds(20);
    options.idle_timeout = idle_timeout;
    options.run_identity = RunIdentity(net::JobSecret("this run"));
    options.stop_requested = std::move(stop_requested);
    options.print = [this](const std::string& line) { printed_ += line + "\n"; };
    auto model = WideDeepModel::Create(config_);
    if (!model.ok()) return model.status();
    return train::RunCheckpointEvaluator(options, *model, TaxiExamples(trips_, *encoder_));
  }

  int64_t EvaluatedStep() {
    std::ifstream metrics(dir_ + "/eval/metrics.json");
    return nlohmann::json::parse(metrics).at("global_step").get<int64_t>();
  }

  cohort::testing::ScratchDirectory scratch_{"cohort-checkpoint-evaluator"};
  const std::string dir_ = scratch_.path().string();
  std::vector<TaxiTrip> trips_;
  std::optional<TaxiFeatureEncoder> encoder_;
  WideDeepConfig config_;
  std::string printed_;
};

TEST_F(CheckpointEvaluatorTest, ExitsAfterTheFinalCheckpointOfItsRun) {
  WriteCheckpoint(5);
  train::testing::WriteFile(dir_ + "/" + kFinalCheckpointFile,
                            "5 " + RunIdentity(net::JobSecret("this run")) + "\n");
  auto result = Run(nullptr, std::chrono::seconds(30));
  ASSERT_TRUE(result.ok()) << result.status().ToString();
  EXPECT_EQ(result->examples, 200);
  EXPECT_EQ(EvaluatedStep(), 5);
  EXPECT_NE(printed_.find("eval at global step 5: auc"), std::string::npos) << printed_;
}

// An earlier run's marker is not this run's end: the evaluator keeps waiting (here until its idle
// timeout) for a checkpoint of this run.
TEST_F(CheckpointEvaluatorTest, IgnoresTheMarkerOfAnEarlierRun) {
  WriteCheckpoint(5);
  train::testing::WriteFile(dir_ + "/" + kFinalCheckpointFile,
                            "5 " + RunIdentity(net::JobSecret("an earlier run")) + "\n");
  auto result = Run(nullptr, std::chrono::milliseconds(300));
  EXPECT_EQ(result.status().code(), cohort::Status::Code::kDeadlineExceeded)
      << result.status().ToString();
  EXPECT_NE(result.status().message().find("last evaluated global step 5"), std::string::npos)
      << result.status().ToString();
}

// The job ended before the evaluator saw the final checkpoint: stopping, it evaluates the newest
// whole checkpoint first.
TEST_F(CheckpointEvaluatorTest, AskedToStopItEvaluatesTheNewestCheckpointFirst) {
  WriteCheckpoint(5);
  WriteCheckpoint(9);
  auto result = Run([] { return true; }, std::chrono::seconds(30));
  ASSERT_TRUE(result.ok()) << result.status().ToString();
  EXPECT_EQ(EvaluatedStep(), 9);
  EXPECT_NE(printed_.find("stopping after global step 9"), std::string::npos) << printed_;
}

TEST_F(CheckpointEvaluatorTest, AskedToStopBeforeAnyCheckpointItSaysSo) {
  auto result = Run([] { return true; }, std::chrono::seconds(30));
  EXPECT_EQ(result.status().code(), cohort::Status::Code::kFailedPrecondition);
  EXPECT_NE(result.status().message().find("before any whole checkpoint"), std::string::npos)
      << result.status().ToString();
}

}  // namespace
}  // namespace cohort::taxi
