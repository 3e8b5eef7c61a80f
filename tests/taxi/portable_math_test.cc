#include "taxi/portable_math.h"

#include <gtest/gtest.h>

#include <cmath>

namespace cohort::taxi {
namespace {

TEST(PortableMathTest, AgreesWithTheCLibraryToAFewUlps) {
  for (double x = -700; x <= 700; x += 0.37) {
    EXPECT_NEAR(PortableExp(x), std::exp(x), 1e-15 * std::exp(x)) << x;
  }
  for (double x = 1e-300; x < 1e300; x *= 1.7) {
    EXPECT_NEAR(PortableLog(x), std::log(x), 1e-15 * std::max(1.0, std::fabs(std::log(x)))) << x;
  }
  for (double x = 0.5; x < 2; x += 0.001) {
    EXPECT_NEAR(PortableLog(x), std::log(x), 4e-16) << x;
  }
  for (double x = -25; x <= 25; x += 0.013) {
    EXPECT_NEAR(PortableTanh(x), std::tanh(x), 1e-15) << x;
    EXPECT_NEAR(PortableSigmoid(x), 1 / (1 + std::exp(-x)), 1e-15) << x;
  }
}

TEST(PortableMathTest, EdgesAreExactOrInfinite) {
  EXPECT_EQ(PortableExp(0), 1.0);
  EXPECT_EQ(PortableLog(1), 0.0);
  EXPECT_EQ(PortableExp(800), HUGE_VAL);
  EXPECT_EQ(PortableExp(-800), 0.0);
  EXPECT_EQ(PortableLog(0), -HUGE_VAL);
  EXPECT_TRUE(std::isnan(PortableLog(-1)));
  EXPECT_EQ(PortableSigmoid(0), 0.5);
  EXPECT_GT(PortableSigmoid(-700), 0.0);  // no underflow to 0 through 1 / (1 + huge)
  EXPECT_NEAR(PortableExp(-740), std::exp(-740), 1e-323);
}

}  // namespace
}  // namespace cohort::taxi
