#include "train/backup_and_restore.h"

#include <cstdio>
#include <filesystem>
#include <system_error>

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

// Removes ckpt-*.pt files of `dir` other than `keep` (max_to_keep = 1).
void RemoveOlderCheckpoints(const std::string& dir, const std::string& keep) {
  std::error_code error;
  for (const auto& entry : fs::directory_iterator(dir, error)) {
    const std::string file = entry.path().filename().string();
    if (file.rfind("ckpt-", 0) == 0 && file != keep) fs::remove(entry.path(), error);
  }
}

}  // namespace

std::string BackupAndRestore::ChiefDir() const {
  return (fs::path(options_.backup_dir) / "chief").string();
}

Status BackupAndRestore::RestoreState(const FitPlan& plan, TrainingState& state) {
  if (!plan.is_chief) return Status::OK();  // the chief's state is broadcast to us
  auto latest = ReadLatestCheckpoint(ChiefDir());
  if (!latest.ok()) return latest.status().WithContext("BackupAndRestore");
  if (!latest->has_value()) return Status::OK();
  const std::string name = **latest;
  const std::string path = (fs::path(ChiefDir()) / CheckpointFile(name)).string();
  COHORT_RETURN_IF_ERROR(state.Load(path).WithContext("BackupAndRestore: cannot restore " + path));
  last_number_ = CheckpointNumber(name);
  last_backup_step_ = state.position().GlobalStep(plan.steps_per_epoch);
  std::printf("BackupAndRestore: restored %s\n", path.c_str());
  std::fflush(stdout);
  return Status::OK();
}

Status BackupAndRestore::Backup(const FitPlan& plan, TrainingState& state) {
  const int64_t step = state.position().GlobalStep(plan.steps_per_epoch);
  if (step == last_backup_step_) return Status::OK();
  const std::string dir = WriteDirPath(plan.is_chief ? ChiefDir() : options_.backup_dir, plan);
  COHORT_RETURN_IF_ERROR(MakeDirectories(dir));
  const std::string name = CheckpointName(++last_number_);
  const std::string file = CheckpointFile(name);
  COHORT_RETURN_IF_ERROR(state.Save((fs::path(dir) / file).string()));
  COHORT_RETURN_IF_ERROR(WriteCheckpointState(dir, {name}));
  last_backup_step_ = step;
  if (!plan.is_chief) return RemoveTempWriteDir(options_.backup_dir, plan);
  RemoveOlderCheckpoints(dir, file);
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

Status BackupAndRestore::OnTrainEnd(const FitPlan& plan, TrainingState& state) {
  if (!options_.delete_on_success || !plan.is_chief) return Status::OK();
  std::error_code error;
  fs::remove_all(ChiefDir(), error);
  if (error) return Status::IOError("cannot delete backup " + ChiefDir() + ": " + error.message());
  // Leave the user's directory itself only if it is now empty.
  fs::remove(options_.backup_dir, error);
  return Status::OK();
}

}  // namespace cohort::train
