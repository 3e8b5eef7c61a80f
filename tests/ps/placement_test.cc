// Variable placement: MinSizePartitioner shard counts, the "div" row split and round-robin.
#include "ps/placement.h"

#include <gtest/gtest.h>

namespace cohort::ps {
namespace {

TEST(MinSizeShardCount, MatchesTensorFlowExamples) {
  // tf.distribute.experimental.partitioners.MinSizePartitioner docstring: [6, 1] float32.
  EXPECT_EQ(MinSizeShardCount(6, 1, 4, 2), 2);
  EXPECT_EQ(MinSizeShardCount(6, 1, 4, 10), 6);
  // Default 256 KiB: a 1 MiB variable over 4 ps gives 4 shards, over 2 ps gives 2.
  EXPECT_EQ(MinSizeShardCount(1024, 256, kDefaultMinShardBytes, 4), 4);
  EXPECT_EQ(MinSizeShardCount(1024, 256, kDefaultMinShardBytes, 2), 2);
  // 300 rows of 1 KiB: 256 rows reach the minimum, so ceil(300 / 256) = 2 shards.
  // Small variables are never split.
  EXPECT_EQ(MinSizeShardCount(10, 10, kDefaultMinShardBytes, 4), 1);
  EXPECT_EQ(MinSizeShardCount(1, 1 << 20, kDefaultMinShardBytes, 4), 1);
}

TEST(DivideRows, FirstShardsTakeTheExtraRows) {
  auto ranges = DivideRows(13, 5);
  std::vector<std::pair<int64_t, int64_t>> expected = {{0, 3}, {3, 3}, {6, 3}, {9, 2}, {11, 2}};
  EXPECT_EQ(ranges, expected);
}

TEST(VariablePlacement, LargeVariablesSplitSmallOnesRoundRobin) {
  // big: 4 MiB, split over all 3 ps; then small ones continue the round-robin.
  auto plan = VariablePlacement::Plan(
      {{"big", 4096, 256}, {"bias", 10, 1}, {"small", 100, 10}, {"tiny", 1, 1}}, 3);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  auto big = plan->ShardsOf("big");
  ASSERT_EQ(big.size(), 3u);
  EXPECT_EQ(big[0].ps_index, 0);
  EXPECT_EQ(big[1].ps_index, 1);
  EXPECT_EQ(big[2].ps_index, 2);
  EXPECT_EQ(big[0].first_row, 0);
  EXPECT_EQ(big[0].row_count, 1366);
  EXPECT_EQ(big[2].first_row, 2731);
  EXPECT_EQ(big[2].row_count, 1365);
  EXPECT_EQ(plan->ShardsOf("bias")[0].ps_index, 0);
  EXPECT_EQ(plan->ShardsOf("small")[0].ps_index, 1);
  EXPECT_EQ(plan->ShardsOf("tiny")[0].ps_index, 2);
  EXPECT_EQ(plan->ShardsOn(0).size(), 2u);
  EXPECT_TRUE(plan->ShardsOf("missing").empty());
}

TEST(VariablePlacement, RefusesBadInput) {
  EXPECT_FALSE(VariablePlacement::Plan({{"a", 1, 1}}, 0).ok());
  EXPECT_FALSE(VariablePlacement::Plan({{"a", 1, 1}, {"a", 2, 1}}, 2).ok());
  EXPECT_FALSE(VariablePlacement::Plan({{"", 1, 1}}, 2).ok());
  auto empty = VariablePlacement::Plan({{"a", 0, 4}}, 2);
  ASSERT_FALSE(empty.ok());
  EXPECT_NE(empty.status().message().find("\"a\""), std::string::npos);
}

TEST(EmbeddingRowOwner, IsIdModuloServersEvenForNegativeIds) {
  EXPECT_EQ(EmbeddingRowOwner(7, 3), 1);
  EXPECT_EQ(EmbeddingRowOwner(-1, 3), 2);
  EXPECT_EQ(EmbeddingRowOwner(0, 1), 0);
}

}  // namespace
}  // namespace cohort::ps
