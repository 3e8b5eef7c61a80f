// BackupAndRestore: the callback that lets a restarted job carry on where it stopped.
//
// Keras's semantics (tf.keras.callbacks.BackupAndRestore, as TensorFlow documents it and its
// keras/callbacks.py implements it), with one deliberate difference noted below:
//   - A backup holds the model, the optimizer state, the random-generator state and the training
//     position. It is taken at every epoch end and, with save_every_steps = N > 0, also every N
//     global steps.
//   - Layout: <backup_dir>/chief/ckpt-<n>.pt plus a TF-style `checkpoint` state file; only the
//     newest backup is kept (max_to_keep = 1). Non-chief workers write the same backup into
//     <backup_dir>/workertemp_<index> and delete it straight away (worker_dirs.h).
//   - On start, the chief loads the newest backup, if any, and training resumes at the saved epoch
//     and step: the next step after the last one backed up. Work after the backup is redone.
//   - When training completes, the backup is deleted (delete_on_success), so a finished job
//     restarted from scratch trains from scratch.
// The difference: in TensorFlow every worker reads <backup_dir>/chief itself. Here only the chief
// reads it; the fit loop then broadcasts the chief's whole state to the others. Workers therefore
// cannot disagree about which backup they resumed from (a race with a chief that is still writing
// one), and the backup directory need not be shared with the other workers' machines.
#pragma once

#include <cstdint>
#include <string>

#include "train/callback.h"

namespace cohort::train {

struct BackupOptions {
  std::string backup_dir;
  // 0: back up at epoch ends only.
  int64_t save_every_steps = 0;
  bool delete_on_success = true;
};

class BackupAndRestore : public Callback {
 public:
  explicit BackupAndRestore(BackupOptions options) : options_(std::move(options)) {}

  // The chief's backup directory, <backup_dir>/chief.
  std::string ChiefDir() const;

  Status RestoreState(const FitPlan& plan, TrainingState& state) override;
  Status OnBatchEnd(const FitPlan& plan, TrainingState& state, const BatchLogs& logs) override;
  Status OnEpochEnd(const FitPlan& plan, TrainingState& state, const EpochLogs& logs) override;
  Status OnTrainEnd(const FitPlan& plan, TrainingState& state) override;

 private:
  Status Backup(const FitPlan& plan, TrainingState& state);

  BackupOptions options_;
  // Number of the last backup written or restored (ckpt-<n>).
  int64_t last_number_ = 0;
  // Global step of the last backup, so that a step backup and the epoch-end backup at the same
  // step are not both written.
  int64_t last_backup_step_ = -1;
};

}  // namespace cohort::train
