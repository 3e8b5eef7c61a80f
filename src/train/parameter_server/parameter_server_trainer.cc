#include "train/parameter_server/parameter_server_trainer.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <sstream>
#include <string_view>
#include <utility>

#include "base/file.h"
#include "base/object_url.h"
#include "base/storage.h"
#include "base/time.h"
#include "cluster/peer_report.h"
#include "ps/checkpoint.h"
#include "ps/parameter_server_client.h"
#include "train/model_manifest.h"
#include "train/parameter_server/parameter_sources.h"
#include "train/summary/summary_run_writer.h"

namespace cohort::train {
namespace {

namespace fs = std::filesystem;

// One line for the job's status (the replica's termination message, which describe's
// ExitedWithCode event quotes), as train/program's WriteTerminationMessage leaves it; this layer
// sits below train/program.
void LeaveTerminationMessage(const std::string& message) {
  const char* path = std::getenv(cluster::kTerminationMessagePathVariable);
  if (path == nullptr || *path == '\0') return;
  IgnoreError(WriteFileInPlace(
                  path, std::string_view(message).substr(0, cluster::kMaxTerminationMessageBytes)),
              "the message only adds to the log line printed beside it");
}

// What one pull of the dense parameters fills: the model's variables and the global step.
struct DenseBuffers {
  std::vector<std::vector<float>> values;
  float global_step = 0;
};

std::vector<std::pair<std::string, float*>> PullList(const std::vector<ps::DenseVariable>& names,
                                                     DenseBuffers& buffers) {
  std::vector<std::pair<std::string, float*>> outputs;
  for (size_t i = 0; i < buffers.values.size(); ++i) {
    outputs.emplace_back(names[i].shape.name, buffers.values[i].data());
  }
  outputs.emplace_back(kGlobalStepVariable, &buffers.global_step);
  return outputs;
}

// Copies a checkpoint (its shards, then its manifest, as it was written) into `destination`;
// either may be in a bucket (base/storage.h).
Status CopyCheckpoint(const std::string& source, const std::string& manifest_file,
                      const std::string& destination) {
  std::error_code error;
  if (!IsStorageUrl(destination)) fs::create_directories(destination, error);
  if (error) return Status::IOError("cannot create " + destination + ": " + error.message());
  auto parameters = CheckpointParameters::Load(source, manifest_file);
  if (!parameters.ok()) return parameters.status();
  // Loading checked that the manifest is whole and vouches for each shard file.
  std::vector<std::string> files;
  for (const ps::SavedShard& shard : (*parameters)->shards()) files.push_back(shard.file);
  files.push_back(manifest_file);
  for (const std::string& name : files) {
    if (IsStorageUrl(source) || IsStorageUrl(destination)) {
      StatusOr<std::string> bytes = ReadStorageFile(source + "/" + name);
      if (!bytes.ok()) return bytes.status().WithContext("copying the final checkpoint");
      COHORT_RETURN_IF_ERROR(WriteStorageFileAtomically(destination + "/" + name, *bytes));
      continue;
    }
    fs::copy_file(source + "/" + name, destination + "/" + name,
                  fs::copy_options::overwrite_existing, error);
    if (error) {
      return Status::IOError("cannot copy " + source + "/" + name + " to " + destination + ": " +
                             error.message());
    }
  }
  return Status::OK();
}

}  // namespace

int64_t FinalCheckpointStep(const std::string& checkpoint_dir, const std::string& run_identity) {
  StatusOr<std::string> text = ReadStorageFile(checkpoint_dir + "/" + kFinalCheckpointFile);
  if (!text.ok()) return -1;
  std::istringstream in(*text);
  long long step = -1;
  std::string writer;
  if (!(in >> step)) return -1;
  in >> writer;  // absent in open mode
  return writer == run_identity ? step : -1;
}

StatusOr<ParameterServerTrainingResult> TrainWithParameterServers(
    const ParameterServerTrainingOptions& options, const ParameterServerModel& model,
    const ExampleSource& train, const ExampleSource& eval) {
  const auto print = [&](const std::string& line) {
    if (options.print) options.print(line);
  };
  const std::string prefix = options.program_name.empty() ? "" : options.program_name + ": ";
  const std::vector<cluster::TaskId> trainers = cluster::WorkerTasks(options.config.cluster);
  const std::optional<int> rank = cluster::WorkerRank(options.config.cluster, options.config.task);
  if (!rank) {
    return Status::InvalidArgument("task " + options.config.task.ToString() +
                                   " does not train: only the chief, master and workers do");
  }
  const int num_trainers = static_cast<int>(trainers.size());
  const bool is_chief = options.config.task == cluster::ChiefTask(options.config.cluster);

  // Example i belongs to training task i mod tasks.
  std::vector<int64_t> shard;
  for (int64_t i = *rank; i < train.size(); i += num_trainers) shard.push_back(i);
  if (static_cast<int64_t>(shard.size()) < options.per_worker_batch) {
    return Status::InvalidArgument("training task " + std::to_string(*rank) + " has " +
                                   std::to_string(shard.size()) + " " + options.example_noun +
                                   ", fewer than one batch of " +
                                   std::to_string(options.per_worker_batch));
  }
  const int64_t batches_per_pass = static_cast<int64_t>(shard.size()) / options.per_worker_batch;
  // One global step per push in async mode (TensorFlow's global_step); one per aggregated step in
  // sync mode.
  const int64_t total_steps =
      options.epochs * train.size() / options.per_worker_batch / (options.sync ? num_trainers : 1);

  ps::ParameterServerClientOptions client_options;
  client_options.connection.job_name = options.job_name;
  client_options.connection.self = options.config.task;
  client_options.connection.secret = options.secret;
  client_options.connection.retry_timeout = options.retry_timeout;
  client_options.connection.request_timeout = options.request_timeout;
  client_options.connection.log = [&](const std::string& line) { print(line); };
  client_options.cluster = options.config.cluster;
  client_options.sync = options.sync;
  client_options.max_staleness = options.max_staleness;
  auto client = ps::ParameterServerClient::Connect(client_options);
  if (!client.ok()) return client.status();
  // The model's variables and, last, global_step.
  std::vector<ps::DenseVariable> variables = model.DenseVariables();
  variables.push_back(
      {{kGlobalStepVariable, 1, 1}, {.kind = ps::OptimizerKind::kSgd, .learning_rate = 1.0f}, {0}});
  const std::vector<ps::EmbeddingTableSpec> tables = model.Tables();
  if (is_chief) {
    COHORT_RETURN_IF_ERROR((*client)->CreateVariables(variables));
    for (const ps::EmbeddingTableSpec& table : tables) {
      COHORT_RETURN_IF_ERROR((*client)->CreateTable(table));
    }
  } else {
    // As TensorFlow's workers: the chief initialises the model, the others wait until it is ready
    // and then train from its values (their own initial values and seed do not matter).
    COHORT_RETURN_IF_ERROR((*client)->WaitForVariables(variables, tables,
                                                       cluster::ChiefTask(options.config.cluster),
                                                       options.model_ready_timeout));
  }
  ServerParameters servers(client->get());

  DenseBuffers current, next;
  for (size_t i = 0; i + 1 < variables.size(); ++i) {
    const size_t size = static_cast<size_t>(variables[i].shape.rows * variables[i].shape.row_width);
    current.values.emplace_back(size);
    next.values.emplace_back(size);
  }
  std::vector<std::pair<std::string, const float*>> pushes(variables.size());
  std::vector<std::vector<float>> dense_gradients;
  const float step_increment = -1.0f;  // SGD at learning rate 1: global_step += 1

  std::unique_ptr<SummaryRunWriter> summaries;
  if (is_chief && !options.tensorboard_dir.empty()) {
    auto writer = SummaryRunWriter::Create(JoinStoragePath(options.tensorboard_dir, "train"), {});
    if (!writer.ok()) return writer.status();
    summaries = std::move(*writer);
  }

  ps::PendingPull pending = (*client)->StartPull(PullList(variables, next));
  // Every early return waits for the background pull first: it writes into `next`.
  const auto fail = [&](Status status) -> Status {
    if (pending.valid()) {
      IgnoreError(pending.Wait(), "the failure being returned already explains the stop");
    }
    return status;
  };
  ParameterServerTrainingResult result;
  result.is_chief = is_chief;
  int64_t position = -1;
  int64_t last_checkpoint = -1;
  // Epochs whose end the chief reported (on_epoch_end), and global steps per epoch.
  int64_t epochs_reported = 0;
  const int64_t steps_per_epoch = std::max<int64_t>(1, total_steps / std::max(1, options.epochs));
  // The epochs ended at `global_step`; the last ends only when training does.
  const auto epochs_ended = [&](int64_t global_step) -> int64_t {
    return global_step >= total_steps
               ? options.epochs
               : std::min<int64_t>(options.epochs - 1, global_step / steps_per_epoch);
  };
  const auto report_epochs = [&](int64_t global_step) -> Status {
    const int64_t ended = epochs_ended(global_step);
    for (; is_chief && options.on_epoch_end && epochs_reported < ended; ++epochs_reported) {
      COHORT_RETURN_IF_ERROR(options.on_epoch_end(servers, static_cast<int>(epochs_reported + 1)));
    }
    return Status::OK();
  };
  double loss_sum = 0;
  int64_t loss_count = 0;
  std::unique_ptr<EncodedBatch> batch = train.NewBatch();
  std::vector<std::pair<std::string, double>> metric_sums;
  const auto started = std::chrono::steady_clock::now();
  while (true) {
    if (Status pulled = pending.Wait(); !pulled.ok()) return pulled;
    std::swap(current, next);
    const int64_t global_step = std::llround(current.global_step);
    result.global_step = global_step;
    if (position < 0) {
      // A rejoining worker continues about where the job is rather than from its first batch.
      position = global_step / (options.sync ? 1 : num_trainers);
      last_checkpoint = global_step;
      epochs_reported = epochs_ended(global_step);
      print(prefix + options.config.task.ToString() + " starts at global step " +
            std::to_string(global_step) + " of " + std::to_string(total_steps) + " (" +
            std::to_string(shard.size()) + " " + options.example_noun + " in its shard)");
      if (global_step >= total_steps && !options.checkpoint_dir.empty()) {
        // As TensorFlow does with a model_dir that already holds the last step.
        print(prefix + "training is already complete: the servers restored global step " +
              std::to_string(global_step) + " from the checkpoints in " + options.checkpoint_dir +
              " (remove that directory to train again)");
        LeaveTerminationMessage("training already complete at global step " +
                                std::to_string(global_step) + " (checkpoints in " +
                                options.checkpoint_dir + "): nothing trained");
      }
    }
    if (global_step >= total_steps) break;
    if (Status reported = report_epochs(global_step); !reported.ok()) return fail(reported);
    if (is_chief && !options.checkpoint_dir.empty() && options.checkpoint_every_steps > 0 &&
        global_step / options.checkpoint_every_steps >
            last_checkpoint / options.checkpoint_every_steps) {
      auto saved = (*client)->SaveCheckpoint(options.checkpoint_dir, global_step);
      if (!saved.ok()) return fail(saved.status());
      last_checkpoint = global_step;
    }

    const int64_t first = (position % batches_per_pass) * options.per_worker_batch;
    train.Encode(std::span<const int64_t>(shard).subspan(static_cast<size_t>(first),
                                                         options.per_worker_batch),
                 batch.get());
    BatchLookups lookups = model.Lookups(*batch);
    if (Status status = PullLookupRows(servers, lookups); !status.ok()) return fail(status);
    if (!options.sync) pending = (*client)->StartPull(PullList(variables, next));

    auto step = model.ComputeGradients(*batch, current.values, lookups, &dense_gradients);
    if (!step.ok()) return fail(step.status());
    if (dense_gradients.size() + 1 != variables.size()) {
      return fail(Status::Internal(
          "the model's step gave " + std::to_string(dense_gradients.size()) +
          " dense gradients for " + std::to_string(variables.size() - 1) + " dense variables"));
    }
    // A user's model must not make a push read past its gradients.
    for (size_t i = 0; i < dense_gradients.size(); ++i) {
      if (dense_gradients[i].size() != current.values[i].size()) {
        return fail(Status::Internal("the model's gradient of " + variables[i].shape.name +
                                     " has " + std::to_string(dense_gradients[i].size()) +
                                     " values, not " + std::to_string(current.values[i].size())));
      }
      pushes[i] = {variables[i].shape.name, dense_gradients[i].data()};
    }
    for (const TableLookup& lookup : lookups.tables) {
      if (lookup.gradient.size() != lookup.ids.size() * static_cast<size_t>(lookup.row_width)) {
        return fail(Status::Internal("the model's gradient of table " + lookup.table + " has " +
                                     std::to_string(lookup.gradient.size()) + " values for " +
                                     std::to_string(lookup.ids.size()) + " rows of width " +
                                     std::to_string(lookup.row_width)));
      }
    }
    pushes.back() = {kGlobalStepVariable, &step_increment};
    Status status = (*client)->Push(pushes);
    for (size_t table = 0; status.ok() && table < lookups.tables.size(); ++table) {
      const TableLookup& lookup = lookups.tables[table];
      status = (*client)->PushRows(lookup.table, lookup.ids.data(), lookup.ids.size(),
                                   lookup.gradient.data());
    }
    if (status.ok()) status = (*client)->FinishStep();
    if (!status.ok()) return fail(status);
    if (options.sync) pending = (*client)->StartPull(PullList(variables, next));

    ++position;
    ++result.local_steps;
    loss_sum += step->loss;
    ++loss_count;
    if (metric_sums.empty()) {
      metric_sums = step->metrics;
    } else {
      for (size_t i = 0; i < metric_sums.size() && i < step->metrics.size(); ++i) {
        metric_sums[i].second += step->metrics[i].second;
      }
    }
    if (result.local_steps % options.log_every_steps == 0) {
      const double mean_loss = loss_sum / static_cast<double>(loss_count);
      const double seconds =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
      char line[200];
      std::snprintf(line, sizeof(line), "step %lld (global %lld/%lld): loss %.4f, %.1f steps/s",
                    static_cast<long long>(result.local_steps), static_cast<long long>(global_step),
                    static_cast<long long>(total_steps), mean_loss,
                    static_cast<double>(result.local_steps) / seconds);
      std::string text = line;
      std::vector<Scalar> scalars = {{"loss", mean_loss}};
      for (const auto& [name, sum] : metric_sums) {
        const double mean = sum / static_cast<double>(loss_count);
        std::snprintf(line, sizeof(line), ", %s %.4f", name.c_str(), mean);
        text += line;
        scalars.emplace_back(name, static_cast<float>(mean));
      }
      print(text);
      if (summaries) {
        if (Status written = summaries->WriteScalars(global_step, scalars); !written.ok()) {
          return fail(written);
        }
        if (Status flushed = summaries->Flush(); !flushed.ok()) return fail(flushed);
      }
      loss_sum = 0;
      loss_count = 0;
      metric_sums.clear();
    }
  }
  // The last event file, closed (in a bucket: uploaded, summary_run_writer.h).
  if (summaries) COHORT_RETURN_IF_ERROR(summaries->Close());
  if (!is_chief) return result;

  // The final checkpoint is what the chief evaluates, what it saves as the model and what the
  // evaluator evaluates last, so all three report the same values.
  std::string final_dir =
      !options.checkpoint_dir.empty() ? options.checkpoint_dir : options.saved_model_dir;
  std::string manifest_file;
  if (!final_dir.empty()) {
    auto saved = (*client)->SaveCheckpoint(final_dir, result.global_step);
    if (!saved.ok()) return saved.status();
    manifest_file = fs::path(*saved).filename().string();
    auto parameters = CheckpointParameters::Load(final_dir, manifest_file);
    if (!parameters.ok()) return parameters.status();
    auto evaluation = EvaluateModel(model, **parameters, eval, options.eval_batch);
    if (!evaluation.ok()) return evaluation.status();
    result.evaluation = *evaluation;
  } else {
    auto evaluation = EvaluateModel(model, servers, eval, options.eval_batch);
    if (!evaluation.ok()) return evaluation.status();
    result.evaluation = *evaluation;
  }
  COHORT_RETURN_IF_ERROR(report_epochs(total_steps));
  if (!options.checkpoint_dir.empty()) {
    COHORT_RETURN_IF_ERROR(WriteStorageFileAtomically(
        options.checkpoint_dir + "/" + kFinalCheckpointFile,
        std::to_string(result.global_step) + " " + RunIdentity(options.secret) + "\n"));
  }
  if (!options.saved_model_dir.empty()) {
    if (final_dir != options.saved_model_dir) {
      COHORT_RETURN_IF_ERROR(CopyCheckpoint(final_dir, manifest_file, options.saved_model_dir));
    }
    const ModelDescription description = model.Describe();
    ModelManifest manifest;
    manifest.model = description.name;
    manifest.weights = manifest_file;
    manifest.classes = description.classes;
    for (const auto& [name, value] : result.evaluation.metrics) {
      manifest.metrics["eval_" + name] = value;
    }
    manifest.training.epochs = options.epochs;
    manifest.training.steps_per_epoch = total_steps / std::max(1, options.epochs);
    manifest.training.per_worker_batch = options.per_worker_batch;
    manifest.training.num_workers = num_trainers;
    // Sync steps average one batch of every training task; an async push is one task's batch.
    manifest.training.global_batch =
        options.sync ? options.per_worker_batch * num_trainers : options.per_worker_batch;
    manifest.training.global_steps = result.global_step;
    manifest.training.optimizer = description.optimizer;
    manifest.training.learning_rate = description.learning_rate;
    manifest.training.seed = description.seed;
    manifest.training.data_dir = options.data_dir;
    manifest.created_at = FormatTime(std::chrono::system_clock::now());
    COHORT_RETURN_IF_ERROR(WriteManifest(options.saved_model_dir, manifest));
  }
  if (options.before_shutdown) {
    COHORT_RETURN_IF_ERROR(options.before_shutdown(servers, result.evaluation));
  }
  COHORT_RETURN_IF_ERROR((*client)->ShutdownServers());
  return result;
}

}  // namespace cohort::train
