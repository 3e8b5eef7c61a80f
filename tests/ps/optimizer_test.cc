// Server-side optimizers against values computed by hand (in double precision) from TensorFlow's
// kernel formulas; see optimizer.h.
#include "ps/optimizer.h"

#include <gtest/gtest.h>

#include <vector>

namespace cohort::ps {
namespace {

// Applies `gradient` twice to one parameter that starts at 1 and returns its value after each.
std::vector<float> TwoSteps(const OptimizerConfig& config, float gradient) {
  EXPECT_TRUE(ValidateOptimizerConfig(config).ok());
  Optimizer optimizer(config);
  float parameter = 1.0f;
  std::vector<float> slots(SlotCount(config.kind));
  for (int slot = 0; slot < SlotCount(config.kind); ++slot) {
    slots[slot] = SlotInitialValue(config, slot);
  }
  std::vector<float*> slot_pointers;
  for (float& slot : slots) slot_pointers.push_back(&slot);
  std::vector<float> values;
  for (int step = 1; step <= 2; ++step) {
    optimizer.Apply(&parameter, slot_pointers.data(), &gradient, 1, step);
    values.push_back(parameter);
  }
  return values;
}

TEST(Optimizer, Sgd) {
  OptimizerConfig config{.kind = OptimizerKind::kSgd, .learning_rate = 0.1f};
  auto values = TwoSteps(config, 0.5f);
  EXPECT_FLOAT_EQ(values[0], 0.95f);
  EXPECT_FLOAT_EQ(values[1], 0.90f);
}

TEST(Optimizer, AdagradStartsItsAccumulatorAtOneTenth) {
  OptimizerConfig config{.kind = OptimizerKind::kAdagrad, .learning_rate = 0.1f};
  // a = 0.1 + 0.25; w = 1 - 0.1 * 0.5 / (sqrt(0.35) + 1e-7)
  EXPECT_NEAR(TwoSteps(config, 0.5f)[0], 0.9154845888, 1e-6);
}

TEST(Optimizer, AdamCorrectsBias) {
  OptimizerConfig config{.kind = OptimizerKind::kAdam, .learning_rate = 0.1f};
  auto values = TwoSteps(config, 0.5f);
  EXPECT_NEAR(values[0], 0.9000006325, 1e-6);
  EXPECT_NEAR(values[1], 0.8000010798, 1e-6);
}

TEST(Optimizer, FtrlProximal) {
  OptimizerConfig config{
      .kind = OptimizerKind::kFtrl, .learning_rate = 0.1f, .l1 = 0.001f, .l2 = 0.01f};
  auto values = TwoSteps(config, 0.5f);
  EXPECT_NEAR(values[0], 0.3795100816, 1e-5);
  EXPECT_NEAR(values[1], 0.3151265966, 1e-5);
}

TEST(Optimizer, FtrlL1ZeroesSmallWeights) {
  OptimizerConfig config{.kind = OptimizerKind::kFtrl, .learning_rate = 0.1f, .l1 = 3.0f};
  // |z| = 2.2538 after the first step, below l1.
  EXPECT_EQ(TwoSteps(config, 0.5f)[0], 0.0f);
}

TEST(Optimizer, RefusesSettingsOutOfRange) {
  EXPECT_FALSE(ValidateOptimizerConfig({.kind = OptimizerKind::kSgd, .learning_rate = 0}).ok());
  EXPECT_FALSE(ValidateOptimizerConfig({.kind = OptimizerKind::kAdam, .beta1 = 1.0f}).ok());
  Status positive_power =
      ValidateOptimizerConfig({.kind = OptimizerKind::kFtrl, .learning_rate_power = 0.5f});
  ASSERT_FALSE(positive_power.ok());
  EXPECT_NE(positive_power.message().find("learning_rate_power"), std::string::npos);
  EXPECT_FALSE(
      ValidateOptimizerConfig({.kind = static_cast<OptimizerKind>(9), .learning_rate = 1}).ok());
}

TEST(Optimizer, NamesRoundTrip) {
  for (auto kind :
       {OptimizerKind::kSgd, OptimizerKind::kAdagrad, OptimizerKind::kAdam, OptimizerKind::kFtrl}) {
    auto parsed = ParseOptimizerKind(OptimizerName(kind));
    ASSERT_TRUE(parsed.ok());
    EXPECT_EQ(*parsed, kind);
  }
  EXPECT_FALSE(ParseOptimizerKind("rmsprop").ok());
}

}  // namespace
}  // namespace cohort::ps
