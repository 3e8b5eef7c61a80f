// TensorBoardCallback: training curves as TensorBoard event files.
//
// Runs, as Keras lays them out: <log_dir>/train and <log_dir>/validation. Scalars:
//   train:      epoch_loss, epoch_accuracy, epoch_learning_rate, epoch_samples_per_second at each
//               epoch end; the batch figures every `update_every_steps` steps and, within an
//               epoch, at most once per `update_every` (both 0: never): batch_loss,
//               batch_accuracy (the epoch's running averages, as Keras logs them),
//               batch_samples_per_second, batch_step_seconds and batch_allreduce_wait_seconds
//               (this worker's last step: its wall time, and what it waited for the gradient
//               all-reduce after backward)
//   validation: epoch_loss, epoch_accuracy at each epoch end
// What `update_every` writes is flushed at once, so that a reader following the file (the
// dashboard) sees the curve grow while the epoch runs.
// The x axis of every scalar is the global step (optimizer steps done), not Keras's epoch index:
// a resume can happen mid-epoch, and TensorBoard's purge on restart works on one step axis for all
// tags. A run that resumes at global step S first writes SessionLog START at step S + 1, the first
// step it will log again, so TensorBoard drops what the interrupted run logged after its backup
// and keeps what it logged up to it.
// `log_dir` may be an object storage prefix (s3://bucket/logs, gs://...; base/storage.h), where a
// file cannot be appended to: each run is then a series of closed event files, one uploaded at a
// flush at least `upload_every` after the last and one at the end of training
// (summary/summary_run_writer.h), which TensorBoard and the dashboard read as one run.
// Only the chief's files stay: other workers write under <log_dir>/workertemp_<index>, removed at
// the end of training. With `own_directory` (a directory that is this task's alone, such as the
// one job control names in COHORT_SUMMARY_DIR) every task writes there and keeps its files.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "train/callback.h"
#include "train/rate_limiter.h"
#include "train/summary/summary_run_writer.h"

namespace cohort::train {

struct TensorBoardOptions {
  std::string log_dir;
  int64_t update_every_steps = 0;
  std::chrono::milliseconds update_every{0};
  bool own_directory = false;
  // With `log_dir` in a bucket: the least time between uploads of a run's closed event file.
  std::chrono::milliseconds upload_every{30000};
  RateLimiter::Now now = RateLimiter::Clock::now;  // the clock both intervals are measured on
};

class TensorBoardCallback : public Callback {
 public:
  explicit TensorBoardCallback(TensorBoardOptions options)
      : options_(std::move(options)), batch_updates_(options_.update_every, options_.now) {}

  Status OnTrainBegin(const FitPlan& plan, TrainingState& state) override;
  Status OnEpochBegin(const FitPlan& plan, int epoch) override;
  Status OnBatchEnd(const FitPlan& plan, TrainingState& state, const BatchLogs& logs) override;
  Status OnEpochEnd(const FitPlan& plan, TrainingState& state, const EpochLogs& logs) override;
  Status OnTrainEnd(const FitPlan& plan, TrainingState& state) override;

 private:
  std::string WriteDir(const FitPlan& plan) const;

  TensorBoardOptions options_;
  RateLimiter batch_updates_;
  std::unique_ptr<SummaryRunWriter> train_;
  std::unique_ptr<SummaryRunWriter> validation_;
};

}  // namespace cohort::train
