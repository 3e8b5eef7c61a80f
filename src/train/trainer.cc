#include "train/trainer.h"

#include <torch/optim/sgd.h>
#include <torch/serialize.h>
#include <torch/utils.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <sstream>

#include "base/file.h"
#include "base/object_url.h"
#include "base/storage.h"
#include "base/time.h"
#include "train/backup_and_restore.h"
#include "train/data/batch_prefetcher.h"
#include "train/data/shard_sampler.h"
#include "train/evaluation.h"
#include "train/fused_adam.h"
#include "train/gradient_buckets.h"
#include "train/model_manifest.h"
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

// A number as a person reads it: "nan", "inf", "-inf" or %g.
std::string FormatNumber(double value) {
  if (std::isnan(value)) return "nan";  // printf may say "-nan", which means nothing more
  char text[32];
  std::snprintf(text, sizeof(text), "%g", value);
  return text;
}

Status CheckOptions(const TrainerOptions& options, const BatchSource& train,
                    const BatchSource& test, int num_workers) {
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
  if (options.external_optimizer == nullptr && options.optimizer != "adam" &&
      options.optimizer != "sgd") {
    return Status::InvalidArgument("unknown optimizer \"" + options.optimizer +
                                   "\" (known: adam, sgd)");
  }
  if (options.max_rollbacks < 0) return Status::InvalidArgument("max_rollbacks must be >= 0");
  if (options.synchronization != Synchronization::kAllReduce &&
      options.gradient_compression != GradientCompression::kNone) {
    return Status::InvalidArgument(
        std::string("gradient compression ") + Name(options.gradient_compression) +
        " rounds all-reduce buckets; synchronization " + Name(options.synchronization) +
        " takes float32 gradients (use gradient compression none with it)");
  }
  if (options.synchronization == Synchronization::kPowerSgd) {
    COHORT_RETURN_IF_ERROR(CheckPowerSgdOptions(options.power_sgd));
  }
  if (options.synchronization == Synchronization::kLocalSgd) {
    COHORT_RETURN_IF_ERROR(CheckLocalSgdOptions(options.local_sgd));
  }
  if (!(options.rollback_learning_rate_factor > 0 && options.rollback_learning_rate_factor <= 1)) {
    return Status::InvalidArgument("rollback_learning_rate_factor must be in (0, 1]");
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
  return Status::OK();
}

}  // namespace

StatusOr<Synchronization> ParseSynchronization(const std::string& text) {
  if (text == "allreduce") return Synchronization::kAllReduce;
  if (text == "powersgd") return Synchronization::kPowerSgd;
  if (text == "local_sgd") return Synchronization::kLocalSgd;
  return Status::InvalidArgument(
      "synchronization: expected allreduce, powersgd or local_sgd, got \"" + text.substr(0, 64) +
      "\"");
}

const char* Name(Synchronization synchronization) {
  switch (synchronization) {
    case Synchronization::kAllReduce:
      return "allreduce";
    case Synchronization::kPowerSgd:
      return "powersgd";
    case Synchronization::kLocalSgd:
      return "local_sgd";
  }
  return "unknown";
}

StatusOr<TrainerOptions::NonFinitePolicy> ParseNonFinitePolicy(const std::string& text) {
  if (text == "stop") return TrainerOptions::NonFinitePolicy::kStop;
  if (text == "rollback") return TrainerOptions::NonFinitePolicy::kRollback;
  return Status::InvalidArgument("the non-finite policy is stop or rollback, not \"" +
                                 text.substr(0, 64) + "\"");
}

struct Trainer::Impl : public TrainingState {
  TrainerOptions options;
  const BatchSource* train = nullptr;
  const BatchSource* test = nullptr;
  Strategy* strategy = nullptr;
  FitPlan plan;
  std::unique_ptr<TrainableModel> model;
  std::unique_ptr<torch::optim::Optimizer> owned_optimizer;
  torch::optim::Optimizer* optimizer = nullptr;  // owned_optimizer or the program's own
  // With several workers, one of these three, as options.synchronization says.
  std::unique_ptr<GradientBuckets> buckets;
  std::unique_ptr<PowerSgdReducer> power_sgd;
  std::unique_ptr<LocalSgdAverager> local_sgd;
  // Local SGD: this worker's steps not applied (non-finite) since the last synchronization.
  int64_t local_skipped_steps = 0;
  // Gradient zeros counted this epoch (options.report_gradient_zeros): all values, and the
  // largest parameter's.
  double zero_values = 0, all_values = 0, largest_zero_values = 0, largest_values = 0;
  TrainingPosition position_;

