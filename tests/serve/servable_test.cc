#include "serve/servable.h"

#include <gtest/gtest.h>

#include <fstream>

#include "serve/image_decoding.h"
#include "serve_test_support.h"
#include "testing/host.h"
#include "testing/scratch_directory.h"
#include "train/saved_model.h"

namespace cohort::serve {
namespace {

using testing::ImageJson;

std::string MessageOf(const StatusOr<DecodedInstance>& decoded) {
  return decoded.ok() ? "ok" : decoded.status().message();
}

class ImageClassifierTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    scratch_ = new cohort::testing::ScratchDirectory("cohort-servable");
    testing::SaveSmallClassifier(Dir());
  }
  static void TearDownTestSuite() { delete scratch_; }
  static std::string Dir() { return (scratch_->path() / "model").string(); }
  static cohort::testing::ScratchDirectory* scratch_;
};
cohort::testing::ScratchDirectory* ImageClassifierTest::scratch_ = nullptr;

TEST_F(ImageClassifierTest, PredictsWhatTheSavedModelPredictsFromArraysAndPngs) {
  StatusOr<std::unique_ptr<Servable>> servable = LoadServable(Dir());
  ASSERT_TRUE(servable.ok()) << servable.status().ToString();
  EXPECT_EQ((*servable)->framework(), "COHORT");
  EXPECT_EQ((*servable)->Signature()["inputs"]["image"]["shape"], nlohmann::json({-1, 12, 12}));
  auto model = train::SavedModel::Load(Dir());
  ASSERT_TRUE(model.ok());
  train::testing::SmallData data;
  const std::vector<std::vector<float>> images = testing::SmallTestImages(8);
  std::vector<float> values;
  for (size_t i = 0; i < images.size(); ++i) {
    // Each form of one image decodes to the same numbers.
    GrayImage gray{12, 12,
                   std::vector<uint8_t>(data.test.pixels.begin() + i * 144,
                                        data.test.pixels.begin() + (i + 1) * 144)};
    StatusOr<std::string> png = EncodePng(gray);
    ASSERT_TRUE(png.ok());
    for (const nlohmann::json& form :
         {ImageJson(images[i]), nlohmann::json(images[i]), nlohmann::json({ImageJson(images[i])}),
          nlohmann::json{{"b64", EncodeBase64(*png)}},
          nlohmann::json{{"image", {{"b64", EncodeBase64(*png)}}}},
          nlohmann::json{{"image", ImageJson(images[i])}}}) {
      StatusOr<DecodedInstance> decoded = (*servable)->DecodeInstance(form, i);
      ASSERT_TRUE(decoded.ok()) << decoded.status().ToString() << " for " << form.dump();
      EXPECT_EQ(decoded->values, images[i]) << form.dump().substr(0, 80);
    }
    values.insert(values.end(), images[i].begin(), images[i].end());
  }
  StatusOr<std::vector<nlohmann::json>> predictions =
      (*servable)->Predict(values, static_cast<int64_t>(images.size()), {12, 12});
  ASSERT_TRUE(predictions.ok()) << predictions.status().ToString();
  auto classes = (*model)->PredictClasses(values.data(), static_cast<int64_t>(images.size()));
  auto probabilities =
      (*model)->PredictProbabilities(values.data(), static_cast<int64_t>(images.size()));
  ASSERT_TRUE(classes.ok() && probabilities.ok());
  for (size_t i = 0; i < images.size(); ++i) {
    EXPECT_EQ((*predictions)[i]["class_id"], (*classes)[i]);
    EXPECT_EQ((*predictions)[i]["class"], std::to_string((*classes)[i]));
    for (size_t c = 0; c < 4; ++c) {
      EXPECT_EQ((*predictions)[i]["probabilities"][c].get<float>(), (*probabilities)[i * 4 + c]);
    }
  }
}

