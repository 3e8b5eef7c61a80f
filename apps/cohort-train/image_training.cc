#include "image_training.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <vector>

#include "train/backup_and_restore.h"
#include "train/data/image_batch_source.h"
#include "train/data/image_dataset.h"
#include "train/image_classifier.h"
#include "train/mirrored_strategy.h"
#include "train/model_checkpoint.h"
#include "train/program/process.h"
#include "train/progress_callback.h"
#include "train/saved_model.h"
#include "train/tensorboard_callback.h"
#include "train/trainer.h"

namespace cohort::train::cli {

using namespace program;

namespace {

std::string Describe(const Strategy& strategy, const cluster::TfConfig& config) {
  if (strategy.num_workers() == 1) return "single process";
  return "worker " + std::to_string(strategy.rank()) + " of " +
         std::to_string(strategy.num_workers()) + " (" + config.task.ToString() + ", " +
         (strategy.is_chief() ? "chief"
                              : "chief is " + cluster::ChiefTask(config.cluster).ToString()) +
         ")";
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
  options.bucket_bytes = static_cast<size_t>(flags.gradient_bucket_mb * (1 << 20));
  return options;
}

// The callbacks the flags ask for, in the order they run; progress always comes last.
std::vector<std::unique_ptr<Callback>> CallbacksFor(const Flags& flags) {
  std::vector<std::unique_ptr<Callback>> callbacks;
  if (!flags.checkpoint_path.empty()) {
    callbacks.push_back(std::make_unique<BackupAndRestore>(
        BackupOptions{flags.checkpoint_path, flags.backup_every_steps, true}));
  }
  if (!flags.model_checkpoint_path.empty()) {
    callbacks.push_back(
        std::make_unique<ModelCheckpoint>(ModelCheckpointOptions{flags.model_checkpoint_path}));
  }
  if (!flags.tensorboard_dir.empty()) {
    callbacks.push_back(std::make_unique<TensorBoardCallback>(
        TensorBoardOptions{flags.tensorboard_dir, flags.tensorboard_update_steps}));
  }
  callbacks.push_back(std::make_unique<ProgressCallback>(ProgressCallback::ForStdout()));
  return callbacks;
}

}  // namespace

int TrainImageClassifier(const Flags& flags, const cluster::TfConfig& config, int threads,
                         const BlasLibrary& blas) {
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

  Print("cohort-train: " + Describe(**strategy, config) + "; model " + plan.model_name +
        "; global batch " + std::to_string(plan.global_batch()) + " (" +
        std::to_string(plan.per_worker_batch) + " x " + std::to_string(plan.num_workers) + "); " +
        std::to_string(plan.epochs) + " epochs of " + std::to_string(plan.steps_per_epoch) +
        " steps; " + plan.optimizer + " lr " + std::to_string(plan.learning_rate) + "; " +
        std::to_string(threads) + " threads; BLAS " + BlasName(blas));

  const std::vector<std::unique_ptr<Callback>> callbacks = CallbacksFor(flags);
  std::vector<Callback*> callback_pointers;
  for (const auto& callback : callbacks) callback_pointers.push_back(callback.get());
  if (Status status = (*trainer)->Fit(callback_pointers); !status.ok()) Fail(status);

  auto result = (*trainer)->Evaluate();
  if (!result.ok()) Fail(result.status());
  const double test_accuracy = result->metrics["accuracy"];
  if (!flags.saved_model_path.empty()) {
    Status saved = (*trainer)->SaveModel(
        flags.saved_model_path, {{"test_accuracy", test_accuracy}, {"test_loss", result->loss}},
        flags.data_dir);
    if (!saved.ok()) Fail(saved);
  }
  // Nobody leaves before the chief's model is on disk.
  if (Status status = (*strategy)->Barrier(); !status.ok()) Fail(status);

  std::printf("test accuracy %.4f\n", test_accuracy);
  if (plan.is_chief) {
    if (!flags.saved_model_path.empty()) {
      std::printf("saved model: %s (evaluate: cohort-train --evaluate --model_path %s)\n",
                  flags.saved_model_path.c_str(), flags.saved_model_path.c_str());
    }
    if (!flags.tensorboard_dir.empty()) {
      std::printf("TensorBoard logs: %s (tensorboard --logdir %s)\n", flags.tensorboard_dir.c_str(),
                  flags.tensorboard_dir.c_str());
    }
  }
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
