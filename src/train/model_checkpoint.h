// ModelCheckpoint: keeps the model's weights after every epoch, or after every improvement.
//
// Keras's ModelCheckpoint(save_weights_only=True) with filepath <dir>/ckpt-{epoch}: after epoch e
// (counting from 1) the weights go to <dir>/ckpt-<e>.pt in libtorch's format, then their manifest
// ckpt-<e>.manifest.json (size and SHA-256: checkpoint_manifest.h, for whoever reads them back),
// and the TF-style `checkpoint` file lists every kept file, newest last. With save_best_only, an
// epoch is saved only when val_accuracy beats every earlier epoch's (for a model without an
// "accuracy" metric, when val_loss is below every earlier epoch's). Unlike BackupAndRestore this is
// for people (pick an epoch's weights later), not for fault tolerance, and it is never deleted.
// Only the chief writes: Keras has the other workers write a copy into <dir>/workertemp_<index> and
// remove it, which costs a full copy of the weights per worker for nothing (worker_dirs.h). On
// start the chief removes the temporary files a killed writer left in <dir>.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "train/callback.h"

namespace cohort::train {

struct ModelCheckpointOptions {
  std::string dir;
  bool save_best_only = false;
};

class ModelCheckpoint : public Callback {
 public:
  explicit ModelCheckpoint(ModelCheckpointOptions options) : options_(std::move(options)) {}

  Status RestoreState(const FitPlan& plan, TrainingState& state) override;
  Status OnEpochEnd(const FitPlan& plan, TrainingState& state, const EpochLogs& logs) override;

 private:
  ModelCheckpointOptions options_;
  std::optional<double> best_score_;  // the best epoch's, higher is better
  std::vector<std::string> kept_;     // names written, oldest first
};

}  // namespace cohort::train
