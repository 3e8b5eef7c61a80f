#include "train/saved_model.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "base/file.h"
#include "test_support.h"
#include "testing/scratch_directory.h"
#include "train/checkpoint_manifest.h"
#include "train/model_checkpoint.h"

namespace cohort::train {
namespace {

namespace fs = std::filesystem;

TEST(SavedModel, LoadsWhatTheTrainerSavedAndPredictsTheSame) {
  const cohort::testing::ScratchDirectory scratch("cohort-saved");
  const std::string dir = scratch.path().string();
  testing::SmallData data;
  SingleProcessStrategy strategy;
  auto trainer = testing::MakeTrainer(testing::SmallRun(), data, &strategy);
  ModelCheckpoint checkpoints(ModelCheckpointOptions{dir + "/checkpoints"});
  ::testing::internal::CaptureStdout();
  ASSERT_TRUE(trainer->Fit({&checkpoints}).ok());
  ::testing::internal::GetCapturedStdout();
  auto evaluation = trainer->Evaluate();
  ASSERT_TRUE(evaluation.ok());
  EXPECT_GT(evaluation->metrics.at("accuracy"), 0.9) << "the synthetic classes are easy";
  ASSERT_TRUE(trainer
                  ->SaveModel(dir + "/model",
                              {{"test_accuracy", evaluation->metrics.at("accuracy")}},
                              "/data/synthetic")
                  .ok());

  auto model = SavedModel::Load(dir + "/model");
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  const ModelManifest& manifest = (*model)->manifest();
  EXPECT_EQ(manifest.model, "cnn");
  EXPECT_EQ(manifest.input_shape, (std::vector<int64_t>{1, 12, 12}));
  EXPECT_EQ(manifest.classes, (std::vector<std::string>{"0", "1", "2", "3"}));
  EXPECT_EQ(manifest.training.global_steps, 18);
  EXPECT_EQ(manifest.training.optimizer, "adam");
  EXPECT_DOUBLE_EQ(manifest.metrics.at("test_accuracy"), evaluation->metrics.at("accuracy"));

  auto reloaded = (*model)->Evaluate(data.test);
  ASSERT_TRUE(reloaded.ok());
  EXPECT_DOUBLE_EQ(reloaded->metrics.at("accuracy"), evaluation->metrics.at("accuracy"));
  EXPECT_NEAR(reloaded->loss, evaluation->loss, 1e-9);

  std::vector<float> image(144);
  for (size_t i = 0; i < image.size(); ++i) image[i] = data.test.pixels[i] / 255.0f;
  auto probabilities = (*model)->PredictProbabilities(image.data(), 1);
  auto classes = (*model)->PredictClasses(image.data(), 1);
  ASSERT_TRUE(probabilities.ok() && classes.ok());
  ASSERT_EQ(probabilities->size(), 4u);
  EXPECT_NEAR((*probabilities)[0] + (*probabilities)[1] + (*probabilities)[2] + (*probabilities)[3],
              1.0, 1e-5);
  EXPECT_EQ((*classes)[0], data.test.labels[0]);

  // ModelCheckpoint kept every epoch and lists them TF-style, each with its checksum.
  EXPECT_TRUE(fs::exists(dir + "/checkpoints/ckpt-1.pt"));
  EXPECT_TRUE(fs::exists(dir + "/checkpoints/ckpt-3.pt"));
  EXPECT_TRUE(ReadVerifiedCheckpoint(dir + "/checkpoints", "ckpt-3").ok());

  // Flipped bytes in the saved weights: named with both checksums, never loaded.
  ASSERT_EQ(manifest.files.size(), 1u);
  EXPECT_EQ(manifest.files[0].file, "weights.pt");
  std::string weights = *ReadWholeFile(dir + "/model/weights.pt");
  for (int i = 1; i <= 10; ++i) weights[weights.size() * i / 11] ^= 0x40;
  testing::WriteFile(dir + "/model/weights.pt", weights);
  auto flipped = SavedModel::Load(dir + "/model");
  ASSERT_FALSE(flipped.ok());
  EXPECT_EQ(flipped.status().code(), Status::Code::kFailedPrecondition);
  EXPECT_NE(
      flipped.status().message().find(dir + "/model/weights.pt: checksum mismatch: expected " +
                                      std::to_string(weights.size()) + " bytes sha256 " +
                                      manifest.files[0].sha256 + ", found "),
      std::string::npos)
      << flipped.status().message();
}

// A manifest from before checksums is refused, saying why; a NaN metric is never written.
TEST(ModelManifest, RefusesUnverifiableModelsAndNonFiniteMetrics) {
  const cohort::testing::ScratchDirectory scratch("cohort-saved-v1");
  const std::string dir = scratch.path().string();
  ModelManifest manifest;
  manifest.model = "cnn";
  manifest.input_shape = {1, 12, 12};
  manifest.classes = {"a", "b"};
  testing::WriteFile(dir + "/weights.pt", "weights");
  ASSERT_TRUE(WriteManifest(dir, manifest).ok());
  std::string text = *ReadWholeFile(dir + "/manifest.json");
  text.replace(text.find("\"format_version\": 2"), 19, "\"format_version\": 1");
  testing::WriteFile(dir + "/manifest.json", text);
  auto old = ReadManifest(dir);
  ASSERT_FALSE(old.ok());
  EXPECT_NE(old.status().message().find("written before saved models carried checksums"),
            std::string::npos)
      << old.status().message();

  manifest.metrics = {{"test_loss", std::nan("")}};
  Status status = WriteManifest(dir, manifest);
  EXPECT_EQ(status.code(), Status::Code::kInvalidArgument);
  EXPECT_NE(status.message().find("metric \"test_loss\" is nan"), std::string::npos)
      << status.message();
}

TEST(SavedModel, ErrorsNameTheFile) {
  const cohort::testing::ScratchDirectory scratch("cohort-saved-errors");
  const std::string dir = scratch.path().string();
  auto missing = SavedModel::Load(dir);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), Status::Code::kNotFound);
  EXPECT_NE(missing.status().message().find(dir + "/manifest.json"), std::string::npos);

