// Checkpoints: shard round trip, manifests, incomplete or corrupt checkpoints ignored.
#include "ps/checkpoint.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>

#include "base/checksum.h"
#include "testing/scratch_directory.h"

namespace cohort::ps {
namespace {

class CheckpointTest : public ::testing::Test {
 protected:
  cohort::testing::ScratchDirectory scratch_{"cohort-ps-checkpoint"};

  // A store with an Adam slice and an FTRL table, trained a little.
  static void Fill(ShardStore& store, float gradient) {
    OptimizerConfig adam{.kind = OptimizerKind::kAdam, .learning_rate = 0.1f};
    OptimizerConfig ftrl{.kind = OptimizerKind::kFtrl, .learning_rate = 0.1f};
    ASSERT_TRUE(store.CreateDense({"w", 2, 2, 3, adam}, {1, 2, 3, 4, 5, 6}).ok());
    ASSERT_TRUE(store.CreateTable({"emb", 2, 5, 0.1f, ftrl}).ok());
    std::vector<float> g(6, gradient);
    ASSERT_TRUE((*store.Dense("w"))->ApplyGradient(2, 2, g.data()).ok());
    int64_t ids[2] = {1, 3};  // both owned by ps:1 of 2
    ASSERT_TRUE((*store.Table("emb"))->ApplyGradient(ids, 2, g.data()).ok());
  }

  // Saves `store` at `step` and writes the manifest naming it (as ps:1; ps:0's shard is a copy).
  void Save(const ShardStore& store, int64_t step) {
    auto saved = SaveShard(store, directory_, step);
    ASSERT_TRUE(saved.ok()) << saved.status().ToString();
    ShardStore other(0, 2);
    auto saved0 = SaveShard(other, directory_, step);
    ASSERT_TRUE(saved0.ok());
    ASSERT_TRUE(WriteManifest(directory_, {step, 2, {*saved0, *saved}}).ok());
  }

  const std::string directory_ = scratch_.path().string();
};

TEST_F(CheckpointTest, RestoresValuesAndOptimizerState) {
  ShardStore store(1, 2);
  Fill(store, 0.5f);
  Save(store, 7);
  ShardStore restored(1, 2);
  auto step = RestoreLatest(directory_, &restored, nullptr);
  ASSERT_TRUE(step.ok()) << step.status().ToString();
  EXPECT_EQ(*step, 7);
  auto original = (*store.Dense("w"))->Snapshot();
  auto copy = (*restored.Dense("w"))->Snapshot();
  EXPECT_EQ(copy.parameters, original.parameters);
  EXPECT_EQ(copy.slots, original.slots);
  EXPECT_EQ(copy.row_steps, original.row_steps);
  EXPECT_EQ((*restored.Table("emb"))->Snapshot().values, (*store.Table("emb"))->Snapshot().values);
  EXPECT_EQ((*restored.Table("emb"))->Snapshot().slots, (*store.Table("emb"))->Snapshot().slots);
}

TEST_F(CheckpointTest, IgnoresCheckpointsWithoutAManifestOrWithABadShard) {
  ShardStore store(1, 2);
  Fill(store, 0.5f);
  Save(store, 10);
  // Step 20: the shards were saved but the chief never wrote the manifest.
  ASSERT_TRUE(SaveShard(store, directory_, 20).ok());
  // Step 30: a manifest whose shard was damaged afterwards.
  Save(store, 30);
  {
    std::ofstream damage(directory_ + "/ps-1-of-2.step-000000000030.shard",
                         std::ios::binary | std::ios::in | std::ios::out);
    damage.seekp(40);
    damage.put('\x7f');
  }
  // Step 40: a manifest cut short.
  std::ofstream(directory_ + "/" + ManifestFileName(40))
      << "cohort-ps-checkpoint 2\nglobal_step 40\n";
  std::vector<std::string> skipped;
  ShardStore restored(1, 2);
  auto step = RestoreLatest(directory_, &restored,
                            [&](const std::string& line) { skipped.push_back(line); });
  ASSERT_TRUE(step.ok()) << step.status().ToString();
  EXPECT_EQ(*step, 10);
  ASSERT_EQ(skipped.size(), 2u);
  EXPECT_NE(skipped[0].find("checkpoint-000000000040.manifest"), std::string::npos);
  EXPECT_NE(skipped[1].find("ps-1-of-2.step-000000000030.shard: checksum mismatch: expected "),
            std::string::npos)
      << skipped[1];
  EXPECT_NE(skipped[1].find(", found "), std::string::npos);
}

TEST_F(CheckpointTest, ShardsOfAnotherServerAreRefused) {
  ShardStore store(1, 2);
  Fill(store, 0.5f);
  std::string bytes = EncodeShard(store, 3);
  ShardStore wrong(0, 2);
  int64_t step = 0;
  Status refused = DecodeShardInto(bytes, &wrong, &step);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.message().find("saved by ps:1 of 2 servers, not ps:0"), std::string::npos);
  EXPECT_FALSE(DecodeShardInto(bytes.substr(0, bytes.size() - 3), &store, &step).ok());
  EXPECT_EQ(RestoreLatest(directory_, &store, nullptr).status().code(), Status::Code::kNotFound);
}

TEST(Manifest, RoundTripsAndRejectsPathsOutsideTheDirectory) {
  Manifest manifest{12, 2, {{"a.shard", 10, Sha256Hex("a")}, {"b.shard", 20, Sha256Hex("b")}}};
  auto decoded = DecodeManifest(EncodeManifest(manifest));
  ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
  EXPECT_EQ(decoded->global_step, 12);
  EXPECT_EQ(decoded->shards[1].file, "b.shard");
  EXPECT_EQ(decoded->shards[1].sha256, Sha256Hex("b"));
  // A checksum that is not SHA-256 hex (a version 1 manifest's FNV-1a) is refused.
  manifest.shards[1].sha256 = "0000000000000def";
  EXPECT_FALSE(DecodeManifest(EncodeManifest(manifest)).ok());
  manifest.shards[1].sha256 = Sha256Hex("b");
  manifest.shards[0].file = "../etc/passwd";
  EXPECT_FALSE(DecodeManifest(EncodeManifest(manifest)).ok());
}

}  // namespace
}  // namespace cohort::ps
