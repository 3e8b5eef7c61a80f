// WideDeepModel without parameter servers: which rows a batch needs, and gradients checked against
// finite differences of the loss, for a dense kernel, the wide weights and an embedding row.
#include "taxi/wide_deep_model.h"

#include <gtest/gtest.h>

#include <cmath>
#include <set>

#include "taxi/taxi_features.h"
#include "taxi/taxi_generator.h"

namespace cohort::taxi {
namespace {

// A small model over a few generated trips, with every pulled row set to a deterministic value.
class WideDeepModelTest : public ::testing::Test {
 protected:
  void SetUp() override {
    trips_ = GenerateTaxiTrips(7, TaxiSplit::kTrain, 16);
    auto statistics = ComputeTaxiNumericStatistics(trips_);
    ASSERT_TRUE(statistics.ok()) << statistics.status().ToString();
    TaxiFeatureEncoder(*statistics).Encode(trips_, &batch_);
    WideDeepConfig config;
    config.embedding_width = 2;
    config.hidden_units = {3};
    auto model = WideDeepModel::Create(config);
    ASSERT_TRUE(model.ok()) << model.status().ToString();
    model_.emplace(std::move(*model));
    for (const ps::DenseVariable& variable : model_->DenseVariables()) {
      dense_.push_back(variable.initial);
    }
    // Zero-initialised biases would hide their gradients' sign; give every value a size.
    for (auto& values : dense_) {
      for (size_t i = 0; i < values.size(); ++i) values[i] += 0.05f * std::sin(1.0f + i);
    }
    lookups_ = model_->Lookups(batch_);
    for (TableLookup& table : lookups_.tables) {
      table.rows.resize(table.ids.size() * table.row_width);
      for (size_t i = 0; i < table.rows.size(); ++i) table.rows[i] = 0.1f * std::cos(2.0f + i);
    }
  }

  double Loss() {
    BatchLookups copy = lookups_;
    std::vector<std::vector<float>> unused;
    auto loss = model_->ComputeGradients(batch_, dense_, copy, &unused);
    EXPECT_TRUE(loss.ok()) << loss.status().ToString();
    return loss.ok() ? *loss : 0;
  }

  // d loss / d value by central differences.
  double NumericDerivative(float* value) {
    const float saved = *value;
    const float step = 1e-2f;
    *value = saved + step;
    const double up = Loss();
    *value = saved - step;
    const double down = Loss();
    *value = saved;
    return (up - down) / (2.0 * step);
  }

  std::vector<TaxiTrip> trips_;
  TaxiFeatureBatch batch_;
  std::optional<WideDeepModel> model_;
  std::vector<std::vector<float>> dense_;
  BatchLookups lookups_;
};

TEST_F(WideDeepModelTest, LookupsListEachRowOnceAndMapEveryUseToIt) {
  ASSERT_EQ(lookups_.tables.size(), 1 + TaxiEmbeddingColumns().size());
  // The wide table: every id of every row and column, each listed once.
  const TableLookup& wide = lookups_.tables[0];
  EXPECT_EQ(wide.table, kWideWeightsTable);
  ASSERT_EQ(wide.index.size(), batch_.wide_ids.size());
  EXPECT_EQ(std::set<int64_t>(wide.ids.begin(), wide.ids.end()).size(), wide.ids.size());
  EXPECT_EQ(std::set<int64_t>(wide.ids.begin(), wide.ids.end()),
            std::set<int64_t>(batch_.wide_ids.begin(), batch_.wide_ids.end()));
  for (size_t i = 0; i < wide.index.size(); ++i) {
    EXPECT_EQ(wide.ids[wide.index[i]], batch_.wide_ids[i]);
  }
  // An embedding table: one use per batch row. 16 trips share few payment types.
  const size_t columns = TaxiEmbeddingColumns().size();
  const TableLookup& payment = lookups_.tables[1];
  ASSERT_EQ(payment.index.size(), trips_.size());
  EXPECT_LT(payment.ids.size(), trips_.size());
  for (size_t row = 0; row < trips_.size(); ++row) {
    EXPECT_EQ(payment.ids[payment.index[row]], batch_.embedding_ids[row * columns]);
  }
}

TEST_F(WideDeepModelTest, GradientsMatchFiniteDifferences) {
  BatchLookups lookups = lookups_;
  std::vector<std::vector<float>> dense_gradients;
  auto loss = model_->ComputeGradients(batch_, dense_, lookups, &dense_gradients);
  ASSERT_TRUE(loss.ok()) << loss.status().ToString();
  ASSERT_EQ(dense_gradients.size(), dense_.size());
  auto expect_near = [](double analytic, double numeric, const std::string& what) {
    EXPECT_NEAR(analytic, numeric, 2e-3 + 0.02 * std::abs(numeric)) << what;
  };
  // A few entries of every dense variable (kernels, biases, the wide bias).
  for (size_t variable = 0; variable < dense_.size(); ++variable) {
    for (size_t i = 0; i < dense_[variable].size(); i += 1 + dense_[variable].size() / 3) {
      expect_near(dense_gradients[variable][i], NumericDerivative(&dense_[variable][i]),
                  "dense variable " + std::to_string(variable) + "[" + std::to_string(i) + "]");
    }
  }
  // Every table: its first and last pulled row (the gradient of a shared row is summed).
  for (size_t table = 0; table < lookups_.tables.size(); ++table) {
    TableLookup& rows = lookups_.tables[table];
    ASSERT_EQ(lookups.tables[table].gradient.size(), rows.rows.size());
    for (size_t i : {size_t{0}, rows.rows.size() - 1}) {
      expect_near(lookups.tables[table].gradient[i], NumericDerivative(&rows.rows[i]),
                  rows.table + " value " + std::to_string(i));
    }
  }
}

TEST_F(WideDeepModelTest, PredictionsAreTheSigmoidOfWhatTheLossSees) {
  auto probabilities = model_->Predict(batch_, dense_, lookups_);
  ASSERT_TRUE(probabilities.ok()) << probabilities.status().ToString();
  ASSERT_EQ(probabilities->size(), trips_.size());
  double cross_entropy = 0;
  for (size_t i = 0; i < trips_.size(); ++i) {
    const double p = (*probabilities)[i];
    ASSERT_GT(p, 0.0);
    ASSERT_LT(p, 1.0);
    cross_entropy -= batch_.labels[i] > 0.5f ? std::log(p) : std::log(1 - p);
  }
  EXPECT_NEAR(cross_entropy / trips_.size(), Loss(), 1e-4);
}

TEST(WideDeepModel, RefusesBadConfigurations) {
  WideDeepConfig config;
  config.hidden_units = {100, 0};
  EXPECT_FALSE(WideDeepModel::Create(config).ok());
  config = WideDeepConfig();
  config.embedding_width = 0;
  EXPECT_FALSE(WideDeepModel::Create(config).ok());
  config = WideDeepConfig();
  config.wide_learning_rate = -1;
  EXPECT_FALSE(WideDeepModel::Create(config).ok());
}

}  // namespace
}  // namespace cohort::taxi
