// DenseSlice, EmbeddingTable and ShardStore: row ranges, first-touch rows, idempotent creates.
#include <gtest/gtest.h>

#include <cmath>

#include "ps/shard_store.h"

namespace cohort::ps {
namespace {

const OptimizerConfig kSgd{.kind = OptimizerKind::kSgd, .learning_rate = 0.5f};

TEST(DenseSlice, ReadsAndUpdatesRowsInTheVariablesNumbering) {
  // Rows [10, 13) of width 2.
  auto slice = DenseSlice::Create({"w", 10, 3, 2, kSgd}, {0, 1, 2, 3, 4, 5});
  ASSERT_TRUE(slice.ok()) << slice.status().ToString();
  std::vector<float> gradient = {2, 2};
  ASSERT_TRUE((*slice)->ApplyGradient(11, 1, gradient.data()).ok());
  std::vector<float> out(6);
  ASSERT_TRUE((*slice)->Read(10, 3, out.data()).ok());
  EXPECT_EQ(out, (std::vector<float>{0, 1, 1, 2, 4, 5}));
  Status outside = (*slice)->Read(9, 2, out.data());
  ASSERT_FALSE(outside.ok());
  EXPECT_NE(outside.message().find("holds rows [10, 13)"), std::string::npos) << outside.message();
  EXPECT_FALSE((*slice)->ApplyGradient(12, 2, out.data()).ok());
  EXPECT_FALSE(DenseSlice::Create({"w", 0, 2, 2, kSgd}, {1, 2, 3}).ok());
}

// A read of no rows is how a worker asks whether the chief has created a variable: it comes with
// no buffer and reads nothing (UndefinedBehaviorSanitizer checks the memcpy it must not make).
TEST(DenseSlice, AReadOfNoRowsNeedsNoBuffer) {
  auto slice = DenseSlice::Create({"w", 10, 3, 2, kSgd}, {0, 1, 2, 3, 4, 5});
  ASSERT_TRUE(slice.ok()) << slice.status().ToString();
  EXPECT_TRUE((*slice)->Read(10, 0, nullptr).ok());
  EXPECT_FALSE((*slice)->Read(20, 0, nullptr).ok());
}

TEST(DenseSlice, AdamCountsStepsPerRow) {
  OptimizerConfig adam{.kind = OptimizerKind::kAdam, .learning_rate = 0.1f};
  auto slice = DenseSlice::Create({"w", 0, 2, 1, adam}, {1, 1});
  ASSERT_TRUE(slice.ok());
  float half = 0.5f;
  float both[2] = {0.5f, 0.5f};
  ASSERT_TRUE((*slice)->ApplyGradient(0, 1, &half).ok());
  ASSERT_TRUE((*slice)->ApplyGradient(0, 2, both).ok());  // row 0: step 2, row 1: step 1
  float out[2];
  ASSERT_TRUE((*slice)->Read(0, 2, out).ok());
  EXPECT_NEAR(out[0], 0.8000010798, 1e-6);
  EXPECT_NEAR(out[1], 0.9000006325, 1e-6);
  EXPECT_EQ((*slice)->Snapshot().row_steps, (std::vector<int64_t>{2, 1}));
}

TEST(EmbeddingTable, RowsStartFromSeedAndIdOnly) {
  EmbeddingTableSpec spec{"emb", 4, 42, 0.1f, kSgd};
  auto one = EmbeddingTable::Create(spec, 0, 1);
  auto of_three = EmbeddingTable::Create(spec, 1, 3);
  ASSERT_TRUE(one.ok() && of_three.ok());
  int64_t id = 7;  // 7 mod 3 = 1
  float a[4], b[4];
  ASSERT_TRUE((*one)->Read(&id, 1, a).ok());
  ASSERT_TRUE((*of_three)->Read(&id, 1, b).ok());
  for (int column = 0; column < 4; ++column) {
    EXPECT_EQ(a[column], b[column]);
    EXPECT_EQ(a[column], InitialRowValue(42, 7, column, 0.1f));
    EXPECT_LE(std::abs(a[column]), 0.1f);
  }
  EXPECT_NE(a[0], a[1]);
  EXPECT_NE(InitialRowValue(42, 7, 0, 0.1f), InitialRowValue(43, 7, 0, 0.1f));
  int64_t wrong = 8;
  Status misrouted = (*of_three)->Read(&wrong, 1, b);
  ASSERT_FALSE(misrouted.ok());
  EXPECT_NE(misrouted.message().find("belongs to ps:2, not ps:1"), std::string::npos);
}

TEST(EmbeddingTable, SumsRepeatedIdsAndTouchesOnlyTheirRows) {
  EmbeddingTableSpec spec{"emb", 2, 1, 0.0f, kSgd};  // rows start at 0
  auto table = EmbeddingTable::Create(spec, 0, 1);
  ASSERT_TRUE(table.ok());
  int64_t ids[3] = {5, -3, 5};
  float gradient[6] = {1, 1, 2, 2, 3, 3};
  ASSERT_TRUE((*table)->ApplyGradient(ids, 3, gradient).ok());
  EXPECT_EQ((*table)->row_count(), 2u);
  float out[6];
  ASSERT_TRUE((*table)->Read(ids, 3, out).ok());
  EXPECT_EQ(std::vector<float>(out, out + 6), (std::vector<float>{-2, -2, -1, -1, -2, -2}));
}

TEST(EmbeddingTable, FtrlRowsStartTheirAccumulatorAtOneTenth) {
  OptimizerConfig ftrl{
      .kind = OptimizerKind::kFtrl, .learning_rate = 0.1f, .l1 = 0.001f, .l2 = 0.01f};
  EmbeddingTableSpec spec{"emb", 1, 1, 0.0f, ftrl};
  auto table = EmbeddingTable::Create(spec, 0, 1);
  ASSERT_TRUE(table.ok());
  int64_t id = 3;
  float gradient = 0.5f, out;
  ASSERT_TRUE((*table)->ApplyGradient(&id, 1, &gradient).ok());
  ASSERT_TRUE((*table)->Read(&id, 1, &out).ok());
  // From w = 0: z = 0.5, quadratic = sqrt(0.35) / 0.1 + 0.02; w = (0.001 - 0.5) / quadratic.
  EXPECT_NEAR(out, (0.001 - 0.5) / (std::sqrt(0.35) / 0.1 + 0.02), 1e-6);
}

TEST(ShardStore, CreateIsIdempotentButRefusesADifferentSpec) {
  ShardStore store(0, 2);
  DenseSliceSpec spec{"w", 0, 2, 2, kSgd};
  ASSERT_TRUE(store.CreateDense(spec, {1, 2, 3, 4}).ok());
  ASSERT_TRUE(store.CreateDense(spec, {9, 9, 9, 9}).ok());  // a rejoining worker: ignored
  float out[4];
  ASSERT_TRUE((*store.Dense("w"))->Read(0, 2, out).ok());
  EXPECT_EQ(out[0], 1);
  DenseSliceSpec wider = spec;
  wider.row_width = 3;
  Status clash = store.CreateDense(wider, {});
  ASSERT_FALSE(clash.ok());
  EXPECT_EQ(clash.code(), Status::Code::kFailedPrecondition);
  EXPECT_NE(clash.message().find("already exists on ps:0"), std::string::npos);
  auto missing = store.Dense("v");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), Status::Code::kNotFound);
  ASSERT_TRUE(store.CreateTable({"emb", 4, 1, 0.1f, kSgd}).ok());
  ASSERT_TRUE(store.CreateTable({"emb", 4, 1, 0.1f, kSgd}).ok());
  EXPECT_FALSE(store.CreateTable({"emb", 4, 2, 0.1f, kSgd}).ok());
  EXPECT_FALSE(store.CreateTable({"bad", 0, 1, 0.1f, kSgd}).ok());
  EXPECT_EQ(store.DenseSlices().size(), 1u);
  EXPECT_EQ(store.Tables().size(), 1u);
}

}  // namespace
}  // namespace cohort::ps
