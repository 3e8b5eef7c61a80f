// ProgressCallback: what a person watching training sees.
//
// On a terminal, a Keras-style bar redrawn in place (at most 10 times a second):
//   Epoch 2/3
//    180/312 [=============>..........] - ETA 4s - loss 0.4120 - accuracy 0.8521 - 2950 samples/s
// finished at the epoch end with the epoch's metrics on the test split. Anywhere else (a log
// file, `cohort logs`), whole lines, so logs stay readable: within an epoch, one line every
// `line_interval` (the first one interval into the epoch; 0: none),
//   epoch 2/3 step 180/312 (global 492): loss 0.4120 - accuracy 0.8521 - 2950 samples/s -
//   step 0.043 s (all-reduce wait 0.005 s) - ETA 4s
// and one line per epoch,
//   epoch 2/3: 312 steps in 21.4 s - loss 0.4120 - accuracy 0.8521 - val_loss 0.3810 -
//   val_accuracy 0.8633 - 2950 samples/s - ETA 21 s
// (each one line in the output). Within an epoch the ETA is the time left in the epoch, from its
// steps so far; at its end, the time left for the whole run, from the average epoch so far. Loss
// and metrics within an epoch are the running averages over its steps so far; samples/s counts
// every worker's samples; step and all-reduce wait are this worker's last step.
#pragma once

#include <chrono>
#include <cstdio>

#include "train/callback.h"
#include "train/rate_limiter.h"

namespace cohort::train {

class ProgressCallback : public Callback {
 public:
  static constexpr std::chrono::seconds kDefaultLineInterval{10};

  // `out` is where to print; `bar` selects the terminal form; `line_interval` bounds the lines
  // within an epoch when there is no bar; `now` is the clock both are measured on. ForStdout
  // picks `out` and `bar`.
  ProgressCallback(std::FILE* out, bool bar,
                   std::chrono::milliseconds line_interval = kDefaultLineInterval,
                   RateLimiter::Now now = RateLimiter::Clock::now)
      : out_(out),
        bar_(bar),
        now_(now),
        redraws_(std::chrono::milliseconds(100), now),
        lines_(line_interval, now) {}
  static ProgressCallback ForStdout(std::chrono::milliseconds line_interval = kDefaultLineInterval);

  Status OnTrainBegin(const FitPlan& plan, TrainingState& state) override;
  Status OnEpochBegin(const FitPlan& plan, int epoch) override;
  Status OnBatchEnd(const FitPlan& plan, TrainingState& state, const BatchLogs& logs) override;
  Status OnEpochEnd(const FitPlan& plan, TrainingState& state, const EpochLogs& logs) override;

 private:
  using Clock = RateLimiter::Clock;

  std::FILE* out_;
  bool bar_;
  RateLimiter::Now now_;
  RateLimiter redraws_;  // the bar's
  RateLimiter lines_;    // the lines within an epoch
  Clock::time_point epoch_start_;
  double seconds_in_epochs_ = 0;  // wall time of the epochs finished by this process
  int epochs_finished_ = 0;
  int64_t first_step_of_epoch_ = 0;  // non-zero when the epoch was resumed mid-way
};

}  // namespace cohort::train
