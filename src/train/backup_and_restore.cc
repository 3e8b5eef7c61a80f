#include "train/backup_and_restore.h"

#include <cstdio>
#include <filesystem>
#include <set>
#include <system_error>
#include <vector>

#include "base/checksum.h"
#include "base/file.h"
#include "base/object_url.h"
#include "base/storage.h"
#include "train/checkpoint_manifest.h"
#include "train/checkpoint_state.h"
#include "train/worker_dirs.h"

namespace cohort::train {
namespace {

namespace fs = std::filesystem;

std::string CheckpointName(int64_t number) { return "ckpt-" + std::to_string(number); }
std::string CheckpointFile(const std::string& name) { return name + ".pt"; }

// The number in "ckpt-<n>", or 0 when the name has another form.
int64_t CheckpointNumber(const std::string& name) {
  const std::string prefix = "ckpt-";
  if (name.rfind(prefix, 0) != 0) return 0;
  try {
    return std::stoll(name.substr(prefix.size()));
  } catch (...) {
    return 0;
  }
}

// The run named on the marker's first line ("run <identity>"), or "" when it has no such line.
std::string MarkerRun(const std::string& text) {
  const std::string prefix = "run ";
  if (text.rfind(prefix, 0) != 0) return "";
  const size_t end = text.find('\n');
  return text.substr(prefix.size(),
                     end == std::string::npos ? std::string::npos : end - prefix.size());
}

// The numbers n of the backups `dir` holds or its state file names: every ckpt-<n>.pt and
// ckpt-<n>.manifest.json, newest first. A backup whose file is gone but whose name the state file
// still lists is among them, so that restoring says what became of it.
std::vector<int64_t> BackupNumbers(const std::string& dir) {
  std::set<int64_t> numbers;
  std::error_code error;
  for (const auto& entry : fs::directory_iterator(dir, error)) {
    std::string file = entry.path().filename().string();
    for (const std::string suffix : {".pt", ".manifest.json"}) {
      if (file.size() > suffix.size() && file.ends_with(suffix)) {
        const int64_t number = CheckpointNumber(file.substr(0, file.size() - suffix.size()));
        if (number > 0) numbers.insert(number);
      }
    }
  }
  if (auto listed = ReadCheckpointState(dir); listed.ok()) {
    for (const std::string& name : *listed) {
      if (const int64_t number = CheckpointNumber(name); number > 0) numbers.insert(number);
    }
  }
  return std::vector<int64_t>(numbers.rbegin(), numbers.rend());
}

// Removes the files of every backup of `dir` whose number is not in [newest - keep + 1, newest]:
// the older ones past max_to_keep, and any newer one left by a timeline that was rolled back.
void RemoveBackupsOutside(const std::string& dir, int64_t newest, int keep) {
  for (int64_t number : BackupNumbers(dir)) {
    if (number <= newest && number > newest - keep) continue;
    const std::string name = CheckpointName(number);
    std::error_code error;
    fs::remove(fs::path(dir) / CheckpointManifestFile(name), error);
    fs::remove(fs::path(dir) / CheckpointFile(name), error);
  }
}

// The files of backups (ckpt-<n>.pt, ckpt-<n>.manifest.json) and the state file: what the
// staging copy mirrors.
bool IsBackupFile(const std::string& file) {
  if (file == kCheckpointStateFile) return true;
  for (const std::string suffix : {".pt", ".manifest.json"}) {
    if (file.size() > suffix.size() && file.ends_with(suffix) &&
        CheckpointNumber(file.substr(0, file.size() - suffix.size())) > 0) {
      return true;
    }
  }
  return false;
}

// One committed backup on its way to the bucket: its files' bytes, copied when it was committed,
// and what the upload needs to know, all owned, since it runs on the upload thread.
struct BackupUpload {
  Storage* storage = nullptr;
  std::string remote_chief_dir;
  std::string name;
  int64_t number = 0;
  int backups_to_keep = 1;
  // (file name, bytes) in the order that keeps the bucket crash-safe: the checkpoint, its
  // manifest, the state file.
  std::vector<std::pair<std::string, std::string>> files;
};

// Writes the backup's files to the bucket in order, then deletes the bucket's backups outside the
// kept window (manifests first, so that an interrupted deletion never leaves a manifest without
// its checkpoint). Older backups go only now that this one is committed in the bucket.
Status UploadBackupFiles(const BackupUpload& upload) {
  for (const auto& [file, bytes] : upload.files) {
    COHORT_RETURN_IF_ERROR(
        upload.storage->WriteFileAtomically(JoinStoragePath(upload.remote_chief_dir, file), bytes)
            .WithContext("BackupAndRestore: " + upload.name + " not uploaded"));
  }
  StatusOr<std::vector<StorageEntry>> listing =
      upload.storage->ListDirectory(upload.remote_chief_dir);
  if (!listing.ok()) return listing.status().WithContext("BackupAndRestore");
  std::vector<std::string> manifests, checkpoints;
  for (const StorageEntry& entry : *listing) {
    for (const std::string suffix : {".pt", ".manifest.json"}) {
      if (entry.name.size() <= suffix.size() || !entry.name.ends_with(suffix)) continue;
      const int64_t number =
          CheckpointNumber(entry.name.substr(0, entry.name.size() - suffix.size()));
      if (number <= 0 ||
          (number <= upload.number && number > upload.number - upload.backups_to_keep)) {
        continue;
      }
      (suffix == ".pt" ? checkpoints : manifests).push_back(entry.name);
    }
  }
  for (const std::vector<std::string>* files : {&manifests, &checkpoints}) {
    for (const std::string& file : *files) {
      COHORT_RETURN_IF_ERROR(
          upload.storage->RemoveFile(JoinStoragePath(upload.remote_chief_dir, file))
              .WithContext("BackupAndRestore"));
    }
  }
  return Status::OK();
}

}  // namespace

BackupAndRestore::BackupAndRestore(BackupOptions options) : options_(std::move(options)) {
  options_.backups_to_keep = std::max(1, options_.backups_to_keep);
  if (IsStorageUrl(options_.backup_dir)) {
    remote_dir_ = options_.backup_dir;
    while (remote_dir_.ends_with('/')) remote_dir_.pop_back();
    std::error_code error;
    fs::path temporary = fs::temp_directory_path(error);
    if (error) temporary = "/tmp";
    options_.backup_dir =
        (temporary / ("cohort-backup-" + Sha256Hex(remote_dir_).substr(0, 16))).string();
    uploads_ = std::make_unique<UploadQueue>("BackupAndRestore", options_.upload_wait_timeout);
  }
}

BackupAndRestore::~BackupAndRestore() = default;

StatusOr<Storage*> BackupAndRestore::RemoteStorage() const {
  if (options_.remote_storage != nullptr) return options_.remote_storage;
  return StorageFor(remote_dir_);
}

Status BackupAndRestore::WaitForUploads() {
  if (!uploads_) return Status::OK();
  if (uploads_->Busy()) {
    std::printf("BackupAndRestore: waiting for the backup upload to %s to finish\n",
                RemoteChiefDir().c_str());
    std::fflush(stdout);
  }
  return uploads_->Drain(options_.upload_wait_timeout);
}

std::string BackupAndRestore::RemoteChiefDir() const {
  return JoinStoragePath(remote_dir_, "chief");
}

Status BackupAndRestore::FetchRemoteBackups() {
  std::error_code error;
  fs::remove_all(ChiefDir(), error);
  if (error) return Status::IOError("cannot empty " + ChiefDir() + ": " + error.message());
  COHORT_RETURN_IF_ERROR(MakeDirectories(ChiefDir()));
  StatusOr<Storage*> storage = RemoteStorage();
  if (!storage.ok()) return storage.status().WithContext("BackupAndRestore");
  StatusOr<std::vector<StorageEntry>> listing = (*storage)->ListDirectory(RemoteChiefDir());
  if (!listing.ok()) return listing.status().WithContext("BackupAndRestore");
  int fetched = 0;
  for (const StorageEntry& entry : *listing) {
    if (entry.is_directory || !IsBackupFile(entry.name)) continue;
    StatusOr<std::string> bytes =
        (*storage)->ReadFile(JoinStoragePath(RemoteChiefDir(), entry.name), kDefaultMaxFileBytes);
    if (!bytes.ok()) return bytes.status().WithContext("BackupAndRestore");
    COHORT_RETURN_IF_ERROR(WriteFileAtomically(fs::path(ChiefDir()) / entry.name, *bytes));
    ++fetched;
  }
  std::printf("BackupAndRestore: fetched %d file(s) from %s\n", fetched, RemoteChiefDir().c_str());
  std::fflush(stdout);
  return Status::OK();
}

Status BackupAndRestore::QueueUpload(const std::string& name) {
  // An earlier upload's failure stops training here rather than passing unnoticed.
  COHORT_RETURN_IF_ERROR(uploads_->TakeError());
  StatusOr<Storage*> storage = RemoteStorage();
  if (!storage.ok()) return storage.status().WithContext("BackupAndRestore");
  BackupUpload upload;
  upload.storage = *storage;
  upload.remote_chief_dir = RemoteChiefDir();
  upload.name = name;
  upload.number = CheckpointNumber(name);
  upload.backups_to_keep = options_.backups_to_keep;
  // The bytes are copied now (the step's only cost): the staging copy's files change with the
  // next backup, which may delete this one's.
  const fs::path local = ChiefDir();
  for (const std::string& file :
       {CheckpointFile(name), CheckpointManifestFile(name), std::string(kCheckpointStateFile)}) {
    StatusOr<std::string> bytes = ReadWholeFile(local / file);
    if (!bytes.ok()) return bytes.status().WithContext("BackupAndRestore");
    upload.files.emplace_back(file, *std::move(bytes));
  }
  UploadQueue::Upload queued;
  queued.description = name + " to " + RemoteChiefDir();
  queued.run = [upload = std::move(upload)] { return UploadBackupFiles(upload); };
  const std::string superseded = uploads_->Submit(std::move(queued));
  if (!superseded.empty()) {
    std::printf(
        "BackupAndRestore: the upload of %s is superseded by %s, committed while it "
        "waited\n",
        superseded.c_str(), name.c_str());
    std::fflush(stdout);
  }
  return Status::OK();
}

std::string BackupAndRestore::ChiefDir() const {
  return (fs::path(options_.backup_dir) / "chief").string();
}

StatusOr<std::optional<std::string>> BackupAndRestore::CompletedRun(
    const std::string& backup_dir, const std::string& run_identity) {
  if (run_identity.empty()) return std::optional<std::string>();
  StatusOr<std::string> text =
      ReadStorageFile(JoinStoragePath(backup_dir, kTrainingCompleteFile), size_t{1} << 20);
  if (text.status().code() == Status::Code::kNotFound) return std::optional<std::string>();
  if (!text.ok()) return text.status();
  if (MarkerRun(*text) != run_identity) return std::optional<std::string>();
  const size_t end = text->find('\n');
  return std::optional<std::string>(end == std::string::npos ? "" : text->substr(end + 1));
}

Status BackupAndRestore::MarkComplete(const FitPlan& plan, const std::string& summary) {
  if (!plan.is_chief || options_.run_identity.empty()) return Status::OK();
  if (!remote_dir_.empty()) {
    // The marker says the outputs are complete: the last backup is in the bucket first.
    COHORT_RETURN_IF_ERROR(WaitForUploads());
    StatusOr<Storage*> storage = RemoteStorage();
    if (!storage.ok()) return storage.status().WithContext("BackupAndRestore");
    return (*storage)->WriteFileAtomically(JoinStoragePath(remote_dir_, kTrainingCompleteFile),
                                           "run " + options_.run_identity + "\n" + summary);
  }
  COHORT_RETURN_IF_ERROR(MakeDirectories(options_.backup_dir));
  return WriteFileAtomically(fs::path(options_.backup_dir) / kTrainingCompleteFile,
                             "run " + options_.run_identity + "\n" + summary);
}

Status BackupAndRestore::DeleteBackup(const FitPlan& plan) {
  if (!options_.delete_on_success || !plan.is_chief) return Status::OK();
  std::error_code error;
  if (!remote_dir_.empty()) {
    // No upload may land after the deletion: they finish (or fail) first.
    COHORT_RETURN_IF_ERROR(WaitForUploads());
    StatusOr<Storage*> storage = RemoteStorage();
    if (!storage.ok()) return storage.status().WithContext("BackupAndRestore");
    COHORT_RETURN_IF_ERROR(
        (*storage)->RemoveFile(JoinStoragePath(RemoteChiefDir(), kCheckpointStateFile)));
    StatusOr<std::vector<StorageEntry>> listing = (*storage)->ListDirectory(RemoteChiefDir());
    if (!listing.ok()) return listing.status().WithContext("BackupAndRestore");
    for (const bool manifests : {true, false}) {
      for (const StorageEntry& entry : *listing) {
        if (entry.is_directory || entry.name.ends_with(".manifest.json") != manifests) continue;
        COHORT_RETURN_IF_ERROR(
            (*storage)->RemoveFile(JoinStoragePath(RemoteChiefDir(), entry.name)));
      }
    }
    fs::remove_all(options_.backup_dir, error);  // the staging copy
    return Status::OK();
  }
  fs::remove(fs::path(ChiefDir()) / kCheckpointStateFile, error);
  if (!error) fs::remove_all(ChiefDir(), error);
  if (error) return Status::IOError("cannot delete backup " + ChiefDir() + ": " + error.message());
  COHORT_RETURN_IF_ERROR(RemoveStaleFiles());
  // Leave the user's directory itself only if it is now empty.
  fs::remove(options_.backup_dir, error);
  return Status::OK();
}

Status BackupAndRestore::RemoveStaleFiles() const {
  for (const std::string& dir : {options_.backup_dir, ChiefDir()}) {
    StatusOr<int> stale = RemoveStaleTemporaryFiles(dir);
    if (!stale.ok()) return stale.status().WithContext("BackupAndRestore");
  }
  return Status::OK();
}

Status BackupAndRestore::RestoreState(const FitPlan& plan, TrainingState& state) {
  if (!plan.is_chief) return Status::OK();  // the chief's state is broadcast to us
  COHORT_RETURN_IF_ERROR(RemoveStaleFiles());
  // An earlier run's marker says nothing about this run, which is training now.
  const std::string target = remote_dir_.empty() ? options_.backup_dir : remote_dir_;
  const std::string marker = JoinStoragePath(target, kTrainingCompleteFile);
  StatusOr<Storage*> storage = remote_dir_.empty() ? StorageFor(target) : RemoteStorage();
  if (!storage.ok()) return storage.status().WithContext("BackupAndRestore");
  StatusOr<bool> marked = (*storage)->FileExists(marker);
  if (!marked.ok()) return marked.status().WithContext("BackupAndRestore");
  if (*marked) {
    StatusOr<std::string> text = (*storage)->ReadFile(marker, size_t{1} << 20);
    if (text.ok() && (options_.run_identity.empty() || MarkerRun(*text) != options_.run_identity)) {
      IgnoreError((*storage)->RemoveFile(marker),
                  "another run's marker: left, it names another run");
    }
  }
  if (!remote_dir_.empty()) COHORT_RETURN_IF_ERROR(FetchRemoteBackups());
  StatusOr<std::string> restored = RestoreNewestGood(plan, state);
  if (!restored.ok()) return restored.status();
  return Status::OK();
}

StatusOr<std::string> BackupAndRestore::RestoreNewestGood(const FitPlan& plan,
                                                          TrainingState& state) {
  const std::string dir = ChiefDir();
  std::vector<std::string> skipped;
  for (int64_t number : BackupNumbers(dir)) {
    const std::string name = CheckpointName(number);
    const std::string path = (fs::path(dir) / CheckpointFile(name)).string();
    // Verified bytes only: a backup is loaded whole from memory once its manifest vouches for it.
    CheckpointManifest manifest;
    StatusOr<std::string> bytes = ReadVerifiedCheckpoint(dir, name, &manifest);
    Status loaded = bytes.ok() ? state.Load(*bytes, path) : bytes.status();
    if (!loaded.ok()) {
      skipped.push_back(name + ": " + loaded.message());
      std::printf("BackupAndRestore: skipped %s: %s\n", name.c_str(), loaded.message().c_str());
      std::fflush(stdout);
      continue;
    }
    last_number_ = number;
    last_backup_step_ = state.position().GlobalStep(plan.steps_per_epoch);
    std::printf("BackupAndRestore: restored %s (global step %lld)%s\n", path.c_str(),
                static_cast<long long>(last_backup_step_),
                skipped.empty() ? ""
                                : (", after skipping " + std::to_string(skipped.size()) +
                                   " newer backup(s) above")
                                      .c_str());
    std::fflush(stdout);
    return path;
  }
  if (skipped.empty()) return std::string();  // nothing backed up yet: a fresh start
  std::string message = "BackupAndRestore: no backup in " + dir + " can be restored (" +
                        std::to_string(skipped.size()) + " tried, newest first):";
  for (const std::string& why : skipped) message += "\n  " + why;
  message += "\nremove " + options_.backup_dir + " to train from the start";
  return Status::FailedPrecondition(message);
}

Status BackupAndRestore::Backup(const FitPlan& plan, TrainingState& state) {
  const int64_t step = state.position().GlobalStep(plan.steps_per_epoch);
  if (step == last_backup_step_) return Status::OK();
  last_backup_step_ = step;
  // Only the chief's backup is ever read; another worker's copy would only cost disk space.
  if (!plan.is_chief) return Status::OK();
  const std::string dir = ChiefDir();
  COHORT_RETURN_IF_ERROR(MakeDirectories(dir));
  const std::string name = CheckpointName(++last_number_);
  const std::string file = CheckpointFile(name);
  StatusOr<FileChecksum> saved = state.Save((fs::path(dir) / file).string());
  Status written =
      saved.ok() ? WriteCheckpointManifest(dir, {name, step, {*saved}}) : saved.status();
  if (!written.ok()) {
    // The state file still names the last good backups; the next attempt reuses the number.
    --last_number_;
    last_backup_step_ = -1;
    const std::string kept =
        last_number_ > 0 ? CheckpointName(last_number_) + " stays the backup" : "no backup yet";
    return written.WithContext("BackupAndRestore: " + name + " not written, " + kept);
  }
  // The state file lists the kept backups, oldest first, once the new one is whole.
  std::vector<std::string> kept;
  for (int64_t number = std::max<int64_t>(1, last_number_ - options_.backups_to_keep + 1);
       number <= last_number_; ++number) {
    if (fs::exists(fs::path(dir) / CheckpointManifestFile(CheckpointName(number)))) {
      kept.push_back(CheckpointName(number));
    }
  }
  COHORT_RETURN_IF_ERROR(WriteCheckpointState(dir, kept));
  RemoveBackupsOutside(dir, last_number_, options_.backups_to_keep);
  if (!remote_dir_.empty()) return QueueUpload(name);
  return Status::OK();
}

Status BackupAndRestore::OnBatchEnd(const FitPlan& plan, TrainingState& state,
                                    const BatchLogs& logs) {
  if (options_.save_every_steps <= 0 || logs.global_step % options_.save_every_steps != 0) {
    return Status::OK();
  }
  return Backup(plan, state);
}

Status BackupAndRestore::OnEpochEnd(const FitPlan& plan, TrainingState& state,
                                    const EpochLogs& logs) {
  // Force a fresh backup even if a step backup was taken at this global step: that one still
  // had the epoch's end (evaluation, callbacks) ahead of it, this one does not.
  last_backup_step_ = -1;
  return Backup(plan, state);
}

}  // namespace cohort::train