  TrainingPosition position() const override { return position_; }

  // ---- TrainingState: one archive with model, optimizer, RNG and position ----

  void WriteArchive(torch::serialize::OutputArchive& archive) {
    torch::serialize::OutputArchive model_archive, optimizer_archive;
    model->module().save(model_archive);
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
    model->module().load(model_archive);
    optimizer->load(optimizer_archive);
    torch::Tensor rng_state;
    archive.read("rng_state", rng_state);
    at::Generator generator = at::detail::getDefaultCPUGenerator();  // a handle, not a copy
    generator.set_state(rng_state);
    position_ = saved;
    return Status::OK();
  }

  // The archive in memory, then one WriteFileAtomically: a full disk or a failing device comes
  // back as a Status naming the file and the system's words, nothing partial is left, and the
  // previous file stays (libtorch's own file writer reports a short write from a destructor).
  StatusOr<std::string> Serialize(bool whole_state, const std::string& path) {
    try {
      std::ostringstream out;
      torch::serialize::OutputArchive archive;
      if (whole_state) {
        WriteArchive(archive);
      } else {
        model->module().save(archive);
      }
      archive.save_to(out);
      return out.str();
    } catch (const c10::Error& error) {
      return TorchError("cannot serialize " +
                            std::string(whole_state ? "the training state" : "the weights") +
                            " for " + path,
                        error);
    }
  }

  StatusOr<FileChecksum> Save(const std::string& path) override {
    StatusOr<std::string> bytes = Serialize(/*whole_state=*/true, path);
    if (!bytes.ok()) return bytes.status();
    return WriteFileWithChecksum(path, *bytes);
  }

  Status Load(std::string_view bytes, const std::string& origin) override {
    try {
      torch::serialize::InputArchive archive;
      archive.load_from(bytes.data(), bytes.size());
      return ReadArchive(archive, origin);
    } catch (const c10::Error& error) {
      return TorchError("cannot load the training state from " + origin, error);
    }
  }

