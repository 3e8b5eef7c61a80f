// BackupAndRestore: the callback that lets a restarted job carry on where it stopped.
//
// Keras's semantics (tf.keras.callbacks.BackupAndRestore, as TensorFlow documents it and its
// keras/callbacks.py implements it), with the deliberate differences noted below:
//   - A backup holds the model, the optimizer state, the random-generator state and the training
//     position. It is taken at every epoch end and, with save_every_steps = N > 0, also every N
//     global steps.
//   - Layout: <backup_dir>/chief/ckpt-<n>.pt, each with its manifest ckpt-<n>.manifest.json
//     (checkpoint_manifest.h: the file's size and SHA-256, written after it), plus a TF-style
//     `checkpoint` state file listing the kept backups. The last `backups_to_keep` (default 2)
//     are kept (Keras keeps one).
//   - On start, the chief loads the newest backup whose checksums verify and that loads, and
//     training resumes at its epoch and step: the next step after the last one backed up. Work
//     after the backup is redone. Each backup passed over is printed with the reason (a cut-short
//     backup without a manifest, a missing file, "checksum mismatch: expected ..., found ..."), and
//     only when backups exist and none of them can be restored does the chief fail, with
//     FailedPrecondition naming each one and why: a permanent failure (cohort-train exits 1), since
//     a restart would find the same files. Nothing is loaded before its bytes are verified.
//   - When the job has finished, the backup is deleted (delete_on_success), so a finished job
//     run again trains from scratch.
// The differences:
//   - In TensorFlow every worker reads <backup_dir>/chief itself. Here only the chief reads it;
//     the fit loop then broadcasts the chief's whole state to the others. Workers therefore cannot
//     disagree about which backup they resumed from (a race with a chief that is still writing
//     one), and the backup directory need not be shared with the other workers' machines.
//   - Non-chief workers write nothing: Keras has them write the same backup into
//     <backup_dir>/workertemp_<index> and delete it at once, which costs a full copy of every
//     weight per worker for nothing (worker_dirs.h).
//   - Keras deletes the backup at the end of fit, before the program saves its model: a task
//     killed after that trains again from the start. Here the program ends a job in this order,
//     so that a task killed at any point resumes without training again:
//
//       trainer->Fit({&backup, ...});           // the last backup: every epoch done
//       ... evaluate, save the model (complete: weights, then manifest) ...
//       backup.MarkComplete(plan, summary);     // chief: <backup_dir>/training_complete
//       strategy->Barrier();                    // every worker is done
//       backup.DeleteBackup(plan);              // chief: <backup_dir>/chief goes
//
//     A restarted task of the same run (run_identity.h) that finds the marker has nothing left to
//     do (CompletedRun); a restart before it resumes from the last backup, past every epoch, and
//     only evaluates and saves again. The marker names the run, so a later run of the job with the
//     same directory trains afresh; in open mode (no run identity) no marker is written.
//   - Temporary files of a chief killed mid-write are removed when the next chief starts.
//
// Object storage: backup_dir may be an s3:// or gs:// prefix (base/storage.h). The chief then
// works in a local staging copy (<tmp>/cohort-backup-<hash of the URL>) exactly as above, and
// mirrors each committed backup to <backup_dir>/chief/ in the order that keeps it crash-safe: the
// checkpoint, then its manifest, then the `checkpoint` state file; older backups are deleted from
// the bucket only after that, manifest first. On start the chief empties its staging copy, fetches
// what the bucket holds under <backup_dir>/chief/, and restores from it as from a local directory:
// a checkpoint whose manifest is missing (an upload cut short) or whose bytes do not match it is
// passed over. The completion marker is written to and read from the bucket; DeleteBackup deletes
// the bucket's backup objects (the state file first) and the staging copy.
//
// Uploads overlap training (upload_queue.h): once a backup is committed in the staging copy, the
// step copies its three files into memory and hands them to a background thread, so the step
// never waits for the network. One upload runs at a time, in order; a backup committed while
// another waits its turn supersedes the waiting one (printed), so a slow server makes the bucket
// skip backups rather than fall ever further behind. An upload's failure fails the next backup
// (or MarkComplete). MarkComplete and DeleteBackup first wait for the uploads, at most
// upload_wait_timeout, so the marker is written only after the last backup is in the bucket; the
// destructor waits the same bound and says what it waits for.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "base/storage.h"
#include "train/callback.h"
#include "train/upload_queue.h"

