// gcloud ai-platform's model registry through the real `cohort` binary: models and versions kept
// in $COHORT_HOME, with gcloud's columns, AI Platform's rules (the first version is the default,
// a model with versions cannot be deleted) and Cohort's exit codes.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>

#include "testing/cohort_runner.h"

namespace cohort::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

class GcloudModelsTest : public ::testing::Test {
 protected:
  // A directory as cohort-train saves a model: its manifest.json (the weights are not read).
  std::string SavedModel(const std::string& name) {
    std::filesystem::create_directories(sandbox_.root() / name);
    sandbox_.WriteFile(name + "/manifest.json",
                       R"({"format": "cohort-saved-model", "format_version": 2, "model": "cnn",
                           "weights": "weights.pt", "input_shape": [1, 28, 28],
                           "classes": ["T-shirt/top", "Trouser", "Pullover"]})");
    return (sandbox_.root() / name).string();
  }
  CommandResult Ai(std::vector<std::string> words) {
    words.insert(words.begin(), "ai-platform");
    return sandbox_.Cohort(words);
  }
  CohortSandbox sandbox_;
};

// The seminar's course: no models at first, a model trained and deployed as versions, then its
// versions and the model deleted.
TEST_F(GcloudModelsTest, ModelsAndVersionsFromCreationToDeletion) {
  CommandResult empty = Ai({"models", "list"});
  EXPECT_EQ(empty.exit_code, 0);
  EXPECT_THAT(empty.output, HasSubstr("Listed 0 items."));

  CommandResult create = Ai({"models", "create", "taxi_model", "--regions", "us-central1"});
  EXPECT_EQ(create.exit_code, 0) << create.output;
  EXPECT_THAT(create.output, HasSubstr("Created ai platform model [taxi_model]."));
  CommandResult again = Ai({"models", "create", "taxi_model"});
  EXPECT_EQ(again.exit_code, 2);
  EXPECT_THAT(again.output, HasSubstr("a model named taxi_model already exists"));
  EXPECT_TRUE(std::filesystem::exists(sandbox_.home() / "models" / "taxi_model" / "model.json"));

  std::string first = SavedModel("saved_1");
  std::string second = SavedModel("saved_2");
  CommandResult v1 = Ai({"versions", "create", "v1", "--model", "taxi_model", "--origin", first,
                         "--runtime-version", "2.1"});
  EXPECT_EQ(v1.exit_code, 0) << v1.output;
  EXPECT_THAT(v1.output, HasSubstr("Created version [v1] of model [taxi_model], its default."));
  ASSERT_EQ(Ai({"versions", "create", "v2", "--model", "taxi_model", "--origin", second}).exit_code,
            0);

  EXPECT_EQ(Ai({"models", "list"}).output, "NAME        DEFAULT_VERSION_NAME\ntaxi_model  v1\n");
  EXPECT_EQ(Ai({"versions", "list", "--model", "taxi_model"}).output,
            "NAME  DEPLOYMENT_URI" + std::string(first.size() - 14, ' ') + "  STATE\nv1    " +
                first + "  READY\nv2    " + second + "  READY\n");
  CommandResult describe = Ai({"versions", "describe", "v1", "--model", "taxi_model"});
  EXPECT_EQ(describe.exit_code, 0) << describe.output;
  EXPECT_THAT(describe.output, HasSubstr("framework: COHORT\n"));
  EXPECT_THAT(describe.output, HasSubstr("isDefault: true\n"));
  EXPECT_THAT(describe.output, HasSubstr("runtimeVersion: \"2.1\"\n"));
  EXPECT_THAT(describe.output, HasSubstr("model: cnn\n"));
  EXPECT_THAT(Ai({"models", "describe", "taxi_model"}).output,
              HasSubstr("defaultVersion:\n  createTime: "));

  // AI Platform's rules.
  CommandResult with_versions = Ai({"models", "delete", "taxi_model"});
  EXPECT_EQ(with_versions.exit_code, 3);
  EXPECT_THAT(with_versions.output, HasSubstr("a model with versions cannot be deleted"));
  CommandResult default_version = Ai({"versions", "delete", "v1", "--model", "taxi_model"});
  EXPECT_EQ(default_version.exit_code, 3);
  EXPECT_THAT(default_version.output, HasSubstr("is the default version of model taxi_model"));
  CommandResult set_default = Ai({"versions", "set-default", "v2", "--model", "taxi_model"});
  EXPECT_EQ(set_default.exit_code, 0) << set_default.output;
  EXPECT_THAT(set_default.output, HasSubstr("isDefault: true\n"));
  EXPECT_THAT(set_default.output, HasSubstr("name: v2\n"));

  EXPECT_EQ(Ai({"versions", "delete", "v1", "--model", "taxi_model"}).exit_code, 0);
  EXPECT_EQ(Ai({"versions", "delete", "v2", "--model", "taxi_model"}).exit_code, 0);
  CommandResult without_versions = Ai({"models", "describe", "taxi_model"});
  EXPECT_THAT(without_versions.output, HasSubstr("name: taxi_model\n"));
  EXPECT_THAT(without_versions.output, HasSubstr("us-central1"));
  EXPECT_THAT(without_versions.output, Not(HasSubstr("defaultVersion")));
  EXPECT_EQ(Ai({"models", "delete", "taxi_model"}).exit_code, 0);
  EXPECT_THAT(Ai({"models", "list"}).output, HasSubstr("Listed 0 items."));
  CommandResult gone = Ai({"models", "describe", "taxi_model"});
  EXPECT_EQ(gone.exit_code, 3);
  EXPECT_THAT(gone.output, HasSubstr("model taxi_model not found"));
}

TEST_F(GcloudModelsTest, BadNamesAndOriginsAreRefusedNamingWhat) {
  CommandResult dashed = Ai({"models", "create", "taxi-model"});
  EXPECT_EQ(dashed.exit_code, 2);
  EXPECT_THAT(dashed.output, HasSubstr("invalid model name \"taxi-model\": it must start with a "
                                       "letter and have only letters, digits and '_'"));
  ASSERT_EQ(Ai({"models", "create", "m"}).exit_code, 0);
  CommandResult no_manifest =
      Ai({"versions", "create", "v1", "--model", "m", "--origin", sandbox_.root().string()});
  EXPECT_EQ(no_manifest.exit_code, 2);
  EXPECT_THAT(no_manifest.output, HasSubstr("no saved model's manifest.json there"));
  CommandResult bucket =
      Ai({"versions", "create", "v1", "--model", "m", "--origin", "gs://bucket/model"});
  EXPECT_EQ(bucket.exit_code, 2);
  EXPECT_THAT(bucket.output, HasSubstr("this machine has no object storage"));
  CommandResult no_model =
      Ai({"versions", "create", "v1", "--model", "other", "--origin", SavedModel("s")});
  EXPECT_EQ(no_model.exit_code, 3);
  EXPECT_THAT(no_model.output, HasSubstr("model other not found"));
  EXPECT_THAT(Ai({"versions", "list", "--model", "m"}).output, HasSubstr("Listed 0 items."));
}

}  // namespace
}  // namespace cohort::testing
