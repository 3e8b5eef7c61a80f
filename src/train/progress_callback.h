// ProgressCallback: what a person watching training sees.
//
// On a terminal, a Keras-style bar redrawn in place (at most 10 times a second):
//   Epoch 2/3
//    180/312 [=============>..........] - ETA 4s - loss 0.4120 - accuracy 0.8521 - 2950 samples/s
// finished at the epoch end with the epoch's metrics on the test split. Anywhere else (a log
// file, `cohort logs`), one line per epoch, so logs stay readable:
//   epoch 2/3: 312 steps in 21.4 s - loss 0.4120 - accuracy 0.8521 - val_loss 0.3810 -
//   val_accuracy 0.8633 - 2950 samples/s - ETA 21 s
// (one line in the output). ETA is the time left for the whole run, from the average epoch so far.
#pragma once

#include <chrono>
#include <cstdio>

#include "train/callback.h"

namespace cohort::train {

class ProgressCallback : public Callback {
 public:
  // `out` is where to print; `bar` selects the terminal form. ForStdout picks both.
  ProgressCallback(std::FILE* out, bool bar) : out_(out), bar_(bar) {}
  static ProgressCallback ForStdout();

  Status OnTrainBegin(const FitPlan& plan, TrainingState& state) override;
  Status OnEpochBegin(const FitPlan& plan, int epoch) override;
  Status OnBatchEnd(const FitPlan& plan, TrainingState& state, const BatchLogs& logs) override;
  Status OnEpochEnd(const FitPlan& plan, TrainingState& state, const EpochLogs& logs) override;

 private:
  using Clock = std::chrono::steady_clock;

  std::FILE* out_;
  bool bar_;
  Clock::time_point epoch_start_;
  Clock::time_point last_draw_;
  double seconds_in_epochs_ = 0;  // wall time of the epochs finished by this process
  int epochs_finished_ = 0;
  int64_t first_step_of_epoch_ = 0;  // non-zero when the epoch was resumed mid-way
};

}  // namespace cohort::train
