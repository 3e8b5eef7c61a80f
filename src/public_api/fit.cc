#include "cohort/fit.h"

#include <torch/nn/functional/loss.h>

#include <cstdio>
#include <sstream>

#include "base/file.h"
#include "base/object_url.h"
#include "cohort/collectives.h"
#include "net/auth.h"
#include "public_api/internal.h"
#include "train/backup_and_restore.h"
#include "train/program/process.h"
#include "train/run_identity.h"
#include "train/trainer.h"

namespace cohort {
namespace {

using internal::CallbackAccess;
using internal::StrategyAccess;

// The user's source as the fit loop's: sample numbers in, tensors out, exceptions as Status.
class SourceAdapter : public train::BatchSource {
 public:
  SourceAdapter(const cohort::BatchSource& source, std::string what)
      : source_(source), what_(std::move(what)) {}
  int64_t size() const override { return source_.size(); }
  StatusOr<train::Batch> Gather(const std::vector<int64_t>& indices) const override {
    try {
      cohort::Batch batch = source_.Get(indices);
      if (!batch.inputs.defined() || !batch.targets.defined()) {
        return Status::InvalidArgument(what_ + ": Get returned a batch without inputs or targets");
      }
      if (batch.size() != static_cast<int64_t>(indices.size())) {
        return Status::InvalidArgument(what_ + ": Get was asked for " +
                                       std::to_string(indices.size()) + " samples and returned " +
                                       std::to_string(batch.size()));
      }
      train::Batch result;
      result.inputs = std::move(batch.inputs);
      result.targets = std::move(batch.targets);
      return result;
    } catch (const c10::Error& error) {
      return Status::InvalidArgument(what_ + ": " + error.what_without_backtrace());
    } catch (const std::exception& error) {
      return Status::InvalidArgument(what_ + ": " + error.what());
    }
  }

 private:
  const cohort::BatchSource& source_;
  std::string what_;
};

// One broadcast per type of buffer: the buffers of that type, flattened and concatenated.
void BroadcastBuffers(MultiWorkerMirrored& strategy, torch::nn::Module& module) {
  if (strategy.world_size() == 1) return;
  std::map<c10::ScalarType, std::vector<torch::Tensor>> by_type;
  for (const torch::Tensor& buffer : module.buffers()) {
    by_type[buffer.scalar_type()].push_back(buffer);
  }
  torch::NoGradGuard no_grad;
  for (auto& [type, buffers] : by_type) {
    std::vector<torch::Tensor> flat;
    for (const torch::Tensor& buffer : buffers) flat.push_back(buffer.reshape({-1}));
    torch::Tensor joined = torch::cat(flat).contiguous();
    Broadcast(strategy, joined, /*root=*/0);
    int64_t offset = 0;
    for (torch::Tensor& buffer : buffers) {
      buffer.copy_(joined.slice(0, offset, offset + buffer.numel()).view_as(buffer));
      offset += buffer.numel();
    }
  }
}

// The user's module, forward, loss and metrics as the fit loop's model.
class ModelAdapter : public train::TrainableModel {
 public:
  ModelAdapter(MultiWorkerMirrored& strategy, const Model& model, const LossFunction& loss,
               const std::vector<Metric>& metrics, std::string name)
      : strategy_(strategy),
        model_(model),
        loss_(loss),
        metrics_(metrics),
        name_(std::move(name)) {}

  const std::string& name() const override { return name_; }
  torch::nn::Module& module() override { return *model_.module; }

  train::StepResult Step(const train::Batch& batch) override {
    if (input_shape_.empty()) {
      for (int64_t dim = 1; dim < batch.inputs.dim(); ++dim) {
        input_shape_.push_back(batch.inputs.size(dim));
      }
    }
    // Buffers (batch norm's running statistics) become the chief's before every training forward,
    // as DDP's broadcast_buffers makes them (not after it: autograd saved them for backward): each
    // worker would otherwise drift to statistics of its own batches. Not while evaluating, where
    // workers may run different numbers of batches.
    // With local SGD the workers' steps are their own, and the buffers are averaged at each
    // synchronization instead (local_sgd.h): nothing crosses the network between them.
    if (model_.module->is_training() && !local_steps()) BroadcastBuffers(strategy_, *model_.module);
    torch::Tensor output = model_.forward(batch.inputs);
    train::StepResult result;
    result.loss = loss_(output, batch.targets);
    if (!result.loss.defined() || result.loss.numel() != 1) {
      TORCH_CHECK(false, "the loss function must return a scalar tensor (the batch's mean loss)");
    }
    torch::NoGradGuard no_grad;
    for (const Metric& metric : metrics_) {
      result.metric_sums[metric.name] = metric.sum(output.detach(), batch.targets);
    }
    return result;
  }

  void DescribeInputs(train::ModelManifest* manifest) const override {
    manifest->input_shape = input_shape_;
  }

