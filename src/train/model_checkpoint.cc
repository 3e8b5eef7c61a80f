#include "train/model_checkpoint.h"

#include <algorithm>
#include <filesystem>

#include "base/file.h"
#include "train/checkpoint_manifest.h"
#include "train/checkpoint_state.h"
#include "train/worker_dirs.h"

namespace cohort::train {
namespace {

// The ckpt-<n> names of `dir`'s .pt files, by n: what an earlier, interrupted run of the same job
// kept, so that the state file still lists it.
std::vector<std::string> ExistingCheckpoints(const std::string& dir) {
  std::vector<std::pair<long long, std::string>> found;
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator(dir, error)) {
    const std::string stem = entry.path().stem().string();
    if (entry.path().extension() != ".pt" || stem.rfind("ckpt-", 0) != 0) continue;
    const std::string digits = stem.substr(5);
    if (digits.empty() || !std::all_of(digits.begin(), digits.end(), ::isdigit)) continue;
    found.emplace_back(std::stoll(digits), stem);
  }
  std::sort(found.begin(), found.end());
  std::vector<std::string> names;
  for (auto& [number, name] : found) names.push_back(std::move(name));
  return names;
}

}  // namespace

Status ModelCheckpoint::RestoreState(const FitPlan& plan, TrainingState&) {
  if (!plan.is_chief) return Status::OK();
  StatusOr<int> stale = RemoveStaleTemporaryFiles(options_.dir);
  return stale.ok() ? Status::OK() : stale.status().WithContext("ModelCheckpoint");
}

Status ModelCheckpoint::OnEpochEnd(const FitPlan& plan, TrainingState& state,
                                   const EpochLogs& logs) {
  // Higher is better: val_accuracy when the model reports accuracy, else the negated val_loss.
  const auto accuracy = logs.val_metrics.find("accuracy");
  const double score = accuracy != logs.val_metrics.end() ? accuracy->second : -logs.val_loss;
  if (options_.save_best_only && best_score_ && score <= *best_score_) return Status::OK();
  best_score_ = best_score_ ? std::max(*best_score_, score) : score;

  if (!plan.is_chief) return Status::OK();  // another worker's copy would only cost disk space
  const std::string& dir = options_.dir;
  COHORT_RETURN_IF_ERROR(MakeDirectories(dir));
  const std::string name = "ckpt-" + std::to_string(logs.epoch + 1);
  StatusOr<FileChecksum> saved =
      state.SaveWeights((std::filesystem::path(dir) / (name + ".pt")).string());
  if (!saved.ok()) return saved.status();
  COHORT_RETURN_IF_ERROR(WriteCheckpointManifest(dir, {name, logs.global_step, {*saved}}));
  if (kept_.empty()) kept_ = ExistingCheckpoints(dir);
  // A resumed run may save an epoch again; list it once.
  std::erase(kept_, name);
  kept_.push_back(name);
  return WriteCheckpointState(dir, kept_);
}

}  // namespace cohort::train
