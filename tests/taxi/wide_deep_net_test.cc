// taxi-train's model and data on the public API (examples/taxi/wide_deep_net.h): the batch layout
// TaxiTrips gives the module, the module's parameters as the ParameterServer strategy sees them
// (sparse tables and the wide part's prefix), and the AUC of --evaluate.
#include "taxi/wide_deep_net.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

#include "taxi/taxi_generator.h"

namespace cohort::taxi {
namespace {

TaxiNumericStatistics UnitStatistics() {
  TaxiNumericStatistics statistics;
  statistics.standard_deviation.fill(1.0);
  return statistics;
}

TEST(TaxiTripsTest, InputsHoldTheEncodersIdsThenItsNumbersAndTargetsTheLabels) {
  const std::vector<TaxiTrip> trips = GenerateTaxiTrips(7, TaxiSplit::kTrain, 20);
  const TaxiFeatureEncoder encoder(UnitStatistics());
  const TaxiTrips source(trips, encoder);
  ASSERT_EQ(source.size(), 20);
  const Batch batch = source.Get({3, 11});
  const int64_t wide = static_cast<int64_t>(TaxiWideColumns().size());
  const int64_t embedding = static_cast<int64_t>(TaxiEmbeddingColumns().size());
  const int64_t numeric = static_cast<int64_t>(TaxiNumericFeatureNames().size());
  ASSERT_EQ(batch.inputs.sizes(), (std::vector<int64_t>{2, wide + embedding + numeric}));
  ASSERT_EQ(batch.targets.sizes(), (std::vector<int64_t>{2}));
  for (int64_t row = 0; row < 2; ++row) {
    const TaxiTrip& trip = trips[row == 0 ? 3 : 11];
    TaxiFeatureBatch expected;
    encoder.Encode(std::span<const TaxiTrip>(&trip, 1), &expected);
    for (int64_t c = 0; c < wide; ++c) {
      EXPECT_EQ(batch.inputs[row][c].item<float>(), static_cast<float>(expected.wide_ids[c]));
      EXPECT_EQ(static_cast<int64_t>(batch.inputs[row][c].item<float>()), expected.wide_ids[c])
          << "a wide id is not exact as a float";
    }
    for (int64_t c = 0; c < embedding; ++c) {
      EXPECT_EQ(batch.inputs[row][wide + c].item<float>(),
                static_cast<float>(expected.embedding_ids[c]));
    }
    for (int64_t c = 0; c < numeric; ++c) {
      EXPECT_EQ(batch.inputs[row][wide + embedding + c].item<float>(), expected.numeric[c]);
    }
    EXPECT_EQ(batch.targets[row].item<float>(), expected.labels[0]);
  }
}

TEST(WideDeepNetTest, EmbeddingsAreTheSparseTablesAndTheWidePrefixNamesTheWidePartOnly) {
  WideDeepNet net;
  std::set<std::string> wide, embeddings;
  for (const auto& parameter : net->named_parameters()) {
    if (parameter.key().rfind(kWidePart, 0) == 0) wide.insert(parameter.key());
  }
  EXPECT_EQ(wide, (std::set<std::string>{"wide_weights.weight", "wide_bias"}));
  EXPECT_EQ(net->wide_weights->weight.sizes(), (std::vector<int64_t>{TaxiWideIdSpace(), 1}));
  ASSERT_EQ(net->column_embeddings.size(), TaxiEmbeddingColumns().size());
  for (size_t c = 0; c < TaxiEmbeddingColumns().size(); ++c) {
    EXPECT_EQ(net->column_embeddings[c]->weight.size(0), TaxiEmbeddingColumns()[c].size);
  }
}

TEST(WideDeepNetTest, LogitIsTheWideSumPlusTheDeepOutputPerRow) {
  const std::vector<TaxiTrip> trips = GenerateTaxiTrips(3, TaxiSplit::kEval, 5);
  const TaxiFeatureEncoder encoder(UnitStatistics());
  const Batch batch = TaxiTrips(trips, encoder).Get({0, 1, 2, 3, 4});
  WideDeepNet net;
  torch::NoGradGuard no_grad;
  const torch::Tensor logits = net->forward(batch.inputs);
  ASSERT_EQ(logits.sizes(), (std::vector<int64_t>{5}));
  // Raising one wide weight used by row 0 raises row 0's logit by exactly that much.
  const int64_t id = static_cast<int64_t>(batch.inputs[0][0].item<float>());
  net->wide_weights->weight[id][0] += 1.5;
  const torch::Tensor raised = net->forward(batch.inputs);
  EXPECT_NEAR((raised[0] - logits[0]).item<float>(), 1.5f, 1e-5);
}

TEST(BinaryAucTest, CountsOrderedPairsWithTiesAsHalves) {
  EXPECT_DOUBLE_EQ(BinaryAuc(torch::tensor({0.1, 0.4, 0.8, 0.9}), torch::tensor({0, 0, 1, 1})), 1);
  EXPECT_DOUBLE_EQ(BinaryAuc(torch::tensor({0.9, 0.8, 0.4, 0.1}), torch::tensor({0, 0, 1, 1})), 0);
  EXPECT_DOUBLE_EQ(BinaryAuc(torch::tensor({0.5, 0.5}), torch::tensor({0, 1})), 0.5);
  // Positives 0.35 and 0.8 against negatives 0.1 and 0.4: 3 of 4 pairs ordered.
  EXPECT_DOUBLE_EQ(BinaryAuc(torch::tensor({0.1, 0.4, 0.35, 0.8}), torch::tensor({0, 0, 1, 1})),
                   0.75);
  EXPECT_DOUBLE_EQ(BinaryAuc(torch::tensor({0.1, 0.2}), torch::tensor({1, 1})), 0.5);
}

}  // namespace
}  // namespace cohort::taxi
