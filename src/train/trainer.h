// Trainer: the Keras-like fit loop, for one worker of a synchronous data-parallel run.
//
// The loop trains any model on any data through two small interfaces: a BatchSource
// (train/data/batch_source.h) gives the batch for a list of sample numbers, and a TrainableModel
// (trainable_model.h) turns a batch into its loss and named metrics. The image classifier
// (image_classifier.h over ImageBatchSource) is one such pair.
//
// Every worker builds the same model from the same seed, then takes the chief's state (weights,
// optimizer, position: fresh or restored from a backup) by broadcast, so all start identical. Each
// step, every worker computes the gradient of the mean loss over its own per_worker_batch samples
// (shard_sampler.h); GradientBuckets averages the gradients over workers while backward runs; and
// every worker applies the same optimizer step to the same weights, so the replicas never drift
// apart and nothing but gradients crosses the network during an epoch. With one worker the same
// loop trains alone.
//
//   Trainer::Create(options, model_factory, &train, &test, &strategy) -> trainer
//   trainer->Fit({&backup, &tensorboard, &progress})
//   trainer->Evaluate()                     // test source, sharded over the workers
//   trainer->SaveModel(dir, metrics)        // every worker calls it; only the chief writes
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "base/status.h"
#include "train/callback.h"
#include "train/data/batch_source.h"
#include "train/gradient_compression.h"
#include "train/local_sgd.h"
#include "train/power_sgd.h"
#include "train/strategy.h"
#include "train/trainable_model.h"

namespace torch::optim {
class Optimizer;
}

namespace cohort::train {

// How the workers keep their replicas together (with one worker there is nothing to do).
enum class Synchronization {
  // Every step, the gradients' exact average (gradient_buckets.h, overlapping backward).
  kAllReduce,
  // Every step, the gradients' low-rank average with error feedback (power_sgd.h).
  kPowerSgd,
  // Local steps, and every H steps the parameters' averaged change through an outer Nesterov
  // step (local_sgd.h); the last step of each epoch synchronizes too, so that evaluation, backups
  // at epoch ends and the saved model see one model.
  kLocalSgd,
};

// "allreduce", "powersgd" or "local_sgd", as cohort-train's --synchronization takes them;
// anything else is InvalidArgument naming the value and those three.
StatusOr<Synchronization> ParseSynchronization(const std::string& text);
const char* Name(Synchronization synchronization);

struct TrainerOptions {
  int epochs = 3;
  // Global steps per epoch; 0 means one pass over the training split (size / global batch).
  int64_t steps_per_epoch = 0;
  int64_t per_worker_batch = 64;
  std::string optimizer = "adam";  // "adam" or "sgd"
  double learning_rate = 0.001;
  // The optimizer of a program that brings its own (the public API's Fit, include/cohort/fit.h):
  // it must optimise the model's parameters and outlive the trainer; `optimizer` is then only the
  // name logs and manifests give it, and the learning rate is read from its first group. Unset:
  // the trainer builds the one `optimizer` names.
  torch::optim::Optimizer* external_optimizer = nullptr;
  uint64_t seed = 42;
  // Gradient bucket size for the all-reduce; about 4 MiB lets the last layers' sums start while
  // backward still works on the first ones.
  size_t bucket_bytes = size_t{4} << 20;
  // How the gradients travel in the all-reduce (gradient_compression.h).
  GradientCompression gradient_compression = GradientCompression::kNone;
  // How the workers stay together, and the options of the two that compress. PowerSGD and local
  // SGD take float32 gradients: gradient_compression must be kNone with them. Their own state
  // (PowerSGD's errors and Q; local SGD's anchor and outer momentum) is not in backups: a restore
  // or a rollback starts it afresh from the restored weights.
  Synchronization synchronization = Synchronization::kAllReduce;
  PowerSgdOptions power_sgd;
  LocalSgdOptions local_sgd;
  // Whether the floating point buffers (batch norm's running statistics, which each worker
  // updates from its own batches) are averaged over the workers before each evaluation, so that
  // every worker evaluates, and the chief saves, the same model. Exact for buffers that already
  // agree.
  bool average_buffers_before_evaluation = false;
  // Whether each epoch ends with a line giving the fraction of exact zeros in the gradients the
  // optimizer applied (of all parameters, and of the largest), measured every step. With one
  // worker that is the worker's own gradient, what zero skipping (--zero_skipping) leaves out.
  bool report_gradient_zeros = false;
  int64_t eval_batch = 500;
  // How long a step may wait for its gradient sums or its next batch before the run is declared
  // stuck. Peers that die are noticed by the collectives much sooner.
  std::chrono::milliseconds step_timeout{std::chrono::seconds(120)};
  // What a step whose loss or gradient norm is NaN or infinite does. The check runs on every
  // step, after the gradients are averaged (so every worker sees the same norm and decides the
  // same) and before the optimizer: such a step is never applied.
  //   kStop: Fit fails with FailedPrecondition naming the step, the loss and the norm (a
  //          permanent failure: a restart would resume before the same step).
  //   kRollback: the chief loads the newest backup that verifies (the BackupAndRestore callback
  //          passed to Fit; without one, or before its first backup, this is kStop), every worker
  //          takes it, the learning rate is multiplied by rollback_learning_rate_factor, and
  //          training goes on from there; at most max_rollbacks times per process, then kStop.
  enum class NonFinitePolicy { kStop, kRollback };
  NonFinitePolicy non_finite = NonFinitePolicy::kStop;
  int max_rollbacks = 3;
  double rollback_learning_rate_factor = 0.5;
};

// "stop" or "rollback", as cohort-train's --non_finite takes them.
StatusOr<TrainerOptions::NonFinitePolicy> ParseNonFinitePolicy(const std::string& text);

class Trainer {
 public:
  // Checks the options against the data, seeds libtorch's generator with options.seed, builds
  // the model with `make_model` and the optimizer. `train`, `test` and `strategy` must outlive
  // the trainer.
  static StatusOr<std::unique_ptr<Trainer>> Create(const TrainerOptions& options,
                                                   const ModelFactory& make_model,
                                                   const BatchSource* train,
                                                   const BatchSource* test, Strategy* strategy);
  ~Trainer();

  const FitPlan& plan() const;

  // Trains from the chief's start or restored position to the end of the last epoch, calling
  // `callbacks` in order at each point (callback.h). Logs "resuming from epoch E step S" when it
  // does not start from the beginning (E counts from 1, S is the number of steps of epoch E
  // already done).
  Status Fit(const std::vector<Callback*>& callbacks);

  // Loss and metrics on the test source: each worker evaluates its share, the sums are added.
  StatusOr<EvaluationResult> Evaluate();

  // Writes the model to `dir` (weights.pt + manifest.json with the model's inputs
  // (TrainableModel::DescribeInputs), `metrics` and the training configuration, `data_dir` among
  // it, and the weights' checksum). Call on every worker; only the chief writes. The manifest is
  // written last, so a directory with a manifest holds a complete model. FailedPrecondition, and
  // nothing written, when a weight or a metric is NaN or infinite: such a model is never saved.
  Status SaveModel(const std::string& dir, const std::map<std::string, double>& metrics,
                   const std::string& data_dir);

  // The model's parameters, flattened and concatenated in the model's order (for tests).
  std::vector<float> ParameterVector() const;

  // Optimizer steps taken since the start of training.
  int64_t global_step() const;

 private:
  struct Impl;
  explicit Trainer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace cohort::train