TEST_F(ImageClassifierTest, AMalformedInstanceIsNamedByIndexAndField) {
  StatusOr<std::unique_ptr<Servable>> servable = LoadServable(Dir());
  ASSERT_TRUE(servable.ok());
  const Servable& model = **servable;
  std::vector<float> image(144, 0.5f);
  nlohmann::json bright = ImageJson(image);
  bright[3][4] = 255;
  EXPECT_EQ(MessageOf(model.DecodeInstance(bright, 7)).rfind("instance 7[3][4]: pixel 255", 0), 0u)
      << MessageOf(model.DecodeInstance(bright, 7));
  nlohmann::json ragged = ImageJson(image);
  ragged[5].erase(0);
  EXPECT_EQ(MessageOf(model.DecodeInstance(ragged, 2)).rfind("instance 2[5]: 11 elements", 0), 0u)
      << MessageOf(model.DecodeInstance(ragged, 2));
  nlohmann::json text = ImageJson(image);
  text[0][1] = "x";
  EXPECT_EQ(MessageOf(model.DecodeInstance(text, 0)),
            "instance 0[0][1]: string where a number must be");
  EXPECT_EQ(MessageOf(model.DecodeInstance(ImageJson(std::vector<float>(100, 0.5f), 10), 1)),
            "instance 1: an image of shape [10, 10]; the model takes 12x12 pixels");
  EXPECT_EQ(MessageOf(model.DecodeInstance({{"b64", "not base64!"}}, 4)),
            "instance 4.b64: character 3 of the base64 text is not base64");
  EXPECT_NE(MessageOf(model.DecodeInstance({{"b64", EncodeBase64("GIF89a")}}, 4))
                .find("instance 4.b64: not a PNG image"),
            std::string::npos);
  GrayImage large{28, 28, std::vector<uint8_t>(784, 9)};
  EXPECT_EQ(MessageOf(model.DecodeInstance({{"b64", EncodeBase64(*EncodePng(large))}}, 0)),
            "instance 0.b64: the PNG is 28x28 pixels; the model takes 12x12");
  EXPECT_EQ(MessageOf(model.DecodeInstance({{"a", 1}, {"b", 2}}, 3)),
            "instance 3: an object must have one input key, this one has 2 (a, b)");
  EXPECT_EQ(
      MessageOf(model.DecodeInstance("pixels", 0)).rfind("instance 0: string where an image", 0),
      0u);
}

TEST(TorchScript, ServesWhatPythonsTorchSavedAndPredictsAsPythonDid) {
  const cohort::testing::ScratchDirectory scratch("cohort-torchscript");
  const std::string model = (scratch.path() / "tips.pt").string();
  const std::string expected_file = (scratch.path() / "expected.json").string();
  std::string why;
  if (!testing::SaveTorchScriptModel(model, expected_file, &why)) COHORT_SKIP_OR_FAIL_IN_CI(why);
  std::ifstream in(expected_file);
  const nlohmann::json expected = nlohmann::json::parse(in);
  StatusOr<std::unique_ptr<Servable>> servable = LoadServable(model);
  ASSERT_TRUE(servable.ok()) << servable.status().ToString();
  EXPECT_EQ((*servable)->framework(), "TORCHSCRIPT");
  EXPECT_NE((*servable)->Signature()["forward"].get<std::string>().find("Tensor x"),
            std::string::npos);
  std::vector<float> values;
  for (size_t i = 0; i < expected["inputs"].size(); ++i) {
    StatusOr<DecodedInstance> decoded = (*servable)->DecodeInstance(expected["inputs"][i], i);
    ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
    EXPECT_EQ(decoded->shape, std::vector<int64_t>{4});
    values.insert(values.end(), decoded->values.begin(), decoded->values.end());
  }
  StatusOr<std::vector<nlohmann::json>> predictions = (*servable)->Predict(values, 3, {4});
  ASSERT_TRUE(predictions.ok()) << predictions.status().ToString();
  ASSERT_EQ(predictions->size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    for (size_t c = 0; c < 3; ++c) {
      EXPECT_NEAR((*predictions)[i][c].get<double>(), expected["outputs"][i][c].get<double>(), 1e-6)
          << "instance " << i << " class " << c;
    }
  }
  // A directory holding model.pt is the same model; a file that is no TorchScript is named.
  std::filesystem::create_directory(scratch.path() / "version");
  std::filesystem::copy_file(model, scratch.path() / "version" / "model.pt");
  EXPECT_TRUE(LoadServable((scratch.path() / "version").string()).ok());
  std::ofstream(scratch.path() / "bad.pt") << "not a zip";
  StatusOr<std::unique_ptr<Servable>> bad = LoadServable((scratch.path() / "bad.pt").string());
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("bad.pt: not a TorchScript file that loads"),
            std::string::npos);
}

TEST(Base64, DecodesBothAlphabetsAndRefusesOtherCharacters) {
  EXPECT_EQ(*DecodeBase64(EncodeBase64("any carnal pleas")), "any carnal pleas");
  EXPECT_EQ(*DecodeBase64("YW55IGNhcm5hbCBwbGVhcw"), "any carnal pleas");
  EXPECT_EQ(*DecodeBase64("-_8"), "\xfb\xff");
  EXPECT_FALSE(DecodeBase64("YW5 5").ok());
  EXPECT_FALSE(DecodeBase64("Y").ok());
}

}  // namespace
}  // namespace cohort::serve
