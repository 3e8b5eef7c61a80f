// Progress while a job trains, end to end: a 2-worker job of cohort-train under the real `cohort`
// supervisor, with no --tensorboard_dir. Each worker writes its event files into the directory
// job control names in COHORT_SUMMARY_DIR, and view::ReadJobScalars finds them with nothing but
// the job's name: the batch figures within the epoch (loss, throughput, step time, all-reduce
// wait), the epoch's and the validation's. The replica logs carry the progress lines. About 20 s
// on 2 cores.
#include "view/training_scalars.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <map>

#include "exec/job_store.h"
#include "testing/cohort_runner.h"

namespace {

namespace fs = std::filesystem;
using cohort::testing::ReadText;
using std::chrono::seconds;
using ::testing::HasSubstr;

const fs::path kCohortTrain = fs::path(COHORT_BINARY_DIR) / "apps/cohort-train/cohort-train";

TEST(TrainingScalarsEndToEnd, ReplicasWriteWhereJobControlFindsThem) {
  ASSERT_TRUE(fs::exists(kCohortTrain)) << kCohortTrain;
  cohort::testing::CohortSandbox sandbox;
  std::string args;
  for (const char* flag :
       {"--epochs=2", "--steps_per_epoch=40", "--per_worker_batch=32", "--threads=1",
        "--tensorboard_update_s=0.05", "--progress_every_s=0.2"}) {
    args += std::string("                - \"") + flag + "\"\n";
  }
  const fs::path manifest = sandbox.WriteFile(
      "curves.yaml",
      "apiVersion: kubeflow.org/v1\nkind: TFJob\nmetadata:\n  name: curves\nspec:\n"
      "  tfReplicaSpecs:\n    Worker:\n      replicas: 2\n      restartPolicy: Never\n"
      "      template:\n        spec:\n          containers:\n            - name: tensorflow\n"
      "              image: cohort/train\n              args:\n" +
          args);
  const cohort::testing::CommandResult run = sandbox.Cohort(
      {"run", manifest.string(), "--image", "cohort/train=" + kCohortTrain.string()}, seconds(600));
  ASSERT_EQ(run.exit_code, 0) << run.output;

  const cohort::exec::JobStore store(sandbox.home());
  const cohort::exec::JobKey key{"default", "curves"};
  std::vector<std::string> notes;
  cohort::view::ScalarCache cache;
  cohort::view::ScalarQuery every_point;
  every_point.max_points = 0;
  auto series = cohort::view::ReadJobScalars(store, key, every_point, &cache, &notes);
  ASSERT_TRUE(series.ok()) << series.status().ToString();
  EXPECT_THAT(notes, ::testing::IsEmpty());
  std::map<std::string, const cohort::view::ScalarSeries*> found;
  for (const auto& one : *series) found[one.replica + "/" + one.run + "/" + one.tag] = &one;
  for (const char* replica : {"worker-0", "worker-1"}) {
    const std::string prefix = std::string(replica) + "/";
    for (const char* name :
         {"train/batch_loss", "train/batch_accuracy", "train/batch_samples_per_second",
          "train/batch_step_seconds", "train/batch_allreduce_wait_seconds", "train/epoch_loss",
          "validation/epoch_loss", "validation/epoch_accuracy"}) {
      EXPECT_TRUE(found.count(prefix + name)) << prefix + name;
    }
    if (!found.count(prefix + "train/batch_loss")) continue;
    const auto& loss = found[prefix + "train/batch_loss"]->points;
    // Several figures within each epoch, in step order, each a real loss.
    EXPECT_GE(loss.size(), 4u) << replica;
    for (size_t i = 1; i < loss.size(); ++i) EXPECT_LT(loss[i - 1].step, loss[i].step);
    for (const auto& point : loss) EXPECT_GT(point.value, 0);
    for (const auto& point : found[prefix + "train/batch_allreduce_wait_seconds"]->points) {
      EXPECT_GE(point.value, 0);
      EXPECT_LT(point.value, 60);
    }
    const auto& epochs = found[prefix + "train/epoch_loss"]->points;
    ASSERT_EQ(epochs.size(), 2u);
    EXPECT_EQ(epochs[1].step, 80);
  }

  // The replica log carries progress lines within the epoch.
  const std::string log = ReadText(store.LogPath(key, "worker-0"));
  EXPECT_THAT(log, HasSubstr("epoch 1/2 step "));
  EXPECT_THAT(log, HasSubstr("samples/s - step "));
  EXPECT_THAT(log, HasSubstr("(all-reduce wait "));
}

}  // namespace
