#include "serve/rest_api.h"

#include <gtest/gtest.h>

#include "serve_test_support.h"
#include "testing/scratch_directory.h"

namespace cohort::serve {
namespace {

using namespace std::chrono_literals;
using testing::ImageJson;

class RestApiTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    scratch_ = new cohort::testing::ScratchDirectory("cohort-rest");
    testing::SaveSmallClassifier((scratch_->path() / "model").string());
  }
  static void TearDownTestSuite() { delete scratch_; }

  void SetUp() override {
    StatusOr<std::unique_ptr<ModelSet>> models =
        ModelSet::FromPath("fashion", (scratch_->path() / "model").string(), {});
    ASSERT_TRUE(models.ok()) << models.status().ToString();
    models_ = std::move(*models);
    api_ = std::make_unique<RestApi>(models_.get(), 10s);
  }

  nlohmann::json Body(const RestResponse& response) { return nlohmann::json::parse(response.body); }

  static cohort::testing::ScratchDirectory* scratch_;
  std::unique_ptr<ModelSet> models_;
  std::unique_ptr<RestApi> api_;
};
cohort::testing::ScratchDirectory* RestApiTest::scratch_ = nullptr;

TEST_F(RestApiTest, BothRestFormsAndAiPlatformsPathGiveTheSamePredictions) {
  const std::vector<std::vector<float>> images = testing::SmallTestImages(3);
  nlohmann::json instances = {ImageJson(images[0]), ImageJson(images[1]), ImageJson(images[2])};
  RestResponse rows = api_->Handle("POST", "/v1/models/fashion:predict",
                                   nlohmann::json{{"instances", instances}}.dump());
  ASSERT_EQ(rows.status, 200) << rows.body;
  EXPECT_EQ(rows.model, "fashion");
  EXPECT_EQ(rows.version, "1");
  const nlohmann::json predictions = Body(rows)["predictions"];
  ASSERT_EQ(predictions.size(), 3u);

  RestResponse versioned = api_->Handle("POST", "/v1/models/fashion/versions/1:predict",
                                        nlohmann::json{{"instances", instances}}.dump());
  EXPECT_EQ(Body(versioned)["predictions"], predictions);
  RestResponse ai_platform =
      api_->Handle("POST", "/v1/projects/my-project/models/fashion/versions/1:predict",
                   nlohmann::json{{"instances", instances}}.dump());
  EXPECT_EQ(Body(ai_platform)["predictions"], predictions);

  // The columnar form: outputs by name, each a list over the instances.
  for (const nlohmann::json& inputs : {instances, nlohmann::json{{"image", instances}}}) {
    RestResponse columns = api_->Handle("POST", "/v1/models/fashion:predict",
                                        nlohmann::json{{"inputs", inputs}}.dump());
    ASSERT_EQ(columns.status, 200) << columns.body;
    const nlohmann::json outputs = Body(columns)["outputs"];
    for (size_t i = 0; i < 3; ++i) {
      EXPECT_EQ(outputs["class_id"][i], predictions[i]["class_id"]);
      EXPECT_EQ(outputs["probabilities"][i], predictions[i]["probabilities"]);
    }
  }
}

TEST_F(RestApiTest, StatusAndMetadataAreTensorFlowServings) {
  RestResponse status = api_->Handle("GET", "/v1/models/fashion", "");
  ASSERT_EQ(status.status, 200);
  EXPECT_EQ(Body(status)["model_version_status"][0]["version"], "1");
  EXPECT_EQ(Body(status)["model_version_status"][0]["state"], "AVAILABLE");
  RestResponse metadata = api_->Handle("GET", "/v1/models/fashion/versions/1/metadata", "");
  ASSERT_EQ(metadata.status, 200);
  const nlohmann::json body = Body(metadata);
  EXPECT_EQ(body["model_spec"]["name"], "fashion");
  EXPECT_EQ(body["metadata"]["signature_def"]["signature_def"]["serving_default"]["classes"],
            nlohmann::json({"0", "1", "2", "3"}));
}

TEST_F(RestApiTest, BadRequestsAre400sNamingWhatAndUnknownModelsAre404s) {
  auto error = [&](const std::string& method, const std::string& path, const std::string& body) {
    RestResponse response = api_->Handle(method, path, body);
    return std::to_string(response.status) + " " + Body(response)["error"].get<std::string>();
  };
  std::vector<float> image(144, 0.25f);
  nlohmann::json bad = ImageJson(image);
  bad[11][2] = nullptr;
  EXPECT_EQ(error("POST", "/v1/models/fashion:predict",
                  nlohmann::json{{"instances", {ImageJson(image), bad}}}.dump()),
            "400 instance 1[11][2]: null where a number must be");
  EXPECT_EQ(error("POST", "/v1/models/fashion:predict", "{\"instances\": [1,"),
            "400 the body is not JSON");
  EXPECT_EQ(error("POST", "/v1/models/fashion:predict", "{\"instances\": []}"),
            "400 instances: no instances");
  EXPECT_EQ(error("POST", "/v1/models/fashion:predict", "{\"examples\": []}"),
            "400 the body has neither \"instances\" (a list, one element per instance) nor "
            "\"inputs\"");
  EXPECT_EQ(error("POST", "/v1/models/fashion:predict",
                  nlohmann::json{{"instances", std::vector<int>(1025, 0)}}.dump()),
            "400 instances: 1025 instances, over the limit of 1024 a request");
  EXPECT_EQ(error("POST", "/v1/models/shoes:predict", "{}"),
            "404 no model shoes is served (served: fashion)");
  EXPECT_EQ(error("GET", "/v1/models/fashion/versions/2", ""),
            "404 model fashion has no version 2 (a model served from --model_path has version 1 "
            "only)");
  EXPECT_EQ(error("GET", "/v1/models/fashion:predict", "").substr(0, 4), "405 ");
  EXPECT_EQ(error("GET", "/v2/models/fashion", "").substr(0, 4), "404 ");
}

}  // namespace
}  // namespace cohort::serve
