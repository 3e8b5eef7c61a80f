// cohort-train: trains an image classifier on MNIST-format data, alone or as one worker of a
// MultiWorkerMirrored job, driven by TF_CONFIG exactly like a TensorFlow Keras program; or, in a
// cluster with ps tasks, the wide & deep taxi model with parameter servers (every role: ps,
// chief, worker and the evaluator side-car).
//
// The same binary is every replica of a TFJob: TF_CONFIG (and COHORT_JOB_SECRET) say who is in the
// cluster and who this process is; without TF_CONFIG it trains alone. It accepts the classic lab
// manifest's flags (--epochs --steps_per_epoch --per_worker_batch --saved_model_path
// --checkpoint_path) unchanged.
//
// Exit status: 0 trained (or evaluated); 1 a permanent failure (bad data, TF_CONFIG, files);
// 2 bad flags; 138 a failure a restart can cure (a peer died or stopped answering), so that a
// restartPolicy of OnFailure or ExitCode restarts the worker, which then resumes from the backup.
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <atomic>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "cluster/tf_config.h"
#include "net/auth.h"
#include "ps/parameter_server.h"
#include "train/backup_and_restore.h"
#include "train/checkpoint_evaluator.h"
#include "train/compute_threads.h"
#include "train/data/image_batch_source.h"
#include "train/data/image_dataset.h"
#include "train/image_classifier.h"
#include "train/mirrored_strategy.h"
#include "train/model_checkpoint.h"
#include "train/model_manifest.h"
#include "train/models.h"
#include "train/parameter_server_trainer.h"
#include "train/parameter_sources.h"
#include "train/progress_callback.h"
#include "train/saved_model.h"
#include "train/taxi_csv.h"
#include "train/taxi_dataset.h"
#include "train/tensorboard_callback.h"
#include "train/trainer.h"

