// TensorBoardCallback: training curves as TensorBoard event files.
//
// Runs, as Keras lays them out: <log_dir>/train and <log_dir>/validation. Scalars:
//   train:      epoch_loss, epoch_accuracy, epoch_learning_rate, epoch_samples_per_second at each
//               epoch end; batch_loss, batch_accuracy every `update_every_steps` steps (0: never)
//   validation: epoch_loss, epoch_accuracy at each epoch end
// The x axis of every scalar is the global step (optimizer steps done), not Keras's epoch index:
// a resume can happen mid-epoch, and TensorBoard's purge on restart works on one step axis for all
// tags. A run that resumes at global step S first writes SessionLog START at step S + 1, the first
// step it will log again, so TensorBoard drops what the interrupted run logged after its backup
// and keeps what it logged up to it.
// Only the chief's files stay: other workers write under <log_dir>/workertemp_<index>, removed at
// the end of training.
#pragma once

#include <memory>
#include <string>

#include "train/callback.h"
#include "train/summary/event_file_writer.h"

namespace cohort::train {

struct TensorBoardOptions {
  std::string log_dir;
  int64_t update_every_steps = 0;
};

class TensorBoardCallback : public Callback {
 public:
  explicit TensorBoardCallback(TensorBoardOptions options) : options_(std::move(options)) {}

  Status OnTrainBegin(const FitPlan& plan, TrainingState& state) override;
  Status OnBatchEnd(const FitPlan& plan, TrainingState& state, const BatchLogs& logs) override;
  Status OnEpochEnd(const FitPlan& plan, TrainingState& state, const EpochLogs& logs) override;
  Status OnTrainEnd(const FitPlan& plan, TrainingState& state) override;

 private:
  TensorBoardOptions options_;
  std::unique_ptr<EventFileWriter> train_;
  std::unique_ptr<EventFileWriter> validation_;
};

}  // namespace cohort::train
