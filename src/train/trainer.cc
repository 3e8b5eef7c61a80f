#include "train/trainer.h"

#include <torch/nn/functional/loss.h>
#include <torch/optim/sgd.h>
#include <torch/serialize.h>
#include <torch/utils.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <sstream>

#include "base/file.h"
#include "base/time.h"
#include "train/batch_prefetcher.h"
#include "train/evaluation.h"
#include "train/fused_adam.h"
#include "train/gradient_buckets.h"
#include "train/model_manifest.h"
#include "train/models.h"
#include "train/shard_sampler.h"
#include "train/worker_dirs.h"

namespace cohort::train {
namespace {

using Clock = std::chrono::steady_clock;

// Batches the prefetch thread prepares ahead of the step that runs.
constexpr size_t kPrefetchDepth = 4;

double Seconds(Clock::duration duration) { return std::chrono::duration<double>(duration).count(); }

Status TorchError(const std::string& what, const c10::Error& error) {
  return Status::Internal(what + ": " + error.what_without_backtrace());
}

Status CheckOptions(const TrainerOptions& options, const ImageDataset& train,
                    const ImageDataset& test, int num_workers) {
  if (options.epochs < 1) return Status::InvalidArgument("epochs must be at least 1");
  if (options.per_worker_batch < 1) {
    return Status::InvalidArgument("per_worker_batch must be at least 1");
  }
  if (options.steps_per_epoch < 0) {
    return Status::InvalidArgument("steps_per_epoch must not be negative");
  }
  if (!(options.learning_rate > 0)) {
    return Status::InvalidArgument("learning_rate must be positive");
  }
  if (options.optimizer != "adam" && options.optimizer != "sgd") {
    return Status::InvalidArgument("unknown optimizer \"" + options.optimizer +
                                   "\" (known: adam, sgd)");
  }
  if (train.size() < options.per_worker_batch * num_workers) {
    return Status::InvalidArgument("the training split has " + std::to_string(train.size()) +
                                   " samples, fewer than one global batch (" +
                                   std::to_string(options.per_worker_batch) + " x " +
                                   std::to_string(num_workers) + " workers)");
  }
  if (test.size() < num_workers) {
    return Status::InvalidArgument("the test split has fewer samples than there are workers");
  }
  if (train.rows != test.rows || train.cols != test.cols) {
    return Status::InvalidArgument("training and test images differ in size");
  }
  return Status::OK();
}

}  // namespace

struct Trainer::Impl : public TrainingState {
  TrainerOptions options;
  const ImageDataset* train = nullptr;
  const ImageDataset* test = nullptr;
  Strategy* strategy = nullptr;
  FitPlan plan;
  torch::nn::Sequential model{nullptr};
  std::unique_ptr<torch::optim::Optimizer> optimizer;
  std::unique_ptr<GradientBuckets> buckets;  // only with several workers
  TrainingPosition position_;

  TrainingPosition position() const override { return position_; }

  // ---- TrainingState: one archive with model, optimizer, RNG and position ----

  void WriteArchive(torch::serialize::OutputArchive& archive) {
    torch::serialize::OutputArchive model_archive, optimizer_archive;
    model->save(model_archive);
    optimizer->save(optimizer_archive);
    archive.write("model", model_archive);
    archive.write("optimizer", optimizer_archive);
    archive.write("model_name", c10::IValue(plan.model_name));
    archive.write("epoch", c10::IValue(static_cast<int64_t>(position_.epoch)));
    archive.write("step", c10::IValue(position_.step));
    archive.write("rng_state", at::detail::getDefaultCPUGenerator().get_state());
  }

  // Checks what `archive` holds against this run before changing anything, then loads it.
  Status ReadArchive(torch::serialize::InputArchive& archive, const std::string& origin) {
    c10::IValue model_name, epoch, step;
    archive.read("model_name", model_name);
    archive.read("epoch", epoch);
    archive.read("step", step);
    if (model_name.toStringRef() != plan.model_name) {
      return Status::InvalidArgument(origin + " holds a \"" + model_name.toStringRef() +
                                     "\" model, this run trains \"" + plan.model_name + "\"");
    }
    const TrainingPosition saved{static_cast<int>(epoch.toInt()), step.toInt()};
    if (saved.step > plan.steps_per_epoch) {
      return Status::InvalidArgument(origin + " was saved at step " + std::to_string(saved.step) +
                                     " of an epoch; this run has only " +
                                     std::to_string(plan.steps_per_epoch) + " steps per epoch");
    }
    torch::serialize::InputArchive model_archive, optimizer_archive;
    archive.read("model", model_archive);
    archive.read("optimizer", optimizer_archive);
    model->load(model_archive);
    optimizer->load(optimizer_archive);
    torch::Tensor rng_state;
    archive.read("rng_state", rng_state);
    at::Generator generator = at::detail::getDefaultCPUGenerator();  // a handle, not a copy
    generator.set_state(rng_state);
    position_ = saved;
    return Status::OK();
  }