  bool local_steps() const {
    return StrategyAccess::impl(strategy_).options.synchronization == Synchronization::kLocalSgd;
  }

 private:
  MultiWorkerMirrored& strategy_;
  Model model_;
  LossFunction loss_;
  std::vector<Metric> metrics_;
  std::string name_;
  std::vector<int64_t> input_shape_;
};

// The final figures as the lines of the completion marker, and back.
std::string Summary(const FitResult& result) {
  std::ostringstream out;
  out.precision(17);
  out << "global_steps " << result.global_steps << "\nloss " << result.loss << "\n";
  for (const auto& [name, value] : result.metrics) out << "metric " << name << " " << value << "\n";
  return out.str();
}

FitResult FromSummary(const std::string& summary) {
  FitResult result;
  result.already_complete = true;
  std::istringstream in(summary);
  for (std::string line; std::getline(in, line);) {
    std::istringstream fields(line);
    std::string key;
    fields >> key;
    if (key == "global_steps") {
      fields >> result.global_steps;
    } else if (key == "loss") {
      fields >> result.loss;
    } else if (key == "metric") {
      std::string name;
      double value = 0;
      if (fields >> name >> value) result.metrics[name] = value;
    }
  }
  return result;
}

// The BackupAndRestore among the callbacks, if any.
const Callback* FindBackup(const std::vector<Callback>& callbacks) {
  for (const Callback& callback : callbacks) {
    if (!CallbackAccess::impl(callback).backup_dir.empty()) return &callback;
  }
  return nullptr;
}

}  // namespace

LossFunction CrossEntropyLoss() {
  return [](const torch::Tensor& output, const torch::Tensor& target) {
    return torch::nn::functional::cross_entropy(output, target);
  };
}

LossFunction MeanSquaredError() {
  return [](const torch::Tensor& output, const torch::Tensor& target) {
    return torch::mse_loss(output, target);
  };
}

LossFunction BinaryCrossEntropyWithLogits() {
  return [](const torch::Tensor& output, const torch::Tensor& target) {
    return torch::binary_cross_entropy_with_logits(output.reshape({-1}),
                                                   target.reshape({-1}).to(output.scalar_type()));
  };
}

Metric Accuracy() {
  return Metric{"accuracy", [](const torch::Tensor& output, const torch::Tensor& target) {
                  return output.argmax(1).eq(target).sum().item<double>();
                }};
}

void CheckFitArguments(const Model& model, const LossFunction& loss, const FitOptions& options) {
  if (!model.module || !model.forward) {
    ThrowError(Status::InvalidArgument("Fit needs a module and its forward function"));
  }
  if (!loss) ThrowError(Status::InvalidArgument("Fit needs a loss function"));
  if (options.per_worker_batch < 1) {
    ThrowError(Status::InvalidArgument("per_worker_batch must be at least 1"));
  }
}

FitResult Fit(MultiWorkerMirrored& strategy, const Model& model, torch::optim::Optimizer& optimizer,
              const BatchSource& train, const BatchSource& validation, const LossFunction& loss,
              const FitOptions& options) {
  CheckFitArguments(model, loss, options);
  const bool is_chief = strategy.is_chief();
  train::FitPlan end_plan;
  end_plan.is_chief = is_chief;

  // A task restarted after its run had completed has nothing left to do (backup_and_restore.h).
  const Callback* backup_callback = FindBackup(options.callbacks);
  auto* backup =
      backup_callback == nullptr
          ? nullptr
          : static_cast<train::BackupAndRestore*>(CallbackAccess::callback(*backup_callback));
  const std::string backup_dir =
      backup_callback == nullptr ? "" : CallbackAccess::impl(*backup_callback).backup_dir;
  if (backup != nullptr) {
    const std::string run_identity = train::RunIdentity(net::JobSecret::FromEnvironment());
    auto completed = ValueOrThrow(train::BackupAndRestore::CompletedRun(backup_dir, run_identity));
    if (completed.has_value()) {
      ThrowIfError(backup->DeleteBackup(end_plan));
      std::printf("this run already completed training (%s/%s); nothing left to do\n",
                  backup_dir.c_str(), train::kTrainingCompleteFile);
      // The job's status says it too (describe's ExitedWithCode event quotes it).
      train::program::WriteTerminationMessage("training already complete (" + backup_dir + "/" +
                                              train::kTrainingCompleteFile + "): nothing trained");
      std::fflush(stdout);
      return FromSummary(*completed);
    }
  }

  // The mistakes that would otherwise hang or garble the collectives, named before the first.
  ThrowIfError(CheckSameModel(strategy, *model.module));
  ThrowIfError(
      CheckSameBatchCount(strategy, train.size(), options.per_worker_batch, "the training data"));
  ThrowIfError(CheckSameBatchCount(strategy, validation.size(), options.per_worker_batch,
                                   "the validation data"));
  // A bucket holds no temporaries: its objects are written whole (base/storage.h).
  if (is_chief && !options.saved_model_dir.empty() && !IsStorageUrl(options.saved_model_dir)) {
    ThrowIfError(RemoveStaleTemporaryFiles(options.saved_model_dir).status());
  }

  train::TrainerOptions trainer_options;
  trainer_options.epochs = options.epochs;
  trainer_options.steps_per_epoch = options.steps_per_epoch;
  trainer_options.per_worker_batch = options.per_worker_batch;
  trainer_options.optimizer = options.optimizer_name;
  trainer_options.external_optimizer = &optimizer;
  trainer_options.seed = options.seed;
  trainer_options.bucket_bytes = options.gradient_bucket_bytes;
  trainer_options.eval_batch = options.eval_batch;
  trainer_options.step_timeout = options.step_timeout;
  const StrategyOptions& strategy_options = StrategyAccess::impl(strategy).options;
  switch (strategy_options.synchronization) {
    case Synchronization::kAllReduce:
      trainer_options.synchronization = train::Synchronization::kAllReduce;
      break;
    case Synchronization::kPowerSgd:
      trainer_options.synchronization = train::Synchronization::kPowerSgd;
      break;
    case Synchronization::kLocalSgd:
      trainer_options.synchronization = train::Synchronization::kLocalSgd;
      break;
  }
  trainer_options.power_sgd.rank = strategy_options.power_sgd.rank;
  trainer_options.power_sgd.start_step = strategy_options.power_sgd.start_step;
  trainer_options.power_sgd.warm_start = strategy_options.power_sgd.warm_start;
  trainer_options.local_sgd.sync_every_steps = strategy_options.local_sgd.sync_every_steps;
  trainer_options.local_sgd.outer_learning_rate = strategy_options.local_sgd.outer_learning_rate;
  trainer_options.local_sgd.outer_momentum = strategy_options.local_sgd.outer_momentum;
  // The trainer and its adapters live as long as the strategy if training fails: a gradient sum
  // may still be writing into the trainer's buckets (internal.h).
  struct Run {
    Run(const BatchSource& train, const BatchSource& validation)
        : train_source(train, "the training data"),
          validation_source(validation, "the validation data") {}
    SourceAdapter train_source;
    SourceAdapter validation_source;
    std::unique_ptr<train::Trainer> trainer;
  };
  auto run = std::make_shared<Run>(train, validation);
  const train::ModelFactory factory = [&]() -> StatusOr<std::unique_ptr<train::TrainableModel>> {
    return std::unique_ptr<train::TrainableModel>(
        std::make_unique<ModelAdapter>(strategy, model, loss, options.metrics, options.model_name));
  };
  run->trainer = ValueOrThrow(train::Trainer::Create(trainer_options, factory, &run->train_source,
                                                     &run->validation_source,
                                                     &StrategyAccess::strategy(strategy)));
  std::vector<train::Callback*> callbacks;
  for (const Callback& callback : options.callbacks) {
    callbacks.push_back(CallbackAccess::callback(callback));
  }
  const Status trained = run->trainer->Fit(callbacks);
  if (!trained.ok()) {
    StrategyAccess::KeepUntilCollectivesEnd(strategy, run);
    ThrowError(trained);
  }
  // The last step's statistics, the chief's, for the final evaluation and the saved model.
  try {
    BroadcastBuffers(strategy, *model.module);
  } catch (const c10::Error& error) {
    ThrowError(Status::Internal(std::string("broadcasting the chief's buffers: ") +
                                error.what_without_backtrace()));
  }

  // The end of a run, in the order a task killed anywhere survives without training again: the
  // backup stays until the model is complete, then the marker, the end barrier, the deletion.
  const train::FitPlan& plan = run->trainer->plan();
  auto evaluation = run->trainer->Evaluate();
  if (!evaluation.ok()) {
    StrategyAccess::KeepUntilCollectivesEnd(strategy, run);
    ThrowError(evaluation.status());
  }
  FitResult result;
  result.loss = evaluation->loss;
  result.metrics = evaluation->metrics;
  result.global_steps = run->trainer->global_step();
  if (!options.saved_model_dir.empty()) {
    std::map<std::string, double> figures = {{"val_loss", result.loss}};
    for (const auto& [name, value] : result.metrics) figures["val_" + name] = value;
    ThrowIfError(run->trainer->SaveModel(options.saved_model_dir, figures, ""));
  }
  if (backup != nullptr) ThrowIfError(backup->MarkComplete(plan, Summary(result)));
  ThrowIfError(StrategyAccess::strategy(strategy).Barrier().WithContext("end of training"));
  if (backup != nullptr) ThrowIfError(backup->DeleteBackup(plan));
  return result;
}

}  // namespace cohort