namespace cohort::train {
namespace {

constexpr int kExitOk = 0;
constexpr int kExitFailed = 1;
constexpr int kExitUsage = 2;
// 128 + SIGUSR1: the code TensorFlow's docs reserve for "restart me"; any non-zero code restarts
// under OnFailure, and ExitCode restarts exactly the codes of 128 and above.
constexpr int kExitRetryable = 138;

struct Flags {
  int epochs = 3;
  int64_t steps_per_epoch = 0;
  int64_t per_worker_batch = 64;
  std::string saved_model_path;
  std::string checkpoint_path;
  int64_t backup_every_steps = 0;
  std::string model_checkpoint_path;
  std::string model = "cnn";
  std::string data_dir = kDefaultDataDir;
  double learning_rate = 0;  // 0: the optimizer's default
  std::string optimizer = "adam";
  std::string tensorboard_dir;
  int64_t tensorboard_update_steps = 0;
  uint64_t seed = 42;
  int threads = 0;  // 0: automatic
  double gradient_bucket_mb = 4;
  double startup_timeout_s = 300;
  double peer_timeout_s = 30;
  double sync_timeout_s = 30;
  bool evaluate = false;
  std::string model_path;
  // Parameter-server training (--model=wide_deep).
  std::string mode = "async";
  std::string bad_rows = "fail";  // of the taxi CSV files: fail or skip
  int64_t max_staleness = -1;
  int64_t checkpoint_every_steps = 500;
  double ps_retry_timeout_s = 60;
  double ps_timeout_s = 86400;
  double evaluator_timeout_s = 1800;
  double wide_learning_rate = 0.2;
};

void Print(const std::string& line) {
  std::printf("%s\n", line.c_str());
  std::fflush(stdout);
}

void PrintError(const std::string& message) {
  std::fflush(stdout);
  std::fprintf(stderr, "cohort-train: error: %s\n", message.c_str());
  std::fflush(stderr);
}

bool IsRetryable(const Status& status) {
  return status.code() == Status::Code::kUnavailable ||
         status.code() == Status::Code::kDeadlineExceeded;
}

// Ends the process at once on a failure: collective operations or the prefetch thread may still
// hold buffers that orderly destruction would free under them, and a restart is coming anyway.
[[noreturn]] void Fail(const Status& status) {
  PrintError(status.ToString());
  const int code = IsRetryable(status) ? kExitRetryable : kExitFailed;
  if (code == kExitRetryable) {
    std::fprintf(stderr,
                 "cohort-train: exiting with %d so that this task is restarted and "
                 "resumes from the latest backup or checkpoint\n",
                 code);
  }
  std::fflush(stderr);
  std::_Exit(code);
}

// Hardware threads divided among the training tasks that share this host (all of them when every
// endpoint is on localhost, as with Cohort's local executor), so that co-located workers do not
// oversubscribe the cores.
int AutomaticThreads(const cluster::TfConfig& config) {
  const int hardware = std::max(1u, std::thread::hardware_concurrency());
  int local_workers = 0;
  for (const cluster::TaskId& task : cluster::WorkerTasks(config.cluster)) {
    const std::string endpoint = config.cluster.Endpoint(task);
    const std::string host = endpoint.substr(0, endpoint.rfind(':'));
    if (host == "localhost" || host == "127.0.0.1" || host == "[::1]") ++local_workers;
  }
  return std::max(1, hardware / std::max(1, local_workers));
}

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

// Flag validators whose messages name the flag's expectation and the value given, e.g.
// "--epochs: expected a positive integer, got \"abc\"" (CLI11's own range checks print the whole
// range of a double for a non-number).
CLI::Validator IntegerAtLeast(long long minimum) {
  const std::string expectation =
      minimum == 1 ? "a positive integer" : "an integer >= " + std::to_string(minimum);
  return CLI::Validator(
      [=](std::string& text) -> std::string {
        size_t used = 0;
        long long value = 0;
        try {
          value = std::stoll(text, &used);
        } catch (...) {
          used = 0;
        }
        if (used == 0 || used != text.size() || value < minimum) {
          return "expected " + expectation + ", got \"" + text + "\"";
        }
        return "";
      },
      minimum == 1 ? "POSITIVE" : "INT>=" + std::to_string(minimum));
}

// A real number for which `accept` holds; `expectation` says which, `name` is CLI11's type name.
CLI::Validator Real(std::function<bool(double)> accept, const std::string& expectation,
                    const std::string& name) {
  return CLI::Validator(
      [=](std::string& text) -> std::string {
        size_t used = 0;
        double value = 0;
        try {
          value = std::stod(text, &used);
        } catch (...) {
          used = 0;
        }
        if (used == 0 || used != text.size() || !std::isfinite(value) || !accept(value)) {
          return "expected " + expectation + ", got \"" + text + "\"";
        }
        return "";
      },
      name);
}

CLI::Validator PositiveReal() {
  return Real([](double value) { return value > 0; }, "a positive number", "POSITIVE");
}

// The peer timeout must leave room for 3 heartbeats (net::TransportOptions, 1 s apart).
CLI::Validator AtLeastThreeSeconds() {
  return Real([](double value) { return value >= 3; }, "a number of seconds >= 3", "SECONDS>=3");
}

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

// A flag given in seconds, as the clock types want it.
std::chrono::milliseconds Milliseconds(double seconds) {
  return std::chrono::milliseconds(static_cast<int64_t>(seconds * 1000));
}

// An image classifier saved by MultiWorkerMirrored training, on the test split.
void EvaluateImageModel(const std::string& model_path, const std::string& data_dir) {
  auto model = SavedModel::Load(model_path);
  if (!model.ok()) Fail(model.status());
  auto test = LoadImageDataset(data_dir, Split::kTest);
  if (!test.ok()) Fail(test.status());
  auto result = (*model)->Evaluate(*test);
  if (!result.ok()) Fail(result.status());
  std::printf("model %s (%s) on %s: %lld test samples\ntest loss %.4f\ntest accuracy %.4f\n",
              model_path.c_str(), (*model)->manifest().model.c_str(), data_dir.c_str(),
              static_cast<long long>(result->samples), result->loss, result->metrics["accuracy"]);
}

// Pins libtorch's and OpenBLAS's threads, and warns when the math would run on the reference BLAS.
// Returns the BLAS in use.
BlasLibrary SetUpCompute(int threads) {
  if (Status status = SetComputeThreads(threads); !status.ok()) Fail(status);
  const BlasLibrary blas = DetectBlas();
  if (std::string warning = BlasWarning(blas); !warning.empty()) {
    std::fprintf(stderr, "cohort-train: %s\n", warning.c_str());
  }
  return blas;
}

int Evaluate(const Flags& flags, bool data_dir_given) {
  SetUpCompute(flags.threads > 0
                   ? flags.threads
                   : static_cast<int>(std::max(1u, std::thread::hardware_concurrency())));
  auto manifest = ReadManifest(flags.model_path);
  if (!manifest.ok()) Fail(manifest.status());
  // The data the model was trained on, unless --data_dir says otherwise.
  const std::string data_dir = data_dir_given || manifest->training.data_dir.empty()
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

  auto train = LoadImageDataset(flags.data_dir, Split::kTrain);
  if (!train.ok()) Fail(train.status());
  auto test = LoadImageDataset(flags.data_dir, Split::kTest);
  if (!test.ok()) Fail(test.status());

  const char* job_name = std::getenv("COHORT_JOB_NAME");
  WorkerConnectionOptions connection;
  connection.job_name = job_name ? job_name : "";
  connection.startup_timeout = Milliseconds(flags.startup_timeout_s);
  connection.peer_timeout = Milliseconds(flags.peer_timeout_s);
  auto strategy = MakeStrategy(*config, connection);
  if (!strategy.ok()) Fail(strategy.status());

  TrainerOptions options;
  options.epochs = flags.epochs;
  options.steps_per_epoch = flags.steps_per_epoch;
  options.per_worker_batch = flags.per_worker_batch;
  options.optimizer = flags.optimizer;
  options.learning_rate =
      flags.learning_rate > 0 ? flags.learning_rate : (flags.optimizer == "adam" ? 0.001 : 0.01);
  options.seed = flags.seed;
  options.bucket_bytes = static_cast<size_t>(flags.gradient_bucket_mb * (1 << 20));
  const ImageBatchSource train_source(&*train), test_source(&*test);
  const ModelFactory make_model = ImageClassifier::Factory(
      flags.model, *train, *test, ClassNamesFor(flags.data_dir, std::max(train->num_classes, 2)));
  auto trainer = Trainer::Create(options, make_model, &train_source, &test_source, strategy->get());
  if (!trainer.ok()) Fail(trainer.status());
  const FitPlan& plan = (*trainer)->plan();

  Print("cohort-train: " + Describe(**strategy, *config) + "; model " + plan.model_name +
        "; global batch " + std::to_string(plan.global_batch()) + " (" +
        std::to_string(plan.per_worker_batch) + " x " + std::to_string(plan.num_workers) + "); " +
        std::to_string(plan.epochs) + " epochs of " + std::to_string(plan.steps_per_epoch) +
        " steps; " + plan.optimizer + " lr " + std::to_string(plan.learning_rate) + "; " +
        std::to_string(threads) + " threads; BLAS " + BlasName(blas));

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
  std::vector<Callback*> callback_pointers;
  for (auto& callback : callbacks) callback_pointers.push_back(callback.get());

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

int Main(int argc, char** argv) {
  CLI::App app{
      "cohort-train: train an image classifier on MNIST-format data (Fashion-MNIST by default), "
      "alone or as one worker of a MultiWorkerMirrored TFJob. TF_CONFIG says who is in the "
      "cluster and who this process is; without it, training runs in this process alone.",
      "cohort-train"};
  app.footer(
      "Distributed training: each worker trains on its shard of every global batch (global batch "
      "= per_worker_batch x workers); gradients are averaged by all-reduce while backward runs; "
      "the chief (chief:0, else worker:0) writes backups, summaries and the saved model, other "
      "workers write to <dir>/workertemp_<index> and remove it.\n"
      "Parameter-server training (--model=wide_deep, a cluster with ps tasks): ps tasks serve "
      "the variables until the chief ends the job; the chief and workers pull the parameters and "
      "rows their batch needs, push gradients (--mode async|sync, --max_staleness); the chief "
      "checkpoints every --checkpoint_every_steps into --checkpoint_path, evaluates the final "
      "model on the taxi eval split (prints \"auc 0.XXXX\") and saves it; an evaluator task "
      "evaluates each checkpoint (TensorBoard under <tensorboard_dir>/eval, "
      "<checkpoint_path>/eval/metrics.json) and exits after the final one. The taxi data set is "
      "generated once into --data_dir.\n"
      "Environment: TF_CONFIG (cluster and task), COHORT_JOB_SECRET (authenticates peers), "
      "COHORT_JOB_NAME (optional).\n"
      "Exit status: 0 done; 1 permanent failure (data, TF_CONFIG, files); 2 bad flags; 138 a "
      "peer died or stopped answering: restart the worker and it resumes from --checkpoint_path.");
  Flags flags;
  app.add_option("--epochs", flags.epochs, "number of epochs")
      ->capture_default_str()
      ->check(IntegerAtLeast(1));
  app.add_option("--steps_per_epoch", flags.steps_per_epoch,
                 "global steps per epoch; 0 = one pass over the training split")
      ->capture_default_str()
      ->check(IntegerAtLeast(0));
  app.add_option("--per_worker_batch", flags.per_worker_batch, "samples per worker per step")
      ->capture_default_str()
      ->check(IntegerAtLeast(1));
  app.add_option("--saved_model_path", flags.saved_model_path,
                 "directory for the trained model (weights.pt + manifest.json); empty: not saved");
  app.add_option("--checkpoint_path", flags.checkpoint_path,
                 "BackupAndRestore directory: back up every epoch and resume from it after a "
                 "restart; deleted when training completes. Empty: no backups");
  app.add_option("--backup_every_steps", flags.backup_every_steps,
                 "also back up every N global steps (0: at epoch ends only)")
      ->capture_default_str()
      ->check(IntegerAtLeast(0));
  app.add_option("--model_checkpoint_path", flags.model_checkpoint_path,
                 "ModelCheckpoint directory: keep the weights of every epoch (ckpt-<epoch>.pt)");
  app.add_option("--model", flags.model, "model architecture")
      ->capture_default_str()
      ->check(CLI::IsMember(WithWideDeep(ModelNames())));
  app.add_option("--data_dir", flags.data_dir,
                 "directory with {train,t10k}-{images-idx3,labels-idx1}-ubyte[.gz]")
      ->capture_default_str();
  app.add_option("--learning_rate", flags.learning_rate,
                 "learning rate (default: 0.001 for adam, 0.01 for sgd)")
      ->check(PositiveReal());
  app.add_option("--optimizer", flags.optimizer, "optimizer")
      ->capture_default_str()
      ->check(CLI::IsMember({"sgd", "adam"}));
  app.add_option("--tensorboard_dir", flags.tensorboard_dir,
                 "write TensorBoard event files to <dir>/train and <dir>/validation");
  app.add_option("--tensorboard_update_steps", flags.tensorboard_update_steps,
                 "also write batch_loss/batch_accuracy every N global steps (0: epochs only)")
      ->capture_default_str()
      ->check(IntegerAtLeast(0));
  app.add_option("--seed", flags.seed, "seed for weights and the data order")
      ->capture_default_str();
  app.add_option("--threads", flags.threads,
                 "libtorch and OpenBLAS threads (0: hardware threads / workers on this host)")
      ->capture_default_str()
      ->check(IntegerAtLeast(0));
  app.add_option("--gradient_bucket_mb", flags.gradient_bucket_mb,
                 "gradient all-reduce bucket size in MiB")
      ->capture_default_str()
      ->check(PositiveReal());
  app.add_option("--startup_timeout_s", flags.startup_timeout_s,
                 "how long to wait for every worker to join (parameter-server training: how "
                 "long a worker waits for the chief to initialise the model)")
      ->capture_default_str()
      ->check(PositiveReal());
  app.add_option("--peer_timeout_s", flags.peer_timeout_s,
                 "MultiWorkerMirrored: how long a silent worker is given before it counts as dead "
                 "and the others exit to be restarted (at least 3 s)")
      ->capture_default_str()
      ->check(AtLeastThreeSeconds());
  app.add_option("--sync_timeout_s", flags.sync_timeout_s,
                 "sync parameter-server training: how long a ps waits for the missing workers' "
                 "gradients of a step, from the first one, before it applies what arrived")
      ->capture_default_str()
      ->check(PositiveReal());
  app.add_option("--mode", flags.mode,
                 "parameter-server training: async (each push applied on arrival) or sync (one "
                 "averaged gradient per step from every training task)")
      ->capture_default_str()
      ->check(CLI::IsMember({"async", "sync"}));
  app.add_option("--bad_rows", flags.bad_rows,
                 "a malformed row of the taxi CSV files (--model=wide_deep): fail (name it and "
                 "stop) or skip (leave it out, count it, name the first few)")
      ->capture_default_str()
      ->check(CLI::IsMember({"fail", "skip"}));
  app.add_option("--max_staleness", flags.max_staleness,
                 "async parameter-server training: keep each worker at most N steps ahead of the "
                 "slowest (-1: unbounded)")
      ->capture_default_str()
      ->check(IntegerAtLeast(-1));
  app.add_option("--checkpoint_every_steps", flags.checkpoint_every_steps,
                 "parameter-server training: the chief checkpoints every N global steps into "
                 "--checkpoint_path (0: only at the end)")
      ->capture_default_str()
      ->check(IntegerAtLeast(0));
  app.add_option("--wide_learning_rate", flags.wide_learning_rate,
                 "wide_deep: FTRL learning rate of the linear part (--learning_rate sets the "
                 "DNN's Adagrad rate, default 0.05)")
      ->capture_default_str()
      ->check(PositiveReal());
  app.add_option("--ps_retry_timeout_s", flags.ps_retry_timeout_s,
                 "how long a worker retries an unreachable ps before failing, naming it")
      ->capture_default_str()
      ->check(PositiveReal());
  app.add_option("--ps_timeout_s", flags.ps_timeout_s,
                 "how long a ps serves before giving up on the chief ending the job")
      ->capture_default_str()
      ->check(PositiveReal());
  app.add_option("--evaluator_timeout_s", flags.evaluator_timeout_s,
                 "how long the evaluator waits for a new checkpoint before failing")
      ->capture_default_str()
      ->check(PositiveReal());
  app.add_flag("--evaluate", flags.evaluate,
               "evaluate the saved model at --model_path instead of training: an image model on "
               "the test split, wide_deep on the eval split of its data set");
  app.add_option("--model_path", flags.model_path, "saved model directory for --evaluate");

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    std::printf("%s", app.help().c_str());
    return kExitOk;
  } catch (const CLI::ParseError& error) {
    PrintError(std::string(error.what()) + "\nRun cohort-train --help for usage.");
    return kExitUsage;
  }
  if (flags.evaluate && flags.model_path.empty()) {
    PrintError("--evaluate needs --model_path DIR");
    return kExitUsage;
  }
  if (!flags.evaluate && !flags.model_path.empty()) {
    PrintError("--model_path is only used with --evaluate (to save a model: --saved_model_path)");
    return kExitUsage;
  }
  if (flags.model == kWideDeepModelName && app.count("--data_dir") == 0) {
    PrintError(
        "--model=wide_deep needs --data_dir DIR (the taxi data set is generated there once)");
    return kExitUsage;
  }
  if (flags.evaluate) {
    return Evaluate(flags, app.count("--data_dir") > 0);
  }
  return Train(flags);
}

}  // namespace
}  // namespace cohort::train

int main(int argc, char** argv) { return cohort::train::Main(argc, argv); }