  Status Save(const std::string& path) override {
    return ReplaceFileAtomically(path, [&](const std::filesystem::path& temp) {
      try {
        torch::serialize::OutputArchive archive;
        WriteArchive(archive);
        archive.save_to(temp.string());
      } catch (const c10::Error& error) {
        return TorchError("cannot save the training state to " + path, error);
      }
      return Status::OK();
    });
  }

  Status Load(const std::string& path) override {
    try {
      torch::serialize::InputArchive archive;
      archive.load_from(path);
      return ReadArchive(archive, path);
    } catch (const c10::Error& error) {
      return TorchError("cannot load the training state from " + path, error);
    }
  }

  Status SaveWeights(const std::string& path) override {
    return ReplaceFileAtomically(path, [&](const std::filesystem::path& temp) {
      try {
        torch::save(model, temp.string());
      } catch (const c10::Error& error) {
        return TorchError("cannot save weights to " + path, error);
      }
      return Status::OK();
    });
  }

  // Every worker ends up with the chief's model, optimizer, RNG and position. With one worker
  // there is nothing to do.
  Status SyncFromChief() {
    if (plan.num_workers == 1) return Status::OK();
    std::string bytes;
    try {
      if (plan.is_chief) {
        std::ostringstream out;
        torch::serialize::OutputArchive archive;
        WriteArchive(archive);
        archive.save_to(out);
        bytes = out.str();
      }
    } catch (const c10::Error& error) {
      return TorchError("cannot serialize the chief's training state", error);
    }
    COHORT_RETURN_IF_ERROR(
        strategy->Broadcast(&bytes).WithContext("broadcasting the chief's initial training state"));
    if (plan.is_chief) return Status::OK();
    try {
      torch::serialize::InputArchive archive;
      archive.load_from(bytes.data(), bytes.size());
      return ReadArchive(archive, "the chief's training state");
    } catch (const c10::Error& error) {
      return TorchError("cannot load the chief's training state", error);
    }
  }

  // ---- Training ----

  struct StepResult {
    double loss = 0;
    double correct = 0;
  };

  // One optimizer step on this worker's batch; with several workers the gradients are averaged
  // across them before the step.
  StatusOr<StepResult> TrainStep(HostBatch& batch) {
    try {
      const int64_t count = static_cast<int64_t>(batch.labels.size());
      torch::Tensor images =
          torch::from_blob(batch.images.data(), {count, 1, train->rows, train->cols});
      torch::Tensor labels = torch::from_blob(batch.labels.data(), {count}, torch::kInt64);
      if (buckets) {
        buckets->BeginStep();
      } else {
        for (auto& parameter : model->parameters()) parameter.mutable_grad().reset();
      }
      torch::Tensor logits = model->forward(images);
      torch::Tensor loss = torch::nn::functional::cross_entropy(logits, labels);
      loss.backward();
      if (buckets) COHORT_RETURN_IF_ERROR(buckets->FinishStep(options.step_timeout));
      optimizer->step();
      torch::NoGradGuard no_grad;
      return StepResult{loss.item<double>(), logits.argmax(1).eq(labels).sum().item<double>()};
    } catch (const c10::Error& error) {
      return TorchError("the step failed", error);
    }
  }

  StatusOr<EvaluationResult> Evaluate() {
    const auto [begin, end] = EvaluationShard(test->size(), plan.num_workers, plan.rank);
    EvaluationSums sums;
    try {
      sums = EvaluateRange(model, *test, begin, end, options.eval_batch);
    } catch (const c10::Error& error) {
      return TorchError("evaluation failed", error);
    }
    std::vector<double> totals = {sums.loss_sum, sums.correct, sums.samples};
    COHORT_RETURN_IF_ERROR(strategy->SumAcrossWorkers(&totals).WithContext("evaluation"));
    sums = {totals[0], totals[1], totals[2]};
    return EvaluationResult{sums.loss(), sums.accuracy(), static_cast<int64_t>(sums.samples)};
  }