namespace cohort::train {

// <backup_dir>/training_complete: "run <identity>" then the program's summary lines.
inline constexpr char kTrainingCompleteFile[] = "training_complete";

struct BackupOptions {
  std::string backup_dir;
  // 0: back up at epoch ends only.
  int64_t save_every_steps = 0;
  bool delete_on_success = true;
  // RunIdentity of this run; "" (open mode) writes no completion marker.
  std::string run_identity;
  // How many of the newest backups to keep (at least 1), so that one found corrupt or cut short
  // on restore leaves an older one to fall back to.
  int backups_to_keep = 2;
  // Object storage: how long MarkComplete, DeleteBackup and the destructor wait for the uploads
  // still running or waiting.
  std::chrono::milliseconds upload_wait_timeout{std::chrono::minutes(5)};
  // Object storage: the storage that serves backup_dir's URL; nullptr for the process's own for
  // its scheme (StorageFor). A test passes one that holds uploads back; it must outlive this.
  Storage* remote_storage = nullptr;
};

class BackupAndRestore : public Callback {
 public:
  explicit BackupAndRestore(BackupOptions options);
  // Waits for the uploads still to run (object storage), at most upload_wait_timeout.
  ~BackupAndRestore() override;

  // The chief's backup directory, <backup_dir>/chief (for object storage, the local staging
  // copy's).
  std::string ChiefDir() const;

  // The summary that run `run_identity` recorded in <backup_dir>/training_complete, if that run
  // completed; nullopt when there is no marker, it is another run's, or `run_identity` is "".
  static StatusOr<std::optional<std::string>> CompletedRun(const std::string& backup_dir,
                                                           const std::string& run_identity);

  // Chief only (others return OK): records that this run's outputs are complete, with `summary`
  // (what a restarted task prints), atomically.
  Status MarkComplete(const FitPlan& plan, const std::string& summary);

  // Chief only, and only with delete_on_success: deletes the backup. Call it once every worker
  // has passed the end barrier. The state file goes first, so an interrupted deletion never
  // leaves a state file that names a deleted backup; the marker of this run stays, temporary
  // files of a killed chief go, and <backup_dir> itself goes when nothing else is left in it.
  Status DeleteBackup(const FitPlan& plan);

  // Chief: removes stale temporary files and another run's marker, then loads the newest backup
  // that verifies (see above).
  Status RestoreState(const FitPlan& plan, TrainingState& state) override;

  // Chief: loads the newest backup whose checksums verify and that loads into `state`, printing
  // each one skipped and why, and returns its path; "" when there is no backup at all. Fails,
  // naming every backup and why, when there are some and none can be restored. RestoreState's
  // work, and the trainer's rollback after a non-finite step (trainer.h).
  StatusOr<std::string> RestoreNewestGood(const FitPlan& plan, TrainingState& state);
  Status OnBatchEnd(const FitPlan& plan, TrainingState& state, const BatchLogs& logs) override;
  Status OnEpochEnd(const FitPlan& plan, TrainingState& state, const EpochLogs& logs) override;

 private:
  Status Backup(const FitPlan& plan, TrainingState& state);
  // Removes the temporary files a killed chief left in <backup_dir> (the marker's) and in
  // <backup_dir>/chief (a backup's).
  Status RemoveStaleFiles() const;
  // Object storage only: the bucket's backup objects, <remote_dir_>/chief.
  std::string RemoteChiefDir() const;
  // Object storage only: replaces the staging copy with what the bucket holds.
  Status FetchRemoteBackups();
  // Object storage only: copies backup `name`, just committed locally, into memory and queues its
  // upload (UploadBackupFiles); an earlier upload's error first.
  Status QueueUpload(const std::string& name);
  // Object storage only: the storage of remote_dir_.
  StatusOr<Storage*> RemoteStorage() const;
  // Object storage only: waits for the queued uploads (upload_wait_timeout); their error if any.
  Status WaitForUploads();

  BackupOptions options_;
  // The s3:// or gs:// prefix the user named, with options_.backup_dir the staging copy; "" for a
  // local backup_dir.
  std::string remote_dir_;
  // Number of the last backup written or restored (ckpt-<n>).
  int64_t last_number_ = 0;
  // Global step of the last backup, so that a step backup and the epoch-end backup at the same
  // step are not both written.
  int64_t last_backup_step_ = -1;
  // Object storage only: the background uploads of committed backups.
  std::unique_ptr<UploadQueue> uploads_;
};

}  // namespace cohort::train
