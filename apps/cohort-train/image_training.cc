#include "image_training.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <optional>
#include <vector>

#include "base/file.h"
#include "base/object_url.h"
#include "cluster/summary_location.h"
#include "net/auth.h"
#include "train/backup_and_restore.h"
#include "train/data/image_batch_source.h"
#include "train/data/image_dataset.h"
#include "train/image_classifier.h"
#include "train/mirrored_strategy.h"
#include "train/model_checkpoint.h"
#include "train/program/process.h"
#include "train/progress_callback.h"
#include "train/run_identity.h"
#include "train/saved_model.h"
#include "train/tensorboard_callback.h"
#include "train/trainer.h"

namespace cohort::train::cli {

using namespace program;

namespace {

// How the workers synchronize, when it is not the exact all-reduce of every step.
std::string SynchronizationText(const Flags& flags) {
  if (flags.synchronization == "powersgd") {
    return "; PowerSGD rank " + std::to_string(flags.powersgd_rank) + " from step " +
           std::to_string(flags.powersgd_start_step) + ", warm start " + flags.powersgd_warm_start;
  }
  if (flags.synchronization == "local_sgd") {
    char outer[96];
    std::snprintf(outer, sizeof outer, "outer Nesterov SGD lr %g momentum %g",
                  flags.outer_learning_rate, flags.outer_momentum);
    return "; local SGD, synchronizing every " + std::to_string(flags.local_sgd_steps) +
           " steps with " + outer;
  }
  return "";
}

std::string Describe(const Strategy& strategy, const cluster::TfConfig& config,
                     const Flags& flags) {
  if (strategy.num_workers() == 1) return "single process";
  return "worker " + std::to_string(strategy.rank()) + " of " +
         std::to_string(strategy.num_workers()) + " (" + config.task.ToString() + ", " +
         (strategy.is_chief() ? "chief"
                              : "chief is " + cluster::ChiefTask(config.cluster).ToString()) +
         "); collectives over " +
         (strategy.uses_same_host_memory() ? "same-host memory and TCP"
          : flags.same_host_path == "on"   ? "TCP (same-host path unavailable)"
                                           : "TCP (same-host path off)") +
         (flags.gradient_compression == "none"
              ? std::string()
              : "; gradients as " + flags.gradient_compression + " on the wire") +
         (flags.zero_skipping == "on" ? "" : "; zero skipping off") + SynchronizationText(flags);
}

std::string BlasName(const BlasLibrary& blas) {
  switch (blas.kind) {
    case BlasKind::kOpenBlas:
      return "OpenBLAS (" + blas.path + ")";
    case BlasKind::kReference:
      return "reference BLAS (" + blas.path + ")";
    case BlasKind::kOther:
      return blas.path;
    case BlasKind::kNotLoaded:
      return "none loaded";
  }
  return "unknown";
}

// The fit loop's options from the flags; the learning rate defaults by optimizer.
TrainerOptions TrainerOptionsFrom(const Flags& flags) {
  TrainerOptions options;
  options.epochs = flags.epochs;
  options.steps_per_epoch = flags.steps_per_epoch;
  options.per_worker_batch = flags.per_worker_batch;
  options.optimizer = flags.optimizer;
  options.learning_rate =
      flags.learning_rate > 0 ? flags.learning_rate : (flags.optimizer == "adam" ? 0.001 : 0.01);
  options.seed = flags.seed;
  // The flag's check accepts only what ParseNonFinitePolicy accepts.
  auto policy = ParseNonFinitePolicy(flags.non_finite);
  options.non_finite = policy.ok() ? *policy : TrainerOptions::NonFinitePolicy::kStop;
  options.max_rollbacks = flags.max_rollbacks;
  options.bucket_bytes = static_cast<size_t>(flags.gradient_bucket_mb * (1 << 20));
  // The flag's check accepts only what ParseGradientCompression accepts.
  auto compression = ParseGradientCompression(flags.gradient_compression);
  options.gradient_compression = compression.ok() ? *compression : GradientCompression::kNone;
  // The flag's check accepts only what ParseSynchronization accepts.
  auto synchronization = ParseSynchronization(flags.synchronization);
  options.synchronization = synchronization.ok() ? *synchronization : Synchronization::kAllReduce;
  options.power_sgd.rank = flags.powersgd_rank;
  options.power_sgd.start_step = flags.powersgd_start_step;
  options.power_sgd.warm_start = flags.powersgd_warm_start == "on";
  options.local_sgd.sync_every_steps = flags.local_sgd_steps;
  options.local_sgd.outer_learning_rate = flags.outer_learning_rate;
  options.local_sgd.outer_momentum = flags.outer_momentum;
  // Each worker's batch-norm statistics are its own batches'; evaluation and the saved model
  // use their average.
  options.average_buffers_before_evaluation = true;
  options.report_gradient_zeros = flags.report_gradient_zeros;
  return options;
}

std::chrono::milliseconds Milliseconds(double seconds) {
  return std::chrono::milliseconds(static_cast<int64_t>(seconds * 1000));
}

// The callbacks the flags ask for, in the order they run (`backup` first, when there is one);
// progress always comes last.
std::vector<Callback*> CallbacksFor(const Flags& flags, BackupAndRestore* backup,
                                    std::vector<std::unique_ptr<Callback>>* owned) {
  if (!flags.model_checkpoint_path.empty()) {
    owned->push_back(
        std::make_unique<ModelCheckpoint>(ModelCheckpointOptions{flags.model_checkpoint_path}));
  }
  // Without --tensorboard_dir, the directory job control gave this replica, which is its alone
  // (cluster/summary_location.h).
  const std::string summary_dir = cluster::SummaryDirectoryFromEnvironment();
  const bool own_directory = flags.tensorboard_dir.empty() && !summary_dir.empty();
  const std::string log_dir = own_directory ? summary_dir : flags.tensorboard_dir;
  if (!log_dir.empty()) {
    TensorBoardOptions options{log_dir, flags.tensorboard_update_steps};
    options.update_every = Milliseconds(flags.tensorboard_update_s);
    options.upload_every = Milliseconds(flags.tensorboard_upload_s);
    options.own_directory = own_directory;
    owned->push_back(std::make_unique<TensorBoardCallback>(std::move(options)));
  }
  owned->push_back(std::make_unique<ProgressCallback>(
      ProgressCallback::ForStdout(Milliseconds(flags.progress_every_s))));
  std::vector<Callback*> callbacks;
  if (backup) callbacks.push_back(backup);
  for (const auto& callback : *owned) callbacks.push_back(callback.get());
  return callbacks;
}

// The lines a finished task prints last; the chief's name what it wrote.
std::string FinalLines(const Flags& flags, bool is_chief, double test_accuracy) {
  char accuracy[64];
  std::snprintf(accuracy, sizeof(accuracy), "test accuracy %.4f\n", test_accuracy);
  std::string lines = accuracy;
  if (!is_chief) return lines;
  if (!flags.saved_model_path.empty()) {
    lines += "saved model: " + flags.saved_model_path +
             " (evaluate: cohort-train --evaluate --model_path " + flags.saved_model_path + ")\n";
  }
  if (!flags.tensorboard_dir.empty()) {
    lines += "TensorBoard logs: " + flags.tensorboard_dir +
             " (curves: cohort ui, on the job's page; they are TensorBoard's event files)\n";
  }
  return lines;
}

// A chief killed while writing into `dir` (the saved model) left its temporary file there. A
// bucket has none: an object is written whole or not at all (base/storage.h).
void RemoveStaleTemporaryFilesOrFail(const std::string& dir) {
  if (dir.empty() || IsStorageUrl(dir)) return;
  if (StatusOr<int> stale = RemoveStaleTemporaryFiles(dir); !stale.ok()) Fail(stale.status());
}

// A task of this run restarted after the run had completed (BackupAndRestore's marker): the
// outputs are complete, so it prints the run's final lines and ends. The chief deletes the backup,
// which a death just before the end barrier may have left.
std::optional<int> FinishCompletedRun(const Flags& flags, const cluster::TfConfig& config,
                                      const std::string& run_identity) {
  if (flags.checkpoint_path.empty()) return std::nullopt;
  auto completed = BackupAndRestore::CompletedRun(flags.checkpoint_path, run_identity);
  if (!completed.ok()) Fail(completed.status());
  if (!completed->has_value()) return std::nullopt;
  FitPlan plan;
  plan.is_chief = cluster::IsChief(config);
  BackupAndRestore backup(BackupOptions{flags.checkpoint_path, 0, true, run_identity});
  if (Status deleted = backup.DeleteBackup(plan); !deleted.ok()) Fail(deleted);
  if (plan.is_chief) RemoveStaleTemporaryFilesOrFail(flags.saved_model_path);
  Print("cohort-train: this run already completed training (" + flags.checkpoint_path + "/" +
        kTrainingCompleteFile + "); nothing left to do");
  // The job's status says it too (describe's ExitedWithCode event quotes it).
  WriteTerminationMessage("training already complete (" + flags.checkpoint_path + "/" +
                          kTrainingCompleteFile + "): nothing trained");
  std::printf("%s", (plan.is_chief ? **completed : std::string()).c_str());
  std::fflush(stdout);
  return kExitOk;
}

}  // namespace

int TrainImageClassifier(const Flags& flags, const cluster::TfConfig& config, int threads,
                         const BlasLibrary& blas) {
  const std::string run_identity = RunIdentity(net::JobSecret::FromEnvironment());
  if (std::optional<int> exit_code = FinishCompletedRun(flags, config, run_identity)) {
    return *exit_code;
  }
  auto train = LoadImageDataset(flags.data_dir, Split::kTrain);
  if (!train.ok()) Fail(train.status());
  auto test = LoadImageDataset(flags.data_dir, Split::kTest);
  if (!test.ok()) Fail(test.status());
  // The model learns the training split's classes; a test label beyond them fails here, naming
  // its file, rather than in the first evaluation.
  if (Status labels = CheckLabels(*test, train->num_classes); !labels.ok()) Fail(labels);

  const char* job_name = std::getenv("COHORT_JOB_NAME");
  WorkerConnectionOptions connection;
  connection.job_name = job_name ? job_name : "";
  connection.startup_timeout = Milliseconds(flags.startup_timeout_s);
  connection.peer_timeout = Milliseconds(flags.peer_timeout_s);
  connection.same_host_path = flags.same_host_path == "on";
  connection.zero_skipping = flags.zero_skipping == "on";
  connection.on_peer_failure = WriteTerminationMessage;
  auto strategy = MakeStrategy(config, connection);
  if (!strategy.ok()) Fail(strategy.status());

  const ImageBatchSource train_source(&*train), test_source(&*test);
  const ModelFactory make_model = ImageClassifier::Factory(
      flags.model, *train, *test, ClassNamesFor(flags.data_dir, std::max(train->num_classes, 2)));
  auto trainer = Trainer::Create(TrainerOptionsFrom(flags), make_model, &train_source, &test_source,
                                 strategy->get());
  if (!trainer.ok()) Fail(trainer.status());
  const FitPlan& plan = (*trainer)->plan();

  Print("cohort-train: " + Describe(**strategy, config, flags) + "; model " + plan.model_name +
        "; global batch " + std::to_string(plan.global_batch()) + " (" +
        std::to_string(plan.per_worker_batch) + " x " + std::to_string(plan.num_workers) + "); " +
        std::to_string(plan.epochs) + " epochs of " + std::to_string(plan.steps_per_epoch) +
        " steps; " + plan.optimizer + " lr " + std::to_string(plan.learning_rate) + "; " +
        std::to_string(threads) + " threads; BLAS " + BlasName(blas));

  if (plan.is_chief) RemoveStaleTemporaryFilesOrFail(flags.saved_model_path);
  std::unique_ptr<BackupAndRestore> backup;
  if (!flags.checkpoint_path.empty()) {
    backup = std::make_unique<BackupAndRestore>(BackupOptions{flags.checkpoint_path,
                                                              flags.backup_every_steps, true,
                                                              run_identity, flags.backups_to_keep});
  }
  std::vector<std::unique_ptr<Callback>> owned_callbacks;
  const std::vector<Callback*> callbacks = CallbacksFor(flags, backup.get(), &owned_callbacks);
  if (Status status = (*trainer)->Fit(callbacks); !status.ok()) Fail(status);
  if (auto* mirrored = dynamic_cast<MultiWorkerMirroredStrategy*>(strategy->get());
      mirrored != nullptr && plan.num_workers > 1) {
    char sent[128];
    std::snprintf(
        sent, sizeof sent, "%.1f MB",
        static_cast<double>(mirrored->communicator().connections().DataBytesSent()) / 1e6);
    Print("cohort-train: this worker sent " + std::string(sent) +
          " of collective messages over TCP");
  }

  // The end of a job, in an order that a task killed at any point survives without training
  // again (backup_and_restore.h): the backup stays until the model is complete, the completion
  // marker is written, and every worker has passed the end barrier.
  auto result = (*trainer)->Evaluate();
  if (!result.ok()) Fail(result.status());
  const double test_accuracy = result->metrics["accuracy"];
  if (!flags.saved_model_path.empty()) {
    Status saved = (*trainer)->SaveModel(
        flags.saved_model_path, {{"test_accuracy", test_accuracy}, {"test_loss", result->loss}},
        flags.data_dir);
    if (!saved.ok()) Fail(saved);
  }
  const std::string final_lines = FinalLines(flags, plan.is_chief, test_accuracy);
  if (backup) {
    if (Status marked = backup->MarkComplete(plan, final_lines); !marked.ok()) Fail(marked);
  }
  // Nobody leaves before the chief's model is on disk.
  if (Status status = (*strategy)->Barrier(); !status.ok()) Fail(status);
  if (backup) {
    if (Status deleted = backup->DeleteBackup(plan); !deleted.ok()) Fail(deleted);
  }
  std::printf("%s", final_lines.c_str());
  std::fflush(stdout);
  return kExitOk;
}

void EvaluateImageModel(const std::string& model_path, const std::string& data_dir) {
  auto model = SavedModel::Load(model_path);
  if (!model.ok()) Fail(model.status());
  auto test = LoadImageDataset(data_dir, Split::kTest);
  if (!test.ok()) Fail(test.status());
  const int model_classes = static_cast<int>((*model)->num_classes());
  if (Status labels = CheckLabels(*test, model_classes); !labels.ok()) Fail(labels);
  auto result = (*model)->Evaluate(*test);
  if (!result.ok()) Fail(result.status());
  std::printf("model %s (%s) on %s: %lld test samples\ntest loss %.4f\ntest accuracy %.4f\n",
              model_path.c_str(), (*model)->manifest().model.c_str(), data_dir.c_str(),
              static_cast<long long>(result->samples), result->loss, result->metrics["accuracy"]);
}

}  // namespace cohort::train::cli
