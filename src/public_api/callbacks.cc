#include "cohort/callbacks.h"

#include "base/object_url.h"
#include "net/auth.h"
#include "public_api/internal.h"
#include "train/backup_and_restore.h"
#include "train/model_checkpoint.h"
#include "train/progress_callback.h"
#include "train/run_identity.h"
#include "train/tensorboard_callback.h"

namespace cohort {
namespace {

// `settings` (callback left empty) with `callback`.
std::shared_ptr<Callback::Impl> Wrap(std::unique_ptr<train::Callback> callback,
                                     Callback::Impl settings = {}) {
  auto impl = std::make_shared<Callback::Impl>(std::move(settings));
  impl->callback = std::move(callback);
  return impl;
}

}  // namespace

Callback::Callback(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}
Callback::~Callback() = default;
Callback::Callback(const Callback&) = default;
Callback& Callback::operator=(const Callback&) = default;

train::Callback* internal::CallbackAccess::callback(const Callback& callback) {
  return callback.impl_->callback.get();
}

const Callback::Impl& internal::CallbackAccess::impl(const Callback& callback) {
  return *callback.impl_;
}

BackupAndRestore::BackupAndRestore(const std::string& backup_dir, int64_t save_every_steps,
                                   int backups_to_keep)
    : Callback(
          Wrap(std::make_unique<train::BackupAndRestore>(train::BackupOptions{
                   backup_dir, save_every_steps, /*delete_on_success=*/true,
                   train::RunIdentity(net::JobSecret::FromEnvironment()), backups_to_keep}),
               Callback::Impl{.backup_dir = backup_dir, .backup_every_steps = save_every_steps})) {
  if (backup_dir.empty()) ThrowError(Status::InvalidArgument("BackupAndRestore needs a directory"));
  if (backups_to_keep < 1) {
    ThrowError(Status::InvalidArgument("BackupAndRestore keeps at least 1 backup, not " +
                                       std::to_string(backups_to_keep)));
  }
}

ModelCheckpoint::ModelCheckpoint(const std::string& dir, bool save_best_only)
    : Callback(Wrap(std::make_unique<train::ModelCheckpoint>(
                        train::ModelCheckpointOptions{dir, save_best_only}),
                    Callback::Impl{.checkpoint_dir = dir, .save_best_only = save_best_only})) {
  if (dir.empty()) ThrowError(Status::InvalidArgument("ModelCheckpoint needs a directory"));
  if (IsStorageUrl(dir)) {
    ThrowError(Status::InvalidArgument(
        "ModelCheckpoint(\"" + dir +
        "\"): ModelCheckpoint writes a local directory only (BackupAndRestore, TensorBoard and "
        "FitOptions::saved_model_dir take s3:// and gs:// prefixes)"));
  }
}

TensorBoard::TensorBoard(const std::string& log_dir, int64_t update_every_steps)
    : Callback(Wrap(std::make_unique<train::TensorBoardCallback>(
                        train::TensorBoardOptions{log_dir, update_every_steps}),
                    Callback::Impl{.log_dir = log_dir, .update_every_steps = update_every_steps})) {
  if (log_dir.empty()) ThrowError(Status::InvalidArgument("TensorBoard needs a log directory"));
}

Progress::Progress()
    : Callback(Wrap(std::make_unique<train::ProgressCallback>(train::ProgressCallback::ForStdout()),
                    Callback::Impl{.progress = true})) {}

}  // namespace cohort
