#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "train/progress_callback.h"

namespace cohort::train {
namespace {

class NoState : public TrainingState {
 public:
  StatusOr<FileChecksum> Save(const std::string&) override { return FileChecksum{}; }
  Status Load(std::string_view, const std::string&) override { return Status::OK(); }
  StatusOr<FileChecksum> SaveWeights(const std::string&) override { return FileChecksum{}; }
  TrainingPosition position() const override { return {}; }
};

// What one epoch of `steps` steps prints (0: resumed after the epoch's last step).
std::string Printed(bool bar, int64_t steps = 4) {
  std::FILE* out = std::tmpfile();
  ProgressCallback progress(out, bar);
  FitPlan plan;
  plan.epochs = 2;
  plan.steps_per_epoch = 4;
  NoState state;
  EXPECT_TRUE(progress.OnTrainBegin(plan, state).ok());
  EXPECT_TRUE(progress.OnEpochBegin(plan, 0).ok());
  for (int64_t step = 1; step <= steps; ++step) {
    BatchLogs logs;
    logs.position = {0, step};
    logs.global_step = step;
    logs.loss = 0.5;
    logs.metrics = {{"accuracy", 0.75}};
    logs.samples_per_second = 1000;
    EXPECT_TRUE(progress.OnBatchEnd(plan, state, logs).ok());
  }
  EpochLogs epoch;
  epoch.epoch = 0;
  epoch.steps = steps;
  epoch.seconds = 10;
  epoch.loss = 0.5;
  epoch.metrics = {{"accuracy", 0.75}};
  epoch.val_loss = 0.25;
  epoch.val_metrics = {{"accuracy", 0.875}};
  epoch.samples_per_second = 1234;
  EXPECT_TRUE(progress.OnEpochEnd(plan, state, epoch).ok());
  std::rewind(out);
  std::string text;
  char buffer[512];
  while (size_t n = std::fread(buffer, 1, sizeof(buffer), out)) text.append(buffer, n);
  std::fclose(out);
  return text;
}

TEST(ProgressCallback, OneLinePerEpochOffATerminal) {
  EXPECT_EQ(Printed(false),
            "epoch 1/2: 4 steps in 10.0 s - loss 0.5000 - accuracy 0.7500 - val_loss 0.2500 - "
            "val_accuracy 0.8750 - 1234 samples/s - ETA 10s\n");
}

TEST(ProgressCallback, ABarOnATerminal) {
  const std::string text = Printed(true);
  EXPECT_EQ(text.rfind("Epoch 1/2\n", 0), 0u) << text;
  EXPECT_NE(text.find("\r     4/4 [==============================] - 10s - loss 0.5000"),
            std::string::npos)
      << text;
  EXPECT_EQ(text.back(), '\n');
}

// A run resumed from a backup taken after an epoch's last step trains no step in that epoch: its
// line shows the evaluation, not training figures of zero.
TEST(ProgressCallback, AnEpochResumedAfterItsLastStepShowsNoTrainingFigures) {
  EXPECT_EQ(Printed(false, 0),
            "epoch 1/2: 0 steps in 10.0 s - no steps left after the resume - val_loss 0.2500 - "
            "val_accuracy 0.8750 - ETA 10s\n");
}

// An epoch resumed part-way says how many of its steps ran here.
TEST(ProgressCallback, AnEpochResumedPartWaySaysWhichStepsRanHere) {
  EXPECT_EQ(Printed(false, 3),
            "epoch 1/2: 3 of 4 steps (resumed after step 1) in 10.0 s - loss 0.5000 - accuracy "
            "0.7500 - val_loss 0.2500 - val_accuracy 0.8750 - 1234 samples/s - ETA 10s\n");
}

// A clock the test moves by hand.
struct FakeClock {
  RateLimiter::Clock::time_point now{};
  RateLimiter::Now Function() {
    return [this] { return now; };
  }
};

// Off a terminal, within an epoch: a line once per interval of the (fake) clock, however many
// steps run in between, none before the first interval has passed, none for the last step (the
// epoch's own line follows it).
TEST(ProgressCallback, LinesWithinAnEpochAtABoundedRate) {
  FakeClock clock;
  std::FILE* out = std::tmpfile();
  ProgressCallback progress(out, /*bar=*/false, std::chrono::seconds(10), clock.Function());
  FitPlan plan;
  plan.epochs = 2;
  plan.steps_per_epoch = 100;
  NoState state;
  ASSERT_TRUE(progress.OnTrainBegin(plan, state).ok());
  ASSERT_TRUE(progress.OnEpochBegin(plan, 0).ok());
  for (int64_t step = 1; step <= 100; ++step) {
    clock.now += std::chrono::milliseconds(450);  // 45 s in all: lines at 10, 20, 30 and 40 s
    BatchLogs logs;
    logs.position = {0, step};
    logs.global_step = step;
    logs.loss = 0.5;
    logs.metrics = {{"accuracy", 0.75}};
    logs.samples_per_second = 2950;
    logs.step_seconds = 0.043;
    logs.allreduce_wait_seconds = 0.005;
    ASSERT_TRUE(progress.OnBatchEnd(plan, state, logs).ok());
  }
  std::rewind(out);
  std::string text;
  char buffer[512];
  while (size_t n = std::fread(buffer, 1, sizeof(buffer), out)) text.append(buffer, n);
  std::fclose(out);
  // 10 s in: step 23 (10.35 s), 77 steps left at 0.45 s each.
  EXPECT_EQ(text.substr(0, text.find('\n') + 1),
            "epoch 1/2 step 23/100 (global 23): loss 0.5000 - accuracy 0.7500 - 2950 samples/s - "
            "step 0.043 s (all-reduce wait 0.005 s) - ETA 35s\n");
  size_t lines = 0;
  for (char c : text) lines += c == '\n';
  EXPECT_EQ(lines, 4u) << text;
}

TEST(ProgressCallback, NoLinesWithinAnEpochWhenTheIntervalIsZero) {
  FakeClock clock;
  std::FILE* out = std::tmpfile();
  ProgressCallback progress(out, /*bar=*/false, std::chrono::seconds(0), clock.Function());
  FitPlan plan;
  plan.steps_per_epoch = 10;
  NoState state;
  ASSERT_TRUE(progress.OnEpochBegin(plan, 0).ok());
  for (int64_t step = 1; step <= 10; ++step) {
    clock.now += std::chrono::hours(1);
    BatchLogs logs;
    logs.position = {0, step};
    ASSERT_TRUE(progress.OnBatchEnd(plan, state, logs).ok());
  }
  EXPECT_EQ(std::ftell(out), 0);
  std::fclose(out);
}

TEST(RateLimiter, ReadyOncePerIntervalFromTheStart) {
  FakeClock clock;
  RateLimiter limiter(std::chrono::seconds(5), clock.Function());
  EXPECT_FALSE(limiter.Ready());
  clock.now += std::chrono::seconds(4);
  EXPECT_FALSE(limiter.Ready());
  clock.now += std::chrono::seconds(1);
  EXPECT_TRUE(limiter.Ready());
  EXPECT_FALSE(limiter.Ready());
  clock.now += std::chrono::seconds(12);
  EXPECT_TRUE(limiter.Ready());
  EXPECT_FALSE(limiter.Ready());  // a long pause gives one line, not two
  limiter.Restart();
  clock.now += std::chrono::seconds(4);
  EXPECT_FALSE(limiter.Ready());
}

}  // namespace
}  // namespace cohort::train
