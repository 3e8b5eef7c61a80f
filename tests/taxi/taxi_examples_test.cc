// TaxiExamples and WideDeepModel through the parameter-server trainer's interfaces: the examples
// the trainer picks are encoded in its order, and the model's evaluation pass gives the
// probabilities, labels and clamped cross-entropy of its own Predict.
#include "taxi/taxi_examples.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "taxi/taxi_generator.h"
#include "taxi/wide_deep_model.h"

namespace cohort::taxi {
namespace {

class TaxiExamplesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    trips_ = GenerateTaxiTrips(11, TaxiSplit::kTrain, 12);
    auto statistics = ComputeTaxiNumericStatistics(trips_);
    ASSERT_TRUE(statistics.ok()) << statistics.status().ToString();
    encoder_.emplace(*statistics);
  }

  std::vector<TaxiTrip> trips_;
  std::optional<TaxiFeatureEncoder> encoder_;
};

TEST_F(TaxiExamplesTest, EncodesThePickedTripsInTheTrainersOrder) {
  const TaxiExamples examples(trips_, *encoder_);
  EXPECT_EQ(examples.size(), 12);
  std::unique_ptr<train::EncodedBatch> batch = examples.NewBatch();
  const std::vector<int64_t> picked = {7, 0, 3};
  examples.Encode(picked, batch.get());
  EXPECT_EQ(batch->size(), 3);

  TaxiFeatureBatch expected;
  encoder_->Encode(std::vector<TaxiTrip>{trips_[7], trips_[0], trips_[3]}, &expected);
  const TaxiFeatureBatch& encoded = static_cast<const TaxiBatch&>(*batch).features;
  EXPECT_EQ(encoded.wide_ids, expected.wide_ids);
  EXPECT_EQ(encoded.embedding_ids, expected.embedding_ids);
  EXPECT_EQ(encoded.numeric, expected.numeric);
  EXPECT_EQ(encoded.labels, expected.labels);

  // The batch is reused: a smaller pick replaces it.
  examples.Encode(std::vector<int64_t>{5}, batch.get());
  EXPECT_EQ(batch->size(), 1);
}

TEST_F(TaxiExamplesTest, TheEvaluationPassIsPredictWithTheClampedCrossEntropy) {
  WideDeepConfig config;
  config.embedding_width = 2;
  config.hidden_units = {3};
  auto model = WideDeepModel::Create(config);
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  const train::ParameterServerModel& generic = *model;
  EXPECT_EQ(generic.Describe().name, kWideDeepModelName);

  const TaxiExamples examples(trips_, *encoder_);
  std::unique_ptr<train::EncodedBatch> batch = examples.NewBatch();
  std::vector<int64_t> all(trips_.size());
  for (size_t i = 0; i < all.size(); ++i) all[i] = static_cast<int64_t>(i);
  examples.Encode(all, batch.get());
  std::vector<std::vector<float>> dense;
  for (const ps::DenseVariable& variable : generic.DenseVariables()) {
    dense.push_back(variable.initial);
  }
  train::BatchLookups lookups = generic.Lookups(*batch);
  for (train::TableLookup& table : lookups.tables) {
    table.rows.resize(table.ids.size() * table.row_width);
    for (size_t i = 0; i < table.rows.size(); ++i) table.rows[i] = 0.2f * std::sin(1.0f + i);
  }

  auto evaluation = generic.Evaluate(*batch, dense, lookups);
  ASSERT_TRUE(evaluation.ok()) << evaluation.status().ToString();
  const TaxiFeatureBatch& features = static_cast<const TaxiBatch&>(*batch).features;
  auto probabilities = model->Predict(features, dense, lookups);
  ASSERT_TRUE(probabilities.ok()) << probabilities.status().ToString();
  EXPECT_EQ(evaluation->scores, *probabilities);
  ASSERT_EQ(evaluation->labels.size(), trips_.size());
  double loss_sum = 0;
  for (size_t i = 0; i < trips_.size(); ++i) {
    EXPECT_EQ(evaluation->labels[i], features.labels[i] > 0.5f ? 1 : 0);
    const double p = std::clamp((*probabilities)[i], 1e-7, 1 - 1e-7);
    loss_sum -= evaluation->labels[i] ? std::log(p) : std::log(1 - p);
  }
  EXPECT_NEAR(evaluation->loss_sum, loss_sum, 1e-9);
  EXPECT_TRUE(evaluation->metric_sums.empty());

  // The training step reports the mean loss and no other metric.
  train::BatchLookups step_lookups = lookups;
  std::vector<std::vector<float>> dense_gradients;
  auto step = generic.ComputeGradients(*batch, dense, step_lookups, &dense_gradients);
  ASSERT_TRUE(step.ok()) << step.status().ToString();
  EXPECT_NEAR(step->loss, loss_sum / static_cast<double>(trips_.size()), 1e-4);
  EXPECT_TRUE(step->metrics.empty());
  EXPECT_EQ(dense_gradients.size(), dense.size());
}

}  // namespace
}  // namespace cohort::taxi