  ModelManifest manifest;
  manifest.model = "cnn";
  manifest.input_shape = {1, 12, 12};
  manifest.classes = {"a", "b"};
  testing::WriteFile(dir + "/weights.pt", "not a torch archive");
  ASSERT_TRUE(WriteManifest(dir, manifest).ok());
  auto corrupt = SavedModel::Load(dir);
  ASSERT_FALSE(corrupt.ok());
  EXPECT_NE(corrupt.status().message().find(dir + "/weights.pt: cannot load cnn weights"),
            std::string::npos)
      << corrupt.status().message();

  testing::WriteFile(dir + "/manifest.json", "{\"format\": \"cohort-saved-model\"}");
  auto incomplete = SavedModel::Load(dir);
  ASSERT_FALSE(incomplete.ok());
  EXPECT_EQ(incomplete.status().message(), dir + "/manifest.json: missing \"format_version\"");
}

TEST(ModelManifest, RoundTripsThroughJson) {
  ModelManifest manifest;
  manifest.model = "deep_cnn";
  manifest.input_shape = {1, 28, 28};
  manifest.classes = {"x", "y"};
  manifest.metrics = {{"test_accuracy", 0.9}};
  manifest.training.epochs = 3;
  manifest.training.seed = 42;
  manifest.training.data_dir = "/data";
  manifest.created_at = "2024-01-01T00:00:00Z";
  manifest.files = {ChecksumOf("weights.pt", "the weights")};
  auto parsed = ParseManifest(ManifestToJson(manifest), "m");
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  EXPECT_EQ(*parsed, manifest);
}

}  // namespace
}  // namespace cohort::train