  Status RunEpoch(BatchPrefetcher& prefetcher, const std::vector<Callback*>& callbacks) {
    const int epoch = position_.epoch;
    const auto epoch_start = Clock::now();
    for (Callback* callback : callbacks) {
      COHORT_RETURN_IF_ERROR(callback->OnEpochBegin(plan, epoch));
    }
    double loss_sum = 0, correct = 0, samples = 0, train_seconds = 0;
    int64_t steps = 0;
    while (position_.step < plan.steps_per_epoch) {
      const auto step_start = Clock::now();
      auto batch = prefetcher.Next(options.step_timeout);
      if (!batch.ok()) return batch.status();
      StatusOr<StepResult> result = TrainStep(*batch);
      if (!result.ok()) {
        return result.status().WithContext("training step " + std::to_string(GlobalStep()));
      }
      const double batch_size = static_cast<double>(batch->labels.size());
      loss_sum += result->loss * batch_size;
      correct += result->correct;
      samples += batch_size;
      train_seconds += Seconds(Clock::now() - step_start);
      ++steps;
      ++position_.step;

      BatchLogs logs;
      logs.position = position_;
      logs.global_step = GlobalStep();
      logs.loss = loss_sum / samples;
      logs.accuracy = correct / samples;
      logs.samples_per_second = samples * plan.num_workers / train_seconds;
      for (Callback* callback : callbacks) {
        COHORT_RETURN_IF_ERROR(callback->OnBatchEnd(plan, *this, logs));
      }
    }

    // Training metrics over every worker's samples; a resumed epoch counts its steps since the
    // resume only.
    std::vector<double> totals = {loss_sum, correct, samples, train_seconds};
    COHORT_RETURN_IF_ERROR(strategy->SumAcrossWorkers(&totals).WithContext("epoch metrics"));
    auto evaluation = Evaluate();
    if (!evaluation.ok()) return evaluation.status();

    position_ = TrainingPosition{epoch + 1, 0};
    EpochLogs logs;
    logs.epoch = epoch;
    logs.global_step = GlobalStep();
    logs.steps = steps;
    logs.loss = totals[2] > 0 ? totals[0] / totals[2] : 0;
    logs.accuracy = totals[2] > 0 ? totals[1] / totals[2] : 0;
    logs.val_loss = evaluation->loss;
    logs.val_accuracy = evaluation->accuracy;
    logs.learning_rate = plan.learning_rate;
    // Workers run in lock step, so the average of their training times is the epoch's.
    const double seconds = totals[3] / plan.num_workers;
    logs.samples_per_second = seconds > 0 ? totals[2] / seconds : 0;
    logs.seconds = Seconds(Clock::now() - epoch_start);
    for (Callback* callback : callbacks) {
      COHORT_RETURN_IF_ERROR(callback->OnEpochEnd(plan, *this, logs));
    }
    return Status::OK();
  }

  int64_t GlobalStep() const { return position_.GlobalStep(plan.steps_per_epoch); }

