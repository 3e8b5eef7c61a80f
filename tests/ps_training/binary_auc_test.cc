#include "train/parameter_server/binary_auc.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <vector>

namespace cohort::train {
namespace {

double Auc(const std::vector<double>& scores, const std::vector<uint8_t>& labels) {
  auto auc = AreaUnderRocCurve(scores, labels);
  EXPECT_TRUE(auc.ok()) << auc.status().ToString();
  return auc.ok() ? *auc : -1;
}

TEST(BinaryAucTest, PerfectReversedAndHandCountedRankings) {
  EXPECT_EQ(Auc({0.1, 0.2, 0.8, 0.9}, {0, 0, 1, 1}), 1.0);
  EXPECT_EQ(Auc({0.9, 0.8, 0.2, 0.1}, {0, 0, 1, 1}), 0.0);
  // Pairs (positive, negative): (0.4, 0.1) win, (0.4, 0.5) loss, (0.7, 0.1) win, (0.7, 0.5) win.
  EXPECT_EQ(Auc({0.1, 0.4, 0.5, 0.7}, {0, 1, 0, 1}), 0.75);
}

TEST(BinaryAucTest, TiesCountOneHalf) {
  EXPECT_EQ(Auc({0.3, 0.3, 0.3, 0.3}, {0, 1, 0, 1}), 0.5);
  // Positive 0.5 ties negative 0.5 (1/2) and beats 0.2 (1); positive 0.9 beats both (2): 3.5 / 4.
  EXPECT_EQ(Auc({0.2, 0.5, 0.5, 0.9}, {0, 0, 1, 1}), 0.875);
  // Order inside a tie group must not matter.
  EXPECT_EQ(Auc({0.5, 0.5, 0.2, 0.9}, {1, 0, 0, 1}), 0.875);
}

TEST(BinaryAucTest, UndefinedOrMismatchedInputsFail) {
  auto auc = AreaUnderRocCurve(std::vector<double>{0.1, 0.2}, std::vector<uint8_t>{1, 1});
  ASSERT_FALSE(auc.ok());
  EXPECT_EQ(auc.status().message(), "AUC: undefined with 2 positive and 0 negative examples");
  auc = AreaUnderRocCurve(std::vector<double>{0.1}, std::vector<uint8_t>{1, 0});
  ASSERT_FALSE(auc.ok());
  EXPECT_EQ(auc.status().message(), "AUC: 1 scores but 2 labels");
  auc = AreaUnderRocCurve(std::vector<double>{0.1, std::nan("")}, std::vector<uint8_t>{1, 0});
  ASSERT_FALSE(auc.ok());
  EXPECT_EQ(auc.status().message(), "AUC: score 1 is NaN");
}

}  // namespace
}  // namespace cohort::train
