// Callback: what the fit loop tells the outside world, and the training state it lets it save.
//
// As in Keras, checkpointing, summaries and progress are callbacks of one fit loop rather than
// parts of it. Every callback runs on every worker (TensorFlow's _chief_worker_only = False): a
// callback that writes files asks the plan whether it is the chief and writes to a temporary
// directory otherwise (worker_dirs.h). A callback that returns an error stops training; Fit
// returns that error.
//
// Order of calls:
//   RestoreState        (all callbacks; BackupAndRestore may load a saved state)
//   -- the chief's state is broadcast to every worker --
//   OnTrainBegin
//   for each epoch from the resume point:
//     OnEpochBegin, OnBatchEnd per step, OnEpochEnd
//   OnTrainEnd          (only after the last epoch: a failed run leaves its backups behind)
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>

#include "base/checksum.h"
#include "base/status.h"

namespace cohort::train {

// The fixed facts of a training run, the same on every worker except `rank`, `is_chief` and
// `task_index`.
struct FitPlan {
  std::string model_name;
  int epochs = 1;
  int64_t steps_per_epoch = 0;
  int64_t per_worker_batch = 64;
  int num_workers = 1;
  int rank = 0;
  bool is_chief = true;
  int task_index = 0;
  uint64_t seed = 0;
  std::string optimizer;
  double learning_rate = 0;

  int64_t global_batch() const { return per_worker_batch * num_workers; }
  int64_t total_steps() const { return epochs * steps_per_epoch; }
};

// Where training is. Epochs count from 0; `step` is the number of steps already done in `epoch`
// (0 .. steps_per_epoch). Position {e, steps_per_epoch} means epoch e's steps are done but its
// end (evaluation, OnEpochEnd) is not.
struct TrainingPosition {
  int epoch = 0;
  int64_t step = 0;

  // Optimizer steps taken since the start of training.
  int64_t GlobalStep(int64_t steps_per_epoch) const { return epoch * steps_per_epoch + step; }
  bool AtStart() const { return epoch == 0 && step == 0; }
  bool operator==(const TrainingPosition&) const = default;
};

// What OnBatchEnd reports: this worker's running averages over the epoch so far.
struct BatchLogs {
  TrainingPosition position;  // after the step
  int64_t global_step = 0;    // steps done since training started, after this one
  double loss = 0;
  std::map<std::string, double> metrics;  // the model's named metrics ("accuracy"), by name
  double samples_per_second = 0;          // global samples (all workers) per second this epoch
  double step_seconds = 0;  // wall time of this step: waiting for the batch, computing, summing
  // What this step waited, after its backward pass, for the all-reduce of its gradients to
  // finish (0 with one worker): the communication that computation did not hide.
  double allreduce_wait_seconds = 0;
};

// What OnEpochEnd reports: metrics over all workers.
struct EpochLogs {
  int epoch = 0;
  int64_t global_step = 0;  // steps done since training started
  int64_t steps = 0;        // steps run in this epoch by this process (fewer after a resume)
  double loss = 0;          // training loss, averaged over the samples of the epoch's steps
  std::map<std::string, double> metrics;  // the model's named metrics, averaged likewise
  double val_loss = 0;                    // on the test split, after the epoch
  std::map<std::string, double> val_metrics;
  double learning_rate = 0;
  double samples_per_second = 0;  // global samples per second of training (evaluation excluded)
  double seconds = 0;             // wall time of the epoch, evaluation included
};

// What Trainer::Evaluate and SavedModel::Evaluate return: averages over the evaluated samples.
struct EvaluationResult {
  double loss = 0;
  std::map<std::string, double> metrics;  // by the names the model reports ("accuracy")
  int64_t samples = 0;
};

// The parts of a run a callback can save and load. Implemented by the trainer, so callbacks need
// no libtorch.
class TrainingState {
 public:
  virtual ~TrainingState() = default;
  // Writes model weights, optimizer state, the random-generator state and the position after the
  // last completed step to `path` (one file), atomically: readers see the old file or the new.
  // Returns the file's record (name, size, SHA-256) for the manifest that lists it.
  virtual StatusOr<FileChecksum> Save(const std::string& path) = 0;
  // Loads `bytes`, what Save wrote (read and verified against its manifest by the caller), and
  // moves training to the saved position; `origin` names them in errors. Checks what they hold
  // against this run before changing anything.
  virtual Status Load(std::string_view bytes, const std::string& origin) = 0;
  // Writes the model weights alone, in libtorch's format; returns the file's record.
  virtual StatusOr<FileChecksum> SaveWeights(const std::string& path) = 0;
  virtual TrainingPosition position() const = 0;
};

class Callback {
 public:
  virtual ~Callback() = default;
  virtual Status RestoreState(const FitPlan& plan, TrainingState& state) { return Status::OK(); }
  virtual Status OnTrainBegin(const FitPlan& plan, TrainingState& state) { return Status::OK(); }
  virtual Status OnEpochBegin(const FitPlan& plan, int epoch) { return Status::OK(); }
  virtual Status OnBatchEnd(const FitPlan& plan, TrainingState& state, const BatchLogs& logs) {
    return Status::OK();
  }
  virtual Status OnEpochEnd(const FitPlan& plan, TrainingState& state, const EpochLogs& logs) {
    return Status::OK();
  }
  virtual Status OnTrainEnd(const FitPlan& plan, TrainingState& state) { return Status::OK(); }
};

}  // namespace cohort::train
