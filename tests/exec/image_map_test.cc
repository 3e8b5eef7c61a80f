#include "exec/image_map.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>

#include "exec_test_support.h"

namespace cohort::exec {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

job::Container ImageOnly(const std::string& image, std::vector<std::string> args = {}) {
  job::Container container;
  container.name = "tensorflow";
  container.image = image;
  container.args = std::move(args);
  return container;
}

TEST(ImageMapTest, FlagParseErrors) {
  for (const char* flag : {"no-equals-sign", "=python3 train.py", "trainer:1.0=", ""}) {
    ImageMap images;
    Status status = images.AddFlag(flag);
    EXPECT_EQ(status.code(), Status::Code::kInvalidArgument) << flag;
    EXPECT_THAT(status.message(), HasSubstr("expected NAME=COMMAND")) << flag;
  }
}

TEST(ImageMapTest, MappedImageRunsItsCommandThroughTheShellWithTheArgs) {
  ImageMap images;
  ASSERT_TRUE(images.AddFlag("trainer:1.0=python3 train.py --epochs=2").ok());
  StatusOr<std::vector<std::string>> argv =
      images.CommandFor(ImageOnly("trainer:1.0", {"--lr", "0.1"}), "worker-0");
  ASSERT_TRUE(argv.ok()) << argv.status().ToString();
  EXPECT_THAT(*argv, ElementsAre("/bin/sh", "-c", "exec python3 train.py --epochs=2 \"$@\"",
                                 "trainer:1.0", "--lr", "0.1"));
}

TEST(ImageMapTest, AContainerCommandNeedsNoMapping) {
  job::Container container = ImageOnly("unmapped", {"b"});
  container.command = {"/bin/echo", "a"};
  StatusOr<std::vector<std::string>> argv = ImageMap().CommandFor(container, "worker-0");
  ASSERT_TRUE(argv.ok());
  EXPECT_THAT(*argv, ElementsAre("/bin/echo", "a", "b"));
}

TEST(ImageMapTest, UnmappedImageIsNotFoundAndSaysHowToMapIt) {
  StatusOr<std::vector<std::string>> argv =
      ImageMap().CommandFor(ImageOnly("example/trainer:1.0"), "worker-1");
  ASSERT_FALSE(argv.ok());
  EXPECT_EQ(argv.status().code(), Status::Code::kNotFound);
  EXPECT_THAT(argv.status().message(),
              ::testing::AllOf(HasSubstr("replica worker-1"), HasSubstr("\"example/trainer:1.0\""),
                               HasSubstr("--image example/trainer:1.0=COMMAND"),
                               HasSubstr("$COHORT_HOME/images")));
}

TEST(ImageMapTest, CheckJobReportsAnUnmappedImageBeforeAnythingStarts) {
  job::Job job = JobFromYaml(
      "apiVersion: kubeflow.org/v1\nkind: TFJob\nmetadata: {name: unmapped}\nspec:\n"
      "  tfReplicaSpecs:\n    Worker:\n      replicas: 2\n      template:\n        spec:\n"
      "          containers: [{name: tensorflow, image: example/trainer:1.0}]\n");
  Status status = ImageMap().CheckJob(job);
  EXPECT_EQ(status.code(), Status::Code::kNotFound);
  ImageMap images;
  ASSERT_TRUE(images.AddFlag("example/trainer:1.0=true").ok());
  EXPECT_TRUE(images.CheckJob(job).ok());
}

TEST(ImageMapTest, ImagesFileInCohortHome) {
  ScratchDirectory home;
  std::ofstream(home.path() / "images") << "# images for this machine\n"
                                        << "\n"
                                        << "  trainer:1.0 = python3 train.py  \n"
                                        << "evaluator:1.0=python3 evaluate.py\n";
  ImageMap images;
  ASSERT_TRUE(images.AddFlag("evaluator:1.0=python3 evaluate_from_flag.py").ok());
  ASSERT_TRUE(images.LoadFile(home.path() / "images").ok());
  StatusOr<std::vector<std::string>> trainer =
      images.CommandFor(ImageOnly("trainer:1.0"), "worker-0");
  ASSERT_TRUE(trainer.ok()) << trainer.status().ToString();
  EXPECT_EQ((*trainer)[2], "exec python3 train.py \"$@\"");
  // A flag wins over the file.
  StatusOr<std::vector<std::string>> evaluator =
      images.CommandFor(ImageOnly("evaluator:1.0"), "evaluator-0");
  ASSERT_TRUE(evaluator.ok());
  EXPECT_EQ((*evaluator)[2], "exec python3 evaluate_from_flag.py \"$@\"");
}

TEST(ImageMapTest, AMappingSaysWhereItComesFrom) {
  ScratchDirectory home;
  std::ofstream(home.path() / "images") << "trainer:1.0=python3 train.py\n";
  ImageMap images;
  ASSERT_TRUE(images.AddFlag("evaluator:1.0=python3 evaluate.py").ok());
  ASSERT_TRUE(images.LoadFile(home.path() / "images").ok());
  EXPECT_EQ(images.DescribeMapping(ImageOnly("trainer:1.0")),
            "image trainer:1.0 is mapped to 'python3 train.py' by $COHORT_HOME/images");
  EXPECT_EQ(images.DescribeMapping(ImageOnly("evaluator:1.0")),
            "image evaluator:1.0 is mapped to 'python3 evaluate.py' by --image");
  EXPECT_EQ(images.DescribeMapping(ImageOnly("other:1.0")), "");
  job::Container own = ImageOnly("trainer:1.0");
  own.command = {"python3", "mine.py"};
  EXPECT_EQ(images.DescribeMapping(own), "");
}

// For `cohort validate`: an unmapped image is a warning per replica type, with its position.
TEST(ImageMapTest, UnmappedImagesAreWarningsNamingTheReplicaType) {
  job::Job job = JobFromYaml(
      "apiVersion: kubeflow.org/v1\nkind: TFJob\nmetadata: {name: cluster}\nspec:\n"
      "  tfReplicaSpecs:\n"
      "    Worker:\n      replicas: 2\n      template:\n        spec:\n"
      "          containers: [{name: tensorflow, image: gcr.io/t/trainer:1}]\n"
      "    PS:\n      replicas: 1\n      template:\n        spec:\n"
      "          containers: [{name: tensorflow, image: gcr.io/t/ps:1}]\n");
  ImageMap images;
  ASSERT_TRUE(images.AddFlag("gcr.io/t/ps:1=python3 ps.py").ok());
  std::vector<std::string> warnings = images.UnmappedImageWarnings(job);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_THAT(warnings[0], HasSubstr("Worker: image \"gcr.io/t/trainer:1\" is not mapped to a "
                                     "command, so this job cannot run here as it is (valid for a "
                                     "cluster); map it with --image gcr.io/t/trainer:1=COMMAND"));
  ASSERT_TRUE(images.AddFlag("gcr.io/t/trainer:1=python3 train.py").ok());
  EXPECT_TRUE(images.UnmappedImageWarnings(job).empty());
}

TEST(ImageMapTest, NoImagesFileIsFine) {
  ScratchDirectory home;
  EXPECT_TRUE(ImageMap().LoadFile(home.path() / "images").ok());
}

TEST(ImageMapTest, ABadLineInTheImagesFileNamesFileAndLine) {
  ScratchDirectory home;
  std::filesystem::path path = home.path() / "images";
  std::ofstream(path) << "trainer:1.0=python3 train.py\n# comment\njust-an-image\n";
  Status status = ImageMap().LoadFile(path);
  EXPECT_EQ(status.code(), Status::Code::kInvalidArgument);
  EXPECT_THAT(status.message(),
              HasSubstr(path.string() + ":3: expected NAME=COMMAND, got \"just-an-image\""));
}

}  // namespace
}  // namespace cohort::exec
