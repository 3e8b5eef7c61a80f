// cohort/callbacks.h: what Fit (fit.h) does besides training, as Keras callbacks.
//
//   cohort::FitOptions options;
//   options.callbacks = {cohort::BackupAndRestore("/tmp/my-job/backup"),
//                        cohort::ModelCheckpoint("/tmp/my-job/checkpoints"),
//                        cohort::TensorBoard("/tmp/my-job/logs"), cohort::Progress()};
//
// Every callback runs on every worker; only the chief writes files (the others write nothing, or
// into temporary directories that are removed), so the directories may be shared or not.
// BackupAndRestore's and TensorBoard's directories may also be object storage prefixes
// (s3://bucket/dir, gs://bucket/dir; cohort/storage.h, docs/storage.md): backups are staged
// locally and mirrored, each committed by its manifest; TensorBoard runs become series of closed
// event files. ModelCheckpoint takes a local directory only.
//   BackupAndRestore  the whole training state (weights, buffers, optimizer state, random state,
//                     position) every epoch end and every `save_every_steps` steps, in
//                     <dir>/chief. A task restarted after a failure (a killed worker: every task
//                     of the group exits and is restarted) resumes from the newest backup: the
//                     chief loads it and broadcasts it to the others. The backup is deleted once
//                     training, evaluation and saving the model are complete, and a restarted
//                     task of a run that had completed does not train again. The newest
//                     `backups_to_keep` backups are kept, each with its size and SHA-256 in a
//                     manifest beside it; a restart restores the newest whose checksums verify,
//                     says which it skipped and why, and fails (permanently) naming them all only
//                     when none does.
//   ModelCheckpoint   the weights after every epoch (<dir>/ckpt-<epoch>.pt, libtorch's format,
//                     readable with torch::load into the module; its size and SHA-256 in
//                     ckpt-<epoch>.manifest.json), or only when val_accuracy
//                     improves (save_best_only; val_loss for a model without an "accuracy"
//                     metric). Kept for people, never deleted.
//   TensorBoard       event files in <log_dir>/train and <log_dir>/validation: each epoch's loss,
//                     metrics, learning rate and throughput, and the batch loss every
//                     `update_every_steps` steps.
//   Progress          a Keras-style progress bar on a terminal, one line per epoch otherwise.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

namespace cohort {

namespace internal {
class CallbackAccess;
}

// A callback handed to FitOptions::callbacks. Copies share one callback.
class Callback {
 public:
  ~Callback();
  Callback(const Callback&);
  Callback& operator=(const Callback&);
  struct Impl;  // Cohort's own

 protected:
  explicit Callback(std::shared_ptr<Impl> impl);

 private:
  friend class internal::CallbackAccess;
  std::shared_ptr<Impl> impl_;
};

class BackupAndRestore : public Callback {
 public:
  // Backs up at every epoch end, and every `save_every_steps` global steps when positive; keeps
  // the newest `backups_to_keep` (at least 1) to fall back on.
  explicit BackupAndRestore(const std::string& backup_dir, int64_t save_every_steps = 0,
                            int backups_to_keep = 2);
};

class ModelCheckpoint : public Callback {
 public:
  explicit ModelCheckpoint(const std::string& dir, bool save_best_only = false);
};

class TensorBoard : public Callback {
 public:
  explicit TensorBoard(const std::string& log_dir, int64_t update_every_steps = 0);
};

class Progress : public Callback {
 public:
  // To standard output: a bar on a terminal, one line per epoch in a log.
  Progress();
};

}  // namespace cohort
