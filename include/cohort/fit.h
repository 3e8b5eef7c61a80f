// cohort/fit.h: the fit loop, Keras's model.fit for any torch::nn::Module.
//
//   struct NetImpl : torch::nn::Module { ... torch::Tensor forward(torch::Tensor x); };
//   TORCH_MODULE(Net);
//
//   cohort::MultiWorkerMirrored strategy(cohort::Cluster::FromEnvironment());
//   Net net;
//   torch::optim::Adam optimizer(net->parameters(), 1e-3);
//   cohort::FitOptions options;
//   options.epochs = 5;
//   options.per_worker_batch = 64;
//   options.metrics = {cohort::Accuracy()};
//   options.callbacks = {cohort::BackupAndRestore("/tmp/job/backup"), cohort::Progress()};
//   options.saved_model_dir = "/tmp/job/model";
//   cohort::FitResult result =
//       cohort::Fit(strategy, net, optimizer, train, test, cohort::CrossEntropyLoss(), options);
//
// What Fit does, on every worker of the strategy:
//   1. checks that every worker has the same model (parameter and buffer names and shapes; a
//      difference is an error naming the parameter) and the same number of batches;
//   2. restores the newest backup, if a BackupAndRestore callback has one (chief), then
//      broadcasts the chief's parameters, buffers (batch norm's running statistics too),
//      optimizer state and position to every worker, so all start identical;
//   3. for each epoch: each worker trains on its own per_worker_batch samples per step (data.h:
//      shuffled per epoch, disjoint between workers); gradients are averaged over the workers
//      while backward runs; every worker applies the same optimizer step; buffers (batch norm's
//      running statistics) are the chief's before every step and at the end, as with DDP's
//      broadcast_buffers; at the epoch end the validation source is evaluated (split over the
//      workers) and the callbacks run. StrategyOptions::synchronization (strategy.h) changes
//      this step for slow links: PowerSGD averages low-rank gradients instead; local SGD lets
//      each worker step alone and averages parameters (and buffers) every few steps;
//   4. evaluates the final model on the validation source, saves it (chief: saved_model_dir),
//      then ends the backup (callbacks.h).
// The module is in train() mode while training and eval() mode while evaluating. With one
// worker the same loop trains alone.
#pragma once

#include <torch/nn/module.h>
#include <torch/optim/optimizer.h>
#include <torch/types.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "cohort/callbacks.h"
#include "cohort/data.h"
#include "cohort/strategy.h"

namespace cohort {

// The module to train and how to run it forward. Built implicitly from a module holder
// (TORCH_MODULE(Net): pass `net`), or from a module and a function.
struct Model {
  template <typename Holder, typename = decltype(std::declval<Holder&>().ptr())>
  Model(Holder holder)  // NOLINT: implicit by design, so that Fit(strategy, net, ...) reads well
      : module(holder.ptr()),
        forward([holder](const torch::Tensor& inputs) mutable { return holder->forward(inputs); }) {
  }
  Model(std::shared_ptr<torch::nn::Module> module,
        std::function<torch::Tensor(const torch::Tensor&)> forward)
      : module(std::move(module)), forward(std::move(forward)) {}

  std::shared_ptr<torch::nn::Module> module;
  std::function<torch::Tensor(const torch::Tensor&)> forward;
};

// The loss to minimise: the mean over the batch of the loss of the model's `output` against the
// batch's `target`, as a scalar tensor.
using LossFunction =
    std::function<torch::Tensor(const torch::Tensor& output, const torch::Tensor& target)>;

// A named figure, reported as its mean over samples: `sum` returns the figure summed over the
// batch's samples (accuracy: the number predicted right), so that Cohort can average it over any
// number of batches and workers.
struct Metric {
  std::string name;
  std::function<double(const torch::Tensor& output, const torch::Tensor& target)> sum;
};

// Cross entropy of logits [N, classes] against class indices [N] (int64).
LossFunction CrossEntropyLoss();
// Mean squared error.
LossFunction MeanSquaredError();
// Sigmoid cross entropy of logits ([N] or [N, 1]) against 0/1 targets (any number type), a binary
// classifier's loss.
LossFunction BinaryCrossEntropyWithLogits();
// "accuracy": the fraction of samples whose largest logit is the target class.
Metric Accuracy();

struct FitOptions {
  int epochs = 1;
  int64_t per_worker_batch = 64;
  // Global steps per epoch; 0: one pass over the training source (size / global batch).
  int64_t steps_per_epoch = 0;
  // Seeds the shuffling of the data (the same on every worker).
  uint64_t seed = 42;
  std::vector<Metric> metrics;
  std::vector<Callback> callbacks;
  // Where the chief saves the final model: weights.pt (torch::load it into the module) and
  // manifest.json (metrics, inputs, training configuration). Empty: not saved.
  std::string saved_model_dir;
  // The model's name, recorded in backups (a backup of another model is refused) and in the
  // saved model's manifest.
  std::string model_name = "model";
  // The name the optimizer is recorded under in the manifest and logs.
  std::string optimizer_name = "custom";
  int64_t eval_batch = 500;
  // Gradient bucket size of the all-reduce (collectives.h).
  size_t gradient_bucket_bytes = size_t{4} << 20;
  // How long a step may wait for its gradient sums or its next batch.
  std::chrono::milliseconds step_timeout = std::chrono::minutes(2);
};

struct FitResult {
  // On the validation source after the last epoch, over every worker's share.
  double loss = 0;
  std::map<std::string, double> metrics;
  int64_t global_steps = 0;
  // True when a BackupAndRestore callback found that this run had already completed (this task
  // was restarted after the end): nothing was trained, and loss and metrics are the completed
  // run's figures.
  bool already_complete = false;
  // True on a ps task of a ParameterServer job (parameter_server.h): it served the variables
  // until the chief ended the job and trained nothing.
  bool served = false;
};

// Trains `model` with `optimizer` (which must optimise the module's parameters) on `train`,
// evaluating on `validation`. Collective: every worker of `strategy` calls it with the same
// options. Throws cohort::Error: a module without parameters, options that do not fit the data,
// workers whose models or batch counts differ (named), a failed peer (retryable), a file that
// cannot be written; errors thrown by the forward pass, the loss or a metric come back as
// cohort::Error naming the step.
FitResult Fit(MultiWorkerMirrored& strategy, const Model& model, torch::optim::Optimizer& optimizer,
              const BatchSource& train, const BatchSource& validation, const LossFunction& loss,
              const FitOptions& options);

}  // namespace cohort
