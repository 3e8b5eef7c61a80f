// The final-checkpoint marker the chief leaves for the evaluator side-car: the step, and the run
// that wrote it, so that a marker left by an earlier run in the same directory is not taken for
// the end of this one.
#include <gtest/gtest.h>

#include <filesystem>

#include "testing/scratch_directory.h"
#include "testing/synthetic_data.h"
#include "train/parameter_server/parameter_server_trainer.h"

namespace cohort::train {
namespace {

namespace fs = std::filesystem;

TEST(FinalCheckpointMarker, CountsOnlyForTheRunThatWroteIt) {
  const cohort::testing::ScratchDirectory scratch("cohort-final-checkpoint");
  const std::string dir = scratch.path().string();
  const std::string this_run = RunIdentity(net::JobSecret("secret of this run"));
  const std::string earlier_run = RunIdentity(net::JobSecret("secret of an earlier run"));
  EXPECT_EQ(this_run.size(), 16u);
  EXPECT_NE(this_run, earlier_run);
  EXPECT_EQ(this_run.find("secret"), std::string::npos);

  EXPECT_EQ(FinalCheckpointStep(dir, this_run), -1);  // no marker yet
  testing::WriteFile(dir + "/" + kFinalCheckpointFile, "2344 " + earlier_run + "\n");
  EXPECT_EQ(FinalCheckpointStep(dir, this_run), -1);
  testing::WriteFile(dir + "/" + kFinalCheckpointFile, "2347 " + this_run + "\n");
  EXPECT_EQ(FinalCheckpointStep(dir, this_run), 2347);
}

TEST(FinalCheckpointMarker, OpenModeRunsHaveNoIdentity) {
  const cohort::testing::ScratchDirectory scratch("cohort-final-checkpoint-open");
  const std::string dir = scratch.path().string();
  EXPECT_EQ(RunIdentity(net::JobSecret()), "");
  testing::WriteFile(dir + "/" + kFinalCheckpointFile, "100 \n");
  EXPECT_EQ(FinalCheckpointStep(dir, ""), 100);
  testing::WriteFile(dir + "/" + kFinalCheckpointFile, "garbage\n");
  EXPECT_EQ(FinalCheckpointStep(dir, ""), -1);
}

}  // namespace
}  // namespace cohort::train
