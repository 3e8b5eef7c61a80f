// cohort-train: trains an image classifier on MNIST-format data, alone or as one worker of a
// MultiWorkerMirrored job, driven by TF_CONFIG exactly like a TensorFlow Keras program; or, in a
// cluster with ps tasks, the wide & deep taxi model with parameter servers (every role: ps,
// chief, worker and the evaluator side-car).
//
// The same binary is every replica of a TFJob: TF_CONFIG (and COHORT_JOB_SECRET) say who is in the
// cluster and who this process is; without TF_CONFIG it trains alone. The command line is parsed
// in flags.cc, the image half runs in image_training.cc, exit codes and failing are process.h's.
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "cluster/tf_config.h"
#include "flags.h"
#include "image_training.h"
#include "net/auth.h"
#include "process.h"
#include "ps/parameter_server.h"
#include "train/checkpoint_evaluator.h"
#include "train/model_manifest.h"
#include "train/models.h"
#include "train/parameter_server_trainer.h"
#include "train/parameter_sources.h"
#include "train/taxi_csv.h"
#include "train/taxi_dataset.h"

namespace cohort::train::cli {
namespace {

std::vector<std::string> WithWideDeep(std::vector<std::string> names) {
  names.push_back(kWideDeepModelName);
  return names;
}

// One of the taxi CSV files, read with --bad_rows: a malformed row fails the run, or is skipped,
// counted, and (the first few) named in the log.
std::vector<TaxiTrip> ReadTaxiFile(const std::string& path, const std::string& bad_rows) {
  TaxiCsvReadOptions options;
  options.bad_rows = bad_rows == "skip" ? BadRowPolicy::kSkipAndCount : BadRowPolicy::kFail;
  auto contents = ReadTaxiCsv(path, options);
  if (!contents.ok()) Fail(contents.status());
  if (contents->skipped_rows > 0) {
    Print("cohort-train: skipped " + std::to_string(contents->skipped_rows) +
          " malformed rows of " + path + " (--bad_rows=skip), the first:");
    for (const std::string& error : contents->first_errors) Print("  " + error);
  }
  return std::move(contents->trips);
}

// A saved wide & deep model: its checkpoint, evaluated on the eval split of the taxi data set. The
// feature statistics come from that data set's train split, as they did in training.
void EvaluateWideDeepModel(const std::string& model_path, const ModelManifest& manifest,
                           const std::string& data_dir, const std::string& bad_rows) {
  const std::vector<TaxiTrip> train = ReadTaxiFile(data_dir + "/" + kTaxiTrainFile, bad_rows);
  const std::vector<TaxiTrip> eval = ReadTaxiFile(data_dir + "/" + kTaxiEvalFile, bad_rows);
  auto statistics = ComputeTaxiNumericStatistics(train);
  if (!statistics.ok()) Fail(statistics.status());
  WideDeepConfig config;
  config.seed = manifest.training.seed;  // the initial value of rows no step ever touched
  auto model = WideDeepModel::Create(config);
  if (!model.ok()) Fail(model.status());
  auto parameters = CheckpointParameters::Load(model_path, manifest.weights);
  if (!parameters.ok()) Fail(parameters.status());
  auto result = EvaluateWideDeep(*model, **parameters, TaxiFeatureEncoder(*statistics), eval, 4096);
  if (!result.ok()) Fail(result.status());
  std::printf("model %s (%s) on %s: %lld eval trips\neval loss %.4f\nauc %.4f\n",
              model_path.c_str(), manifest.model.c_str(), data_dir.c_str(),
              static_cast<long long>(result->examples), result->loss, result->auc);
}

int Evaluate(const Flags& flags) {
  SetUpCompute(flags.threads > 0
                   ? flags.threads
                   : static_cast<int>(std::max(1u, std::thread::hardware_concurrency())));
  auto manifest = ReadManifest(flags.model_path);
  if (!manifest.ok()) Fail(manifest.status());
  // The data the model was trained on, unless --data_dir says otherwise.
  const std::string data_dir = flags.data_dir_given || manifest->training.data_dir.empty()
                                   ? flags.data_dir
                                   : manifest->training.data_dir;
  if (manifest->model == kWideDeepModelName) {
    EvaluateWideDeepModel(flags.model_path, *manifest, data_dir, flags.bad_rows);
  } else {
    EvaluateImageModel(flags.model_path, data_dir);
  }
  std::fflush(stdout);
  return kExitOk;
}

// A `ps` task: serves its shard of the variables until the chief ends the job.
int ServeVariables(const Flags& flags, const cluster::TfConfig& config) {
  ps::ParameterServerOptions options;
  const char* job_name = std::getenv("COHORT_JOB_NAME");
  options.job_name = job_name ? job_name : "";
  options.cluster = config.cluster;
  options.ps_index = config.task.index;
  options.secret = net::JobSecret::FromEnvironment();
  options.sync = flags.mode == "sync";
  options.sync_workers = cluster::WorkerTasks(config.cluster);
  options.sync_timeout = Milliseconds(flags.sync_timeout_s);
  options.checkpoint_dir = flags.checkpoint_path;
  options.log = Print;
  auto server = ps::ParameterServer::Start(std::move(options));
  if (!server.ok()) Fail(server.status());
  Print("cohort-train: " + (*server)->name() + " serving " + flags.mode + " training on port " +
        std::to_string((*server)->port()) +
        ((*server)->restored_step() >= 0 ? "; restored the checkpoint of global step " +
                                               std::to_string((*server)->restored_step())
                                         : std::string("; no checkpoint to restore")));
  const auto timeout = Milliseconds(flags.ps_timeout_s);
  Status finished = (*server)->Wait(net::Deadline::After(timeout));
  if (!finished.ok()) {
    Fail(Status::DeadlineExceeded((*server)->name() + ": the chief did not end the job within " +
                                  std::to_string(static_cast<int64_t>(flags.ps_timeout_s)) +
                                  " s (--ps_timeout_s)"));
  }
  (*server)->Stop();
  Print("cohort-train: " + (*server)->name() + ": the chief ended the job");
  return kExitOk;
}

// Set by SIGTERM in the evaluator: the job has ended and the executor stops what still runs. A
// lock-free atomic, so the handler may set it on whichever thread takes the signal.
std::atomic<bool> evaluator_stop_requested{false};
static_assert(std::atomic<bool>::is_always_lock_free);

// Every replica of a parameter-server job but the ps tasks: the chief, workers and the evaluator
// side-car, training (or evaluating) the wide & deep taxi model.
int TrainWideDeep(const Flags& flags, const cluster::TfConfig& config, int threads) {
  if (config.task.type == "evaluator") {
    // The chief ends the job right after its final checkpoint, and the executor then stops the
    // evaluator with SIGTERM (a grace period before SIGKILL): use it to evaluate that checkpoint.
    // Installed first, so a SIGTERM while the data loads is taken too.
    struct sigaction action = {};
    action.sa_handler = [](int) { evaluator_stop_requested.store(true); };
    sigemptyset(&action.sa_mask);
    action.sa_flags = SA_RESTART;
    sigaction(SIGTERM, &action, nullptr);
  }
  auto truth = EnsureTaxiDataset(flags.data_dir, TaxiDatasetOptions{});
  if (!truth.ok()) Fail(truth.status());
  const std::vector<TaxiTrip> train =
      ReadTaxiFile(flags.data_dir + "/" + kTaxiTrainFile, flags.bad_rows);
  const std::vector<TaxiTrip> eval =
      ReadTaxiFile(flags.data_dir + "/" + kTaxiEvalFile, flags.bad_rows);
  auto statistics = ComputeTaxiNumericStatistics(train);
  if (!statistics.ok()) Fail(statistics.status());
  const TaxiFeatureEncoder encoder(*statistics);
  WideDeepConfig model;
  model.seed = flags.seed;
  model.wide_learning_rate = static_cast<float>(flags.wide_learning_rate);
  if (flags.learning_rate > 0) model.deep_learning_rate = static_cast<float>(flags.learning_rate);

  if (config.task.type == "evaluator") {
    if (flags.checkpoint_path.empty()) {
      Fail(
          Status::InvalidArgument("the evaluator follows checkpoints: it needs --checkpoint_path"));
    }
    Print("cohort-train: evaluator following " + flags.checkpoint_path +
          " (eval split: " + std::to_string(eval.size()) + " trips, ceiling auc " +
          std::to_string(truth->ceiling_auc) + ")");
    CheckpointEvaluatorOptions options;
    options.checkpoint_dir = flags.checkpoint_path;
    options.tensorboard_dir = flags.tensorboard_dir;
    options.model = model;
    options.idle_timeout = Milliseconds(flags.evaluator_timeout_s);
    options.run_identity = RunIdentity(net::JobSecret::FromEnvironment());
    options.stop_requested = [] { return evaluator_stop_requested.load(); };
    options.print = Print;
    auto result = RunCheckpointEvaluator(options, eval, encoder);
    if (!result.ok()) Fail(result.status());
    std::printf("final eval auc %.4f (ceiling %.4f)\n", result->auc, truth->ceiling_auc);
    std::fflush(stdout);
    return kExitOk;
  }

  ParameterServerTrainingOptions options;
  options.config = config;
  const char* job_name = std::getenv("COHORT_JOB_NAME");
  options.job_name = job_name ? job_name : "";
  options.secret = net::JobSecret::FromEnvironment();
  options.model = model;
  options.epochs = flags.epochs;
  options.per_worker_batch = flags.per_worker_batch;
  options.sync = flags.mode == "sync";
  options.max_staleness = flags.max_staleness;
  options.checkpoint_every_steps = flags.checkpoint_every_steps;
  options.checkpoint_dir = flags.checkpoint_path;
  options.saved_model_dir = flags.saved_model_path;
  options.tensorboard_dir = flags.tensorboard_dir;
  options.data_dir = flags.data_dir;
  options.retry_timeout = Milliseconds(flags.ps_retry_timeout_s);
  options.model_ready_timeout = Milliseconds(flags.startup_timeout_s);
  options.print = Print;
  Print("cohort-train: " + config.task.ToString() + " of a parameter-server job (" +
        std::to_string(config.cluster.NumTasks("ps")) + " ps, " +
        std::to_string(cluster::NumWorkers(config.cluster)) + " training tasks); model " +
        kWideDeepModelName + "; " + flags.mode + "; batch " +
        std::to_string(flags.per_worker_batch) + " per step; " + std::to_string(flags.epochs) +
        " epochs of " + std::to_string(train.size()) + " trips; " + std::to_string(threads) +
        " threads");
  auto result = TrainWithParameterServers(options, train, eval, encoder);
  if (!result.ok()) Fail(result.status());
  Print("cohort-train: " + config.task.ToString() + " done after " +
        std::to_string(result->local_steps) + " steps (global step " +
        std::to_string(result->global_step) + ")");
  if (result->is_chief) {
    std::printf("eval auc on %lld trips: ceiling %.4f\nauc %.4f\n",
                static_cast<long long>(result->evaluation.examples), truth->ceiling_auc,
                result->evaluation.auc);
    if (!flags.saved_model_path.empty()) {
      std::printf("saved model: %s (evaluate: cohort-train --evaluate --model_path %s)\n",
                  flags.saved_model_path.c_str(), flags.saved_model_path.c_str());
    }
    std::fflush(stdout);
  }
  return kExitOk;
}

int Train(const Flags& flags) {
  auto config = cluster::TfConfigFromEnvironment();
  if (!config.ok()) Fail(config.status());
  const bool has_ps = config->cluster.NumTasks("ps") > 0 || config->task.type == "ps";
  if (flags.model == kWideDeepModelName) {
    if (!has_ps) {
      Fail(Status::InvalidArgument(
          "--model=wide_deep trains with parameter servers, but TF_CONFIG's cluster has no ps "
          "tasks (run it as a TFJob with PS replicas, e.g. examples/taxi/tfjob.yaml)"));
    }
  } else if (has_ps) {
    Fail(Status::InvalidArgument(
        "TF_CONFIG's cluster has ps tasks, so this is parameter-server training, which trains "
        "--model=wide_deep; --model=" +
        flags.model + " trains with MultiWorkerMirrored, in a cluster without ps tasks"));
  }
  if (config->task.type == "ps") return ServeVariables(flags, *config);
  const int threads = flags.threads > 0 ? flags.threads : AutomaticThreads(*config);
  const BlasLibrary blas = SetUpCompute(threads);
  if (flags.model == kWideDeepModelName) return TrainWideDeep(flags, *config, threads);
  return TrainImageClassifier(flags, *config, threads, blas);
}

int Main(int argc, char** argv) {
  Flags flags;
  if (std::optional<int> exit_code = ParseFlags(argc, argv, WithWideDeep(ModelNames()), &flags)) {
    return *exit_code;
  }
  if (flags.model == kWideDeepModelName && !flags.data_dir_given) {
    PrintError(
        "--model=wide_deep needs --data_dir DIR (the taxi data set is generated there once)");
    return kExitUsage;
  }
  if (flags.evaluate) {
    return Evaluate(flags);
  }
  return Train(flags);
}

}  // namespace
}  // namespace cohort::train::cli

int main(int argc, char** argv) { return cohort::train::cli::Main(argc, argv); }