  StatusOr<FileChecksum> SaveWeights(const std::string& path) override {
    StatusOr<std::string> bytes = Serialize(/*whole_state=*/false, path);
    if (!bytes.ok()) return bytes.status();
    return WriteFileWithChecksum(path, *bytes);
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

  // What the last TrainStep waited for its gradient sums after backward.
  double last_allreduce_wait_seconds = 0;

  // One optimizer step on this worker's batch; with several workers the gradients are averaged
  // across them before the step. Returns the batch's mean loss and its metric sums.
  // The L2 norm of every gradient together (after the all-reduce: the same on every worker).
  double GradientNorm() {
    torch::NoGradGuard no_grad;
    double sum_of_squares = 0;
    for (const auto& parameter : model->module().parameters()) {
      if (parameter.grad().defined()) {
        sum_of_squares += parameter.grad().to(torch::kDouble).square().sum().item<double>();
      }
    }
    return std::sqrt(sum_of_squares);
  }

  // Whether a weight is NaN or infinite: the name of the first such parameter, else "".
  std::string NonFiniteParameter() {
    torch::NoGradGuard no_grad;
    for (const auto& item : model->module().named_parameters()) {
      if (!torch::isfinite(item.value()).all().item<bool>()) return item.key();
    }
    return "";
  }

  // Set when the last TrainStep found a non-finite loss or gradient norm (and did not apply it).
  std::optional<std::string> non_finite;

  // Counts the exact zeros of the gradients about to be applied (report_gradient_zeros).
  void CountGradientZeros() {
    torch::NoGradGuard no_grad;
    int64_t largest_size = -1;
    double largest_zeros = 0;
    for (const auto& parameter : model->module().parameters()) {
      const torch::Tensor& gradient = parameter.grad();
      if (!gradient.defined()) continue;
      const double zeros = static_cast<double>(gradient.eq(0).sum().item<int64_t>());
      zero_values += zeros;
      all_values += static_cast<double>(gradient.numel());
      if (gradient.numel() > largest_size) {
        largest_size = gradient.numel();
        largest_zeros = zeros;
      }
    }
    if (largest_size > 0) {
      largest_zero_values += largest_zeros;
      largest_values += static_cast<double>(largest_size);
    }
  }

  // The name of the parameter with the most values, for the zero report.
  std::string LargestParameterName() {
    std::string name;
    int64_t size = -1;
    for (const auto& item : model->module().named_parameters()) {
      if (item.value().numel() > size) {
        size = item.value().numel();
        name = item.key();
      }
    }
    return name;
  }

  void PrintGradientZeros(int epoch) {
    if (!options.report_gradient_zeros || all_values == 0) return;
    std::printf(
        "epoch %d gradient zeros (%s, rank %d): %.1f%% of all gradient values, %.1f%% of the "
        "largest parameter's (%s)\n",
        epoch + 1, plan.model_name.c_str(), plan.rank, 100 * zero_values / all_values,
        largest_values > 0 ? 100 * largest_zero_values / largest_values : 0.0,
        LargestParameterName().c_str());
    std::fflush(stdout);
    zero_values = all_values = largest_zero_values = largest_values = 0;
  }

  // Replaces every floating point buffer with its average over the workers (only when the model
  // has any; every worker has the same model, so all decide alike).
  Status AverageBuffers() {
    if (plan.num_workers == 1) return Status::OK();
    torch::NoGradGuard no_grad;
    std::vector<torch::Tensor> buffers;
    for (const torch::Tensor& buffer : model->module().buffers()) {
      if (buffer.is_floating_point()) buffers.push_back(buffer);
    }
    if (buffers.empty()) return Status::OK();
    std::vector<double> values;
    for (const torch::Tensor& buffer : buffers) {
      torch::Tensor flat = buffer.to(torch::kFloat64).contiguous().reshape({-1});
      values.insert(values.end(), flat.data_ptr<double>(), flat.data_ptr<double>() + flat.numel());
    }
    COHORT_RETURN_IF_ERROR(strategy->SumAcrossWorkers(&values).WithContext("averaging buffers"));
    size_t offset = 0;
    for (torch::Tensor& buffer : buffers) {
      torch::Tensor sums =
          torch::from_blob(values.data() + offset, {buffer.numel()}, torch::kFloat64).clone();
      buffer.copy_((sums / plan.num_workers).view_as(buffer));
      offset += static_cast<size_t>(buffer.numel());
    }
    return Status::OK();
  }

  // Local SGD: the outer step; a non-finite step anywhere since the last one ends the step here.
  Status SynchronizeLocalSgd() {
    double skipped = 0;
    COHORT_RETURN_IF_ERROR(
        local_sgd
            ->Synchronize(options.step_timeout, static_cast<double>(local_skipped_steps), &skipped)
            .WithContext("local SGD synchronization"));
    local_skipped_steps = 0;
    if (skipped > 0) {
      non_finite = std::to_string(static_cast<int64_t>(std::llround(skipped))) +
                   " local step(s) since the last synchronization had a NaN or infinite loss or "
                   "gradient norm and were not applied";
      return Status::Aborted(*non_finite);
    }
    return Status::OK();
  }

  // `ends_period`: with local SGD, whether this step is the last before a synchronization.
  StatusOr<std::pair<double, std::map<std::string, double>>> TrainStep(const Batch& batch,
                                                                       bool ends_period) {
    try {
      if (buckets) {
        buckets->BeginStep();
      } else {
        for (auto& parameter : model->module().parameters()) parameter.mutable_grad().reset();
      }
      StepResult result = model->Step(batch);
      result.loss.backward();
      const auto wait_start = Clock::now();
      if (buckets) {
        COHORT_RETURN_IF_ERROR(buckets->FinishStep(options.step_timeout));
        last_allreduce_wait_seconds = Seconds(Clock::now() - wait_start);
      } else if (power_sgd) {
        COHORT_RETURN_IF_ERROR(power_sgd->Reduce(GlobalStep(), options.step_timeout));
        last_allreduce_wait_seconds = Seconds(Clock::now() - wait_start);
      }
      const double loss = result.loss.item<double>();
      const double norm = GradientNorm();
      if (local_sgd) {
        // Each worker's own step; workers learn of a non-finite one at the synchronization.
        if (std::isfinite(loss) && std::isfinite(norm)) {
          if (options.report_gradient_zeros) CountGradientZeros();
          optimizer->step();
        } else {
          ++local_skipped_steps;
        }
        last_allreduce_wait_seconds = 0;
        if (ends_period) {
          const auto sync_start = Clock::now();
          COHORT_RETURN_IF_ERROR(SynchronizeLocalSgd());
          last_allreduce_wait_seconds = Seconds(Clock::now() - sync_start);
        }
        return std::make_pair(loss, std::move(result.metric_sums));
      }
      if (!std::isfinite(loss) || !std::isfinite(norm)) {
        non_finite = "the loss is " + FormatNumber(loss) + " and the gradient norm " +
                     FormatNumber(norm) + "; the step was not applied";
        return Status::Aborted(*non_finite);
      }
      if (options.report_gradient_zeros) CountGradientZeros();
      optimizer->step();
      return std::make_pair(loss, std::move(result.metric_sums));
    } catch (const c10::Error& error) {
      return TorchError("the step failed", error);
    }
  }

  StatusOr<EvaluationResult> Evaluate() {
    if (options.average_buffers_before_evaluation) COHORT_RETURN_IF_ERROR(AverageBuffers());
    const auto [begin, end] = EvaluationShard(test->size(), plan.num_workers, plan.rank);
    StatusOr<EvaluationSums> sums = [&]() -> StatusOr<EvaluationSums> {
      try {
        return EvaluateRange(*model, *test, begin, end, options.eval_batch);
      } catch (const c10::Error& error) {
        return TorchError("evaluation failed", error);
      }
    }();
    if (!sums.ok()) return sums.status();
    std::vector<double> totals = sums->ToVector();
    COHORT_RETURN_IF_ERROR(strategy->SumAcrossWorkers(&totals).WithContext("evaluation"));
    sums->FromVector(totals);
    return sums->Averages();
  }

  Status RunEpoch(BatchPrefetcher& prefetcher, const std::vector<Callback*>& callbacks) {
    const int epoch = position_.epoch;
    const auto epoch_start = Clock::now();
    for (Callback* callback : callbacks) {
      COHORT_RETURN_IF_ERROR(callback->OnEpochBegin(plan, epoch));
    }
    EvaluationSums sums;  // the training figures of this worker's steps
    double train_seconds = 0;
    int64_t steps = 0;
    while (position_.step < plan.steps_per_epoch) {
      const auto step_start = Clock::now();
      auto batch = prefetcher.Next(options.step_timeout);
      if (!batch.ok()) return batch.status();
      const int64_t done = position_.step + 1;
      const bool ends_period =
          local_sgd != nullptr &&
          (done % options.local_sgd.sync_every_steps == 0 || done == plan.steps_per_epoch);
      auto result = TrainStep(*batch, ends_period);
      if (!result.ok()) {
        return result.status().WithContext("training step " + std::to_string(GlobalStep()));
      }
      const double batch_size = static_cast<double>(batch->size());
      sums.loss_sum += result->first * batch_size;
      for (const auto& [name, sum] : result->second) sums.metric_sums[name] += sum;
      sums.samples += batch_size;
      const double step_seconds = Seconds(Clock::now() - step_start);
      train_seconds += step_seconds;
      ++steps;
      ++position_.step;

      BatchLogs logs;
      logs.position = position_;
      logs.global_step = GlobalStep();
      const EvaluationResult averages = sums.Averages();
      logs.loss = averages.loss;
      logs.metrics = averages.metrics;
      logs.samples_per_second = sums.samples * plan.num_workers / train_seconds;
      logs.step_seconds = step_seconds;
      logs.allreduce_wait_seconds = last_allreduce_wait_seconds;
      for (Callback* callback : callbacks) {
        COHORT_RETURN_IF_ERROR(callback->OnBatchEnd(plan, *this, logs));
      }
    }

    // Training metrics over every worker's samples; a resumed epoch counts its steps since the
    // resume only.
    std::vector<double> totals = sums.ToVector();
    totals.push_back(train_seconds);
    COHORT_RETURN_IF_ERROR(strategy->SumAcrossWorkers(&totals).WithContext("epoch metrics"));
    const double summed_seconds = totals.back();
    totals.pop_back();
    sums.FromVector(totals);
    auto evaluation = Evaluate();
    if (!evaluation.ok()) return evaluation.status();
    PrintGradientZeros(epoch);

    position_ = TrainingPosition{epoch + 1, 0};
    EpochLogs logs;
    logs.epoch = epoch;
    logs.global_step = GlobalStep();
    logs.steps = steps;
    const EvaluationResult training = sums.Averages();
    logs.loss = training.loss;
    logs.metrics = training.metrics;
    logs.val_loss = evaluation->loss;
    logs.val_metrics = evaluation->metrics;
    logs.learning_rate = plan.learning_rate;
    // Workers run in lock step, so the average of their training times is the epoch's.
    const double seconds = summed_seconds / plan.num_workers;
    logs.samples_per_second = seconds > 0 ? sums.samples / seconds : 0;
    logs.seconds = Seconds(Clock::now() - epoch_start);
    for (Callback* callback : callbacks) {
      COHORT_RETURN_IF_ERROR(callback->OnEpochEnd(plan, *this, logs));
    }
    return Status::OK();
  }

  int64_t GlobalStep() const { return position_.GlobalStep(plan.steps_per_epoch); }

  // Trains from the current position to the end of the last epoch.
  Status TrainEpochs(const std::vector<Callback*>& callbacks) {
    ShardSampler sampler(train->size(), plan.num_workers, plan.rank, plan.per_worker_batch,
                         plan.steps_per_epoch, plan.seed);
    BatchPrefetcher prefetcher(*train, std::move(sampler), GlobalStep(), plan.total_steps(),
                               kPrefetchDepth);
    model->module().train();
    while (position_.epoch < plan.epochs) {
      COHORT_RETURN_IF_ERROR(RunEpoch(prefetcher, callbacks));
    }
    return Status::OK();
  }

  int rollbacks = 0;

  // PowerSGD's errors and Q and local SGD's anchor start afresh from the weights every worker now
  // has (the chief's).
  void ResetSynchronization() {
    if (power_sgd) power_sgd->Reset();
    if (local_sgd) local_sgd->Reset();
    local_skipped_steps = 0;
  }

  // After a non-finite step (`status`, naming it): OK when the policy rolled training back to the
  // newest good backup with a lower learning rate, else the permanent error that ends the run.
  Status HandleNonFinite(const Status& status, const std::vector<Callback*>& callbacks) {
    const std::string what = status.message();
    if (options.non_finite == TrainerOptions::NonFinitePolicy::kStop) {
      return Status::FailedPrecondition(what + " (the non-finite policy is stop)");
    }
    if (rollbacks >= options.max_rollbacks) {
      return Status::FailedPrecondition(what + "; already rolled back " +
                                        std::to_string(rollbacks) + " times, the most allowed");
    }
    BackupAndRestore* backup = nullptr;
    for (Callback* callback : callbacks) {
      if (auto* found = dynamic_cast<BackupAndRestore*>(callback)) backup = found;
    }
    if (backup == nullptr) {
      return Status::FailedPrecondition(what + "; no BackupAndRestore to roll back to");
    }
    std::string restored;
    if (plan.is_chief) {
      StatusOr<std::string> path = backup->RestoreNewestGood(plan, *this);
      if (!path.ok()) return path.status().WithContext(what + "; rolling back");
      if (path->empty()) {
        return Status::FailedPrecondition(what + "; no backup written yet to roll back to");
      }
      restored = *path;
    }
    COHORT_RETURN_IF_ERROR(SyncFromChief());
    ResetSynchronization();
    ++rollbacks;
    plan.learning_rate *= options.rollback_learning_rate_factor;
    for (auto& group : optimizer->param_groups()) group.options().set_lr(plan.learning_rate);
    std::printf(
        "non-finite step: %s; rolled back to global step %lld%s with learning rate %g "
        "(rollback %d of at most %d)\n",
        what.c_str(), static_cast<long long>(GlobalStep()),
        restored.empty() ? "" : (" (" + restored + ")").c_str(), plan.learning_rate, rollbacks,
        options.max_rollbacks);
    std::fflush(stdout);
    return Status::OK();
  }

  Status Fit(const std::vector<Callback*>& callbacks) {
    for (Callback* callback : callbacks) {
      COHORT_RETURN_IF_ERROR(callback->RestoreState(plan, *this));
    }
    COHORT_RETURN_IF_ERROR(SyncFromChief());
    ResetSynchronization();
    if (!position_.AtStart()) {
      std::printf("resuming from epoch %d step %lld (global step %lld)\n", position_.epoch + 1,
                  static_cast<long long>(position_.step), static_cast<long long>(GlobalStep()));
      std::fflush(stdout);
    }
    for (Callback* callback : callbacks) {
      COHORT_RETURN_IF_ERROR(callback->OnTrainBegin(plan, *this));
    }
    while (true) {
      Status status = TrainEpochs(callbacks);
      if (status.ok()) break;
      if (!non_finite) return status;
      non_finite.reset();
      COHORT_RETURN_IF_ERROR(HandleNonFinite(status, callbacks));
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
                                                   const ModelFactory& make_model,
                                                   const BatchSource* train,
                                                   const BatchSource* test, Strategy* strategy) {
  COHORT_RETURN_IF_ERROR(CheckOptions(options, *train, *test, strategy->num_workers()));
  auto impl = std::make_unique<Impl>();
  impl->options = options;
  impl->train = train;
  impl->test = test;
  impl->strategy = strategy;

  FitPlan& plan = impl->plan;
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
    auto model = make_model();
    if (!model.ok()) return model.status();
    impl->model = std::move(model).value();
    plan.model_name = impl->model->name();
    const std::vector<torch::Tensor> parameters = impl->model->module().parameters();
    if (options.external_optimizer != nullptr) {
      impl->optimizer = options.external_optimizer;
      if (!impl->optimizer->param_groups().empty()) {
        plan.learning_rate = impl->optimizer->param_groups()[0].options().get_lr();
      }
    } else if (options.optimizer == "adam") {
      impl->owned_optimizer =
          std::make_unique<FusedAdam>(parameters, torch::optim::AdamOptions(options.learning_rate));
    } else {
      impl->owned_optimizer = std::make_unique<torch::optim::SGD>(
          parameters, torch::optim::SGDOptions(options.learning_rate));
    }
    if (impl->owned_optimizer) impl->optimizer = impl->owned_optimizer.get();
    if (plan.num_workers > 1) {
      switch (options.synchronization) {
        case Synchronization::kAllReduce:
          impl->buckets = std::make_unique<GradientBuckets>(
              parameters, strategy, options.bucket_bytes, options.gradient_compression);
          break;
        case Synchronization::kPowerSgd: {
          PowerSgdOptions power_sgd = options.power_sgd;
          power_sgd.seed = options.seed;
          impl->power_sgd = std::make_unique<PowerSgdReducer>(parameters, strategy, power_sgd);
          break;
        }
        case Synchronization::kLocalSgd:
          impl->local_sgd = std::make_unique<LocalSgdAverager>(&impl->model->module(), strategy,
                                                               options.local_sgd);
          break;
      }
    }
  } catch (const c10::Error& error) {
    const std::string what = impl->model ? "the " + impl->model->name() + " model" : "the model";
    return TorchError("cannot build " + what, error);
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
  // Only the chief's model is kept; another worker's copy would only cost disk space.
  if (!plan.is_chief) return Status::OK();
  const std::string& write_dir = dir;
  const bool in_bucket = IsStorageUrl(write_dir);
  if (!in_bucket) COHORT_RETURN_IF_ERROR(MakeDirectories(write_dir));
  ModelManifest manifest;
  manifest.model = plan.model_name;
  impl_->model->DescribeInputs(&manifest);
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
  // A diverged model is never the final model, and its metrics would not be valid JSON numbers.
  if (const std::string parameter = impl_->NonFiniteParameter(); !parameter.empty()) {
    return Status::FailedPrecondition("the model is not saved to " + dir + ": its parameter \"" +
                                      parameter + "\" holds NaN or infinite values");
  }
  for (const auto& [name, value] : metrics) {
    if (!std::isfinite(value)) {
      return Status::FailedPrecondition("the model is not saved to " + dir + ": its metric \"" +
                                        name + "\" is " + FormatNumber(value));
    }
  }
  // Weights first: a manifest is only ever next to complete weights, whose checksum it records.
  // In a bucket the manifest object is what commits the model, so an earlier model's manifest
  // goes first: a kill before the new manifest is written leaves no model, never an old manifest
  // beside new weights.
  if (in_bucket) {
    COHORT_RETURN_IF_ERROR(RemoveStorageFile(JoinStoragePath(write_dir, kManifestFile))
                               .WithContext("the model is not saved to " + dir));
  }
  StatusOr<FileChecksum> weights = impl_->SaveWeights(JoinStoragePath(write_dir, manifest.weights));
  if (!weights.ok()) return weights.status();
  manifest.files = {*weights};
  return WriteManifest(write_dir, manifest);
}

std::vector<float> Trainer::ParameterVector() const {
  std::vector<float> values;
  torch::NoGradGuard no_grad;
  for (const auto& parameter : impl_->model->module().parameters()) {
    torch::Tensor flat = parameter.detach().contiguous().reshape({-1});
    values.insert(values.end(), flat.data_ptr<float>(), flat.data_ptr<float>() + flat.numel());
  }
  return values;
}

int64_t Trainer::global_step() const { return impl_->GlobalStep(); }

}  // namespace cohort::train
