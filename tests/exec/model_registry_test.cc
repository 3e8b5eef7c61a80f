#include "exec/model_registry.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>

#include "testing/scratch_directory.h"

namespace cohort::exec {
namespace {

using ::testing::HasSubstr;

class ModelRegistryTest : public ::testing::Test {
 protected:
  ModelRecord Model(const std::string& name) {
    ModelRecord model;
    model.name = name;
    model.create_time = Clock::now();
    return model;
  }
  VersionRecord Version(const std::string& name) {
    VersionRecord version;
    version.name = name;
    version.deployment_uri = "/models/" + name;
    version.framework = "COHORT";
    version.create_time = Clock::now();
    return version;
  }
  cohort::testing::ScratchDirectory scratch_{"cohort-model-registry-test"};
  ModelRegistry registry_{scratch_.path() / "models"};
};

TEST_F(ModelRegistryTest, TheFirstVersionIsTheDefaultAndRecordsReadBackWhole) {
  ASSERT_TRUE(registry_.CreateModel(Model("census")).ok());
  EXPECT_EQ(registry_.CreateModel(Model("census")).code(), Status::Code::kAlreadyExists);
  VersionRecord v1 = Version("v1");
  v1.signature = {{"model", "cnn"}, {"inputShape", {1, 28, 28}}};
  StatusOr<ModelRecord> after_first = registry_.CreateVersion("census", v1);
  ASSERT_TRUE(after_first.ok()) << after_first.status().ToString();
  EXPECT_EQ(after_first->default_version, "v1");
  StatusOr<ModelRecord> after_second = registry_.CreateVersion("census", Version("v2"));
  ASSERT_TRUE(after_second.ok());
  EXPECT_EQ(after_second->default_version, "v1");
  EXPECT_EQ(registry_.CreateVersion("census", Version("v2")).status().code(),
            Status::Code::kAlreadyExists);
  StatusOr<VersionRecord> read = registry_.GetVersion("census", "v1");
  ASSERT_TRUE(read.ok());
  EXPECT_EQ(read->deployment_uri, "/models/v1");
  EXPECT_EQ(read->signature["inputShape"], nlohmann::json({1, 28, 28}));
  StatusOr<std::vector<VersionRecord>> versions = registry_.ListVersions("census");
  ASSERT_TRUE(versions.ok());
  ASSERT_EQ(versions->size(), 2u);
  EXPECT_EQ((*versions)[1].name, "v2");
}

TEST_F(ModelRegistryTest, AiPlatformsDeletionRules) {
  ASSERT_TRUE(registry_.CreateModel(Model("census")).ok());
  ASSERT_TRUE(registry_.CreateVersion("census", Version("v1")).ok());
  ASSERT_TRUE(registry_.CreateVersion("census", Version("v2")).ok());
  EXPECT_EQ(registry_.DeleteModel("census").code(), Status::Code::kFailedPrecondition);
  EXPECT_EQ(registry_.DeleteVersion("census", "v1").code(), Status::Code::kFailedPrecondition);
  ASSERT_TRUE(registry_.SetDefaultVersion("census", "v2").ok());
  ASSERT_TRUE(registry_.DeleteVersion("census", "v1").ok());
  // The last version may go, default or not; the model then has none.
  ASSERT_TRUE(registry_.DeleteVersion("census", "v2").ok());
  EXPECT_EQ(registry_.GetModel("census")->default_version, "");
  ASSERT_TRUE(registry_.DeleteModel("census").ok());
  EXPECT_EQ(registry_.GetModel("census").status().code(), Status::Code::kNotFound);
  EXPECT_TRUE(registry_.ListModels()->empty());
}

TEST_F(ModelRegistryTest, NamesAreCheckedBeforeTheyReachAPath) {
  for (const std::string& bad :
       std::vector<std::string>{"../etc", "taxi-model", "1model", "", std::string(129, 'a')}) {
    Status created = registry_.CreateModel(Model(bad));
    EXPECT_EQ(created.code(), Status::Code::kInvalidArgument) << bad;
    EXPECT_EQ(registry_.GetModel(bad).status().code(), Status::Code::kInvalidArgument) << bad;
  }
  EXPECT_THAT(registry_.CreateModel(Model("a-b")).message(),
              HasSubstr("invalid model name \"a-b\""));
  ASSERT_TRUE(registry_.CreateModel(Model("m")).ok());
  EXPECT_EQ(registry_.CreateVersion("m", Version("../v")).status().code(),
            Status::Code::kInvalidArgument);
}

TEST_F(ModelRegistryTest, ARecordThatIsNotJsonOrTooLargeIsAnErrorNotACrash) {
  ASSERT_TRUE(registry_.CreateModel(Model("m")).ok());
  std::ofstream(scratch_.path() / "models" / "m" / "model.json") << "{not json";
  EXPECT_EQ(registry_.GetModel("m").status().code(), Status::Code::kIOError);
  std::ofstream(scratch_.path() / "models" / "m" / "model.json")
      << "\"" << std::string(kMaxRecordBytes, 'x') << "\"";
  EXPECT_FALSE(registry_.GetModel("m").ok());
}

TEST_F(ModelRegistryTest, TheOriginsManifestGivesFrameworkAndSignature) {
  std::filesystem::path saved = scratch_.path() / "saved";
  std::filesystem::create_directories(saved);
  std::ofstream(saved / "manifest.json")
      << R"({"format": "cohort-saved-model", "model": "wide_deep", "input_shape": [17],
             "classes": ["no tip", "tip"]})";
  StatusOr<VersionRecord> version = ReadSavedModelOrigin(saved.string());
  ASSERT_TRUE(version.ok()) << version.status().ToString();
  EXPECT_EQ(version->deployment_uri, saved.lexically_normal().string());
  EXPECT_EQ(version->framework, "COHORT");
  EXPECT_EQ(version->signature,
            nlohmann::json({{"model", "wide_deep"}, {"inputShape", {17}}, {"classes", 2}}));
  EXPECT_EQ(ReadSavedModelOrigin((scratch_.path() / "none").string()).status().code(),
            Status::Code::kInvalidArgument);
  EXPECT_THAT(ReadSavedModelOrigin("gs://bucket/m").status().message(),
              HasSubstr("no object storage"));
}

}  // namespace
}  // namespace cohort::exec