  Status Fit(const std::vector<Callback*>& callbacks) {
    for (Callback* callback : callbacks) {
      COHORT_RETURN_IF_ERROR(callback->RestoreState(plan, *this));
    }
    COHORT_RETURN_IF_ERROR(SyncFromChief());
    if (!position_.AtStart()) {
      std::printf("resuming from epoch %d step %lld (global step %lld)\n", position_.epoch + 1,
                  static_cast<long long>(position_.step), static_cast<long long>(GlobalStep()));
      std::fflush(stdout);
    }
    for (Callback* callback : callbacks) {
      COHORT_RETURN_IF_ERROR(callback->OnTrainBegin(plan, *this));
    }
    {
      ShardSampler sampler(train->size(), plan.num_workers, plan.rank, plan.per_worker_batch,
                           plan.steps_per_epoch, plan.seed);
      BatchPrefetcher prefetcher(*train, std::move(sampler), GlobalStep(), plan.total_steps(),
                                 kPrefetchDepth);
      model->train();
      while (position_.epoch < plan.epochs) {
        COHORT_RETURN_IF_ERROR(RunEpoch(prefetcher, callbacks));
      }
    }
    // Every worker has finished its epoch-end writes (a non-chief's temporary backup, say) before
    // the chief cleans up the directories they share.
    COHORT_RETURN_IF_ERROR(strategy->Barrier().WithContext("end of training"));
    for (Callback* callback : callbacks) {
      COHORT_RETURN_IF_ERROR(callback->OnTrainEnd(plan, *this));
    }
    return Status::OK();
  }
};

Trainer::Trainer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Trainer::~Trainer() = default;

StatusOr<std::unique_ptr<Trainer>> Trainer::Create(const TrainerOptions& options,
                                                   const ImageDataset* train,
                                                   const ImageDataset* test, Strategy* strategy) {
  COHORT_RETURN_IF_ERROR(CheckOptions(options, *train, *test, strategy->num_workers()));
  auto impl = std::make_unique<Impl>();
  impl->options = options;
  impl->train = train;
  impl->test = test;
  impl->strategy = strategy;

  FitPlan& plan = impl->plan;
  plan.model_name = options.model_name;
  plan.epochs = options.epochs;
  plan.per_worker_batch = options.per_worker_batch;
  plan.num_workers = strategy->num_workers();
  plan.rank = strategy->rank();
  plan.is_chief = strategy->is_chief();
  plan.task_index = strategy->task_index();
  plan.seed = options.seed;
  plan.optimizer = options.optimizer;
  plan.learning_rate = options.learning_rate;
  plan.steps_per_epoch = options.steps_per_epoch > 0
                             ? options.steps_per_epoch
                             : std::max<int64_t>(1, train->size() / plan.global_batch());

  try {
    // Same seed on every worker, although the chief's weights are broadcast anyway: a worker that
    // builds the same model draws the same random numbers, so the RNG states match too.
    torch::manual_seed(options.seed);
    const ModelShape shape{train->rows, train->cols, std::max(train->num_classes, 2)};
    auto model = MakeModel(options.model_name, shape);
    if (!model.ok()) return model.status();
    impl->model = std::move(model).value();
    if (options.optimizer == "adam") {
      impl->optimizer = std::make_unique<FusedAdam>(
          impl->model->parameters(), torch::optim::AdamOptions(options.learning_rate));
    } else {
      impl->optimizer = std::make_unique<torch::optim::SGD>(
          impl->model->parameters(), torch::optim::SGDOptions(options.learning_rate));
    }
    if (plan.num_workers > 1) {
      impl->buckets = std::make_unique<GradientBuckets>(impl->model->parameters(), strategy,
                                                        options.bucket_bytes);
    }
  } catch (const c10::Error& error) {
    return TorchError("cannot build the " + options.model_name + " model", error);
  }
  return std::unique_ptr<Trainer>(new Trainer(std::move(impl)));
}

const FitPlan& Trainer::plan() const { return impl_->plan; }

Status Trainer::Fit(const std::vector<Callback*>& callbacks) {
  try {
    return impl_->Fit(callbacks);
  } catch (const c10::Error& error) {
    return TorchError("training failed", error);
  }
}

StatusOr<EvaluationResult> Trainer::Evaluate() { return impl_->Evaluate(); }

Status Trainer::SaveModel(const std::string& dir, const std::map<std::string, double>& metrics,
                          const std::string& data_dir) {
  const FitPlan& plan = impl_->plan;
  const std::string write_dir = WriteDirPath(dir, plan);
  COHORT_RETURN_IF_ERROR(MakeDirectories(write_dir));
  ModelManifest manifest;
  manifest.model = plan.model_name;
  manifest.input_shape = {1, impl_->train->rows, impl_->train->cols};
  manifest.classes = ClassNamesFor(data_dir, std::max(impl_->train->num_classes, 2));
  manifest.metrics = metrics;
  TrainingConfig& config = manifest.training;
  config.epochs = plan.epochs;
  config.steps_per_epoch = plan.steps_per_epoch;
  config.per_worker_batch = plan.per_worker_batch;
  config.num_workers = plan.num_workers;
  config.global_batch = plan.global_batch();
  config.global_steps = global_step();
  config.optimizer = plan.optimizer;
  config.learning_rate = plan.learning_rate;
  config.seed = plan.seed;
  config.data_dir = data_dir;
  manifest.created_at = FormatTime(std::chrono::system_clock::now());
  // Weights first: a manifest is only ever next to complete weights.
  COHORT_RETURN_IF_ERROR(
      impl_->SaveWeights((std::filesystem::path(write_dir) / manifest.weights).string()));
  COHORT_RETURN_IF_ERROR(WriteManifest(write_dir, manifest));
  return RemoveTempWriteDir(dir, plan);
}

std::vector<float> Trainer::ParameterVector() const {
  std::vector<float> values;
  torch::NoGradGuard no_grad;
  for (const auto& parameter : impl_->model->parameters()) {
    torch::Tensor flat = parameter.detach().contiguous().reshape({-1});
    values.insert(values.end(), flat.data_ptr<float>(), flat.data_ptr<float>() + flat.numel());
  }
  return values;
}

int64_t Trainer::global_step() const { return impl_->GlobalStep(); }

}  // namespace cohort::train
