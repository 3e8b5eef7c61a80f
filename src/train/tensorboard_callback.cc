#include "train/tensorboard_callback.h"

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "base/object_url.h"
#include "base/storage.h"
#include "train/worker_dirs.h"

namespace cohort::train {
namespace {

// {prefix + "loss", loss} followed by {prefix + name, value} for each metric.
std::vector<Scalar> Scalars(const std::string& prefix, double loss,
                            const std::map<std::string, double>& metrics) {
  std::vector<Scalar> scalars = {{prefix + "loss", static_cast<float>(loss)}};
  for (const auto& [name, value] : metrics) {
    scalars.emplace_back(prefix + name, static_cast<float>(value));
  }
  return scalars;
}

}  // namespace

Status TensorBoardCallback::OnTrainBegin(const FitPlan& plan, TrainingState& state) {
  SummaryRunOptions run_options;
  run_options.upload_every = options_.upload_every;
  run_options.now = options_.now;
  std::string dir = WriteDir(plan);
  if (IsStorageUrl(options_.log_dir)) {
    // Only the chief's runs go to the bucket: another worker's would be deleted at the end. The
    // others write a staging copy that Close removes.
    run_options.publish = dir == options_.log_dir;
    dir = options_.log_dir;
  }
  auto train = SummaryRunWriter::Create(JoinStoragePath(dir, "train"), run_options);
  if (!train.ok()) return train.status().WithContext("TensorBoard");
  auto validation = SummaryRunWriter::Create(JoinStoragePath(dir, "validation"), run_options);
  if (!validation.ok()) return validation.status().WithContext("TensorBoard");
  train_ = std::move(train).value();
  validation_ = std::move(validation).value();

  const int64_t resumed_at = state.position().GlobalStep(plan.steps_per_epoch);
  if (resumed_at > 0) {
    for (SummaryRunWriter* writer : {train_.get(), validation_.get()}) {
      COHORT_RETURN_IF_ERROR(writer->WriteSessionStart(resumed_at + 1));
      COHORT_RETURN_IF_ERROR(writer->Flush());
    }
  }
  return Status::OK();
}

std::string TensorBoardCallback::WriteDir(const FitPlan& plan) const {
  return options_.own_directory ? options_.log_dir : WriteDirPath(options_.log_dir, plan);
}

Status TensorBoardCallback::OnEpochBegin(const FitPlan& plan, int epoch) {
  batch_updates_.Restart();  // the first figures of an epoch come one interval into it
  return Status::OK();
}

Status TensorBoardCallback::OnBatchEnd(const FitPlan& plan, TrainingState& state,
                                       const BatchLogs& logs) {
  const bool by_steps =
      options_.update_every_steps > 0 && logs.global_step % options_.update_every_steps == 0;
  const bool by_time = batch_updates_.Ready();
  if (!by_steps && !by_time) return Status::OK();
  std::vector<Scalar> scalars = Scalars("batch_", logs.loss, logs.metrics);
  scalars.emplace_back("batch_samples_per_second", static_cast<float>(logs.samples_per_second));
  scalars.emplace_back("batch_step_seconds", static_cast<float>(logs.step_seconds));
  scalars.emplace_back("batch_allreduce_wait_seconds",
                       static_cast<float>(logs.allreduce_wait_seconds));
  COHORT_RETURN_IF_ERROR(train_->WriteScalars(logs.global_step, scalars));
  return by_time ? train_->Flush() : Status::OK();
}

Status TensorBoardCallback::OnEpochEnd(const FitPlan& plan, TrainingState& state,
                                       const EpochLogs& logs) {
  // An epoch resumed after its last step ran no training step in this process: the interrupted
  // run's figures are not known here, and zeros would be a lie in the plot.
  if (logs.steps > 0) {
    auto scalars = Scalars("epoch_", logs.loss, logs.metrics);
    scalars.emplace_back("epoch_learning_rate", static_cast<float>(logs.learning_rate));
    scalars.emplace_back("epoch_samples_per_second", static_cast<float>(logs.samples_per_second));
    COHORT_RETURN_IF_ERROR(train_->WriteScalars(logs.global_step, scalars));
  }
  COHORT_RETURN_IF_ERROR(validation_->WriteScalars(
      logs.global_step, Scalars("epoch_", logs.val_loss, logs.val_metrics)));
  COHORT_RETURN_IF_ERROR(train_->Flush());
  return validation_->Flush();
}

Status TensorBoardCallback::OnTrainEnd(const FitPlan& plan, TrainingState& state) {
  // The last file of each run, closed (in a bucket: uploaded).
  Status closed = train_ ? train_->Close() : Status::OK();
  if (closed.ok() && validation_) closed = validation_->Close();
  train_.reset();
  validation_.reset();
  COHORT_RETURN_IF_ERROR(closed.WithContext("TensorBoard"));
  if (options_.own_directory || IsStorageUrl(options_.log_dir)) return Status::OK();
  return RemoveTempWriteDir(options_.log_dir, plan);
}

}  // namespace cohort::train
