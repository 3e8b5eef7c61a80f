// The batch figures TensorBoardCallback writes within an epoch: at most once per interval of a
// fake clock, with throughput, step time and all-reduce wait, flushed at once; and a task's own
// directory (COHORT_SUMMARY_DIR) kept by every worker.
#include <gtest/gtest.h>

#include <filesystem>
#include <set>

#include "testing/scratch_directory.h"
#include "train/summary/event.pb.h"
#include "train/summary/tfrecord.h"
#include "train/tensorboard_callback.h"

namespace cohort::train {
namespace {

namespace fs = std::filesystem;

class NoState : public TrainingState {
 public:
  StatusOr<FileChecksum> Save(const std::string&) override { return FileChecksum{}; }
  Status Load(std::string_view, const std::string&) override { return Status::OK(); }
  StatusOr<FileChecksum> SaveWeights(const std::string&) override { return FileChecksum{}; }
  TrainingPosition position() const override { return {}; }
};

// The events of the one event file in `run`.
std::vector<proto::Event> Events(const fs::path& run) {
  std::vector<proto::Event> events;
  for (const auto& entry : fs::directory_iterator(run)) {
    auto records = ReadTfRecordFile(entry.path().string());
    EXPECT_TRUE(records.ok()) << records.status().ToString();
    if (!records.ok()) continue;
    for (const std::string& record : *records) {
      proto::Event event;
      EXPECT_TRUE(event.ParseFromString(record));
      events.push_back(event);
    }
  }
  return events;
}

TEST(TensorBoardProgress, BatchFiguresAtABoundedRateInTheTasksOwnDirectory) {
  testing::ScratchDirectory scratch("cohort-tensorboard-progress");
  RateLimiter::Clock::time_point now{};
  TensorBoardOptions options{(scratch.path() / "worker-1").string(), 0};
  options.update_every = std::chrono::seconds(2);
  options.own_directory = true;
  options.now = [&now] { return now; };
  TensorBoardCallback callback(options);
  FitPlan plan;
  plan.epochs = 1;
  plan.steps_per_epoch = 100;
  plan.num_workers = 2;
  plan.rank = 1;
  plan.is_chief = false;
  plan.task_index = 1;
  NoState state;
  ASSERT_TRUE(callback.OnTrainBegin(plan, state).ok());
  ASSERT_TRUE(callback.OnEpochBegin(plan, 0).ok());
  for (int64_t step = 1; step <= 100; ++step) {
    now += std::chrono::milliseconds(450);  // 45 s: figures every 5 steps (2.25 s)
    BatchLogs logs;
    logs.position = {0, step};
    logs.global_step = step;
    logs.loss = 1.0 / static_cast<double>(step);
    logs.metrics = {{"accuracy", 0.5}};
    logs.samples_per_second = 2000;
    logs.step_seconds = 0.45;
    logs.allreduce_wait_seconds = 0.01;
    ASSERT_TRUE(callback.OnBatchEnd(plan, state, logs).ok());
    if (step == 5) {
      // Flushed when written: a reader sees the first figures during the epoch.
      std::vector<proto::Event> events = Events(scratch.path() / "worker-1" / "train");
      ASSERT_EQ(events.size(), 2u);  // the file version, then step 5 (2.25 s)
      EXPECT_EQ(events[1].step(), 5);
    }
  }
  ASSERT_TRUE(callback.OnTrainEnd(plan, state).ok());

  // A worker's own directory stays: no workertemp_1, nothing removed at the end.
  EXPECT_FALSE(fs::exists(scratch.path() / "worker-1" / "workertemp_1"));
  std::vector<proto::Event> events = Events(scratch.path() / "worker-1" / "train");
  ASSERT_EQ(events.size(), 1u + 20u);
  std::set<std::string> tags;
  for (const auto& value : events[1].summary().value()) tags.insert(value.tag());
  EXPECT_EQ(tags, (std::set<std::string>{"batch_loss", "batch_accuracy", "batch_samples_per_second",
                                         "batch_step_seconds", "batch_allreduce_wait_seconds"}));
  for (size_t i = 2; i < events.size(); ++i) {
    EXPECT_EQ(events[i].step() - events[i - 1].step(), 5);
  }
}

}  // namespace
}  // namespace cohort::train
