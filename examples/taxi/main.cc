// taxi-train: every role of the Chicago-taxi parameter-server job (examples/taxi/tfjob.yaml): a ps
// task serves its shard of the variables (src/ps), the chief and the workers train the wide & deep
// tip classifier with Cohort's parameter-server trainer, and the evaluator side-car evaluates each
// checkpoint; with --evaluate it evaluates a saved taxi model instead.
//
// The same binary is every replica of the TFJob: TF_CONFIG (and COHORT_JOB_SECRET) say who is in
// the cluster and who this process is. The taxi data set is generated once into --data_dir.
//
// Exit status: 0 trained (or evaluated); 1 a permanent failure (bad data, TF_CONFIG, files);
// 2 bad flags; 3 an I/O error (a full disk), permanent; 138 a failure a restart can cure (a ps or
// the chief stopped answering), so that a restartPolicy of OnFailure or ExitCode restarts the task,
// which then continues from where the job is. The exit codes, output helpers and flag checks are
// train/program's, shared with cohort-train.
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <atomic>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include "cluster/summary_location.h"
#include "cluster/tf_config.h"
#include "net/auth.h"
#include "ps/parameter_server.h"
#include "taxi/taxi_csv.h"
#include "taxi/taxi_dataset.h"
#include "taxi/taxi_examples.h"
#include "taxi/wide_deep_model.h"
#include "train/model_manifest.h"
#include "train/parameter_server/checkpoint_evaluator.h"
#include "train/parameter_server/model_evaluation.h"
#include "train/parameter_server/parameter_server_trainer.h"
#include "train/parameter_server/parameter_sources.h"
#include "train/program/flag_checks.h"
#include "train/program/process.h"

namespace cohort::taxi {
namespace {

using namespace train::program;

constexpr char kProgram[] = "taxi-train";

struct Flags {
  int epochs = 3;
  int64_t per_worker_batch = 64;
  std::string saved_model_path;
  std::string checkpoint_path;
  std::string model = kWideDeepModelName;
  std::string data_dir;
  double learning_rate = 0;  // 0: the DNN's default, 0.05
  std::string tensorboard_dir;
  uint64_t seed = 42;
  int threads = 0;  // 0: automatic
  double startup_timeout_s = 300;
  double sync_timeout_s = 30;
  bool evaluate = false;
  std::string model_path;
  std::string mode = "async";
  std::string bad_rows = "fail";  // of the taxi CSV files: fail or skip
  int64_t max_staleness = -1;
  int64_t checkpoint_every_steps = 500;
  double ps_retry_timeout_s = 60;
  double ps_request_timeout_s = 120;
  double ps_timeout_s = 86400;
  double evaluator_timeout_s = 1800;
  double wide_learning_rate = 0.2;
};

// --tensorboard_dir, else the directory job control names for this task
// (cluster/summary_location.h), else none.
std::string TensorBoardDirectory(const Flags& flags) {
  return flags.tensorboard_dir.empty() ? cluster::SummaryDirectoryFromEnvironment()
                                       : flags.tensorboard_dir;
}

// One of the taxi CSV files, read with --bad_rows: a malformed row fails the run, or is skipped,
// counted, and (the first few) named in the log.
std::vector<TaxiTrip> ReadTaxiFile(const std::string& path, const std::string& bad_rows) {
  TaxiCsvReadOptions options;
  options.bad_rows = bad_rows == "skip" ? BadRowPolicy::kSkipAndCount : BadRowPolicy::kFail;
  auto contents = ReadTaxiCsv(path, options);
  if (!contents.ok()) Fail(contents.status());
  if (contents->skipped_rows > 0) {
    Print(std::string(kProgram) + ": skipped " + std::to_string(contents->skipped_rows) +
          " malformed rows of " + path + " (--bad_rows=skip), the first:");
    for (const std::string& error : contents->first_errors) Print("  " + error);
  }
  return std::move(contents->trips);
}

// A saved wide & deep model: its checkpoint, evaluated on the eval split of the taxi data set (the
// data it was trained on, unless --data_dir says otherwise). The feature statistics come from that
// data set's train split, as they did in training.
int EvaluateSavedModel(const Flags& flags, bool data_dir_given) {
  SetUpCompute(ComputeThreads(flags.threads, cluster::TfConfig{}));
  auto manifest = train::ReadManifest(flags.model_path);
  if (!manifest.ok()) Fail(manifest.status());
  if (manifest->model != kWideDeepModelName) {
    Fail(Status::InvalidArgument(flags.model_path + " holds a " + manifest->model +
                                 " model, not the taxi example's " + kWideDeepModelName +
                                 " (evaluate image models with cohort-train --evaluate)"));
  }
  const std::string data_dir = data_dir_given || manifest->training.data_dir.empty()
                                   ? flags.data_dir
                                   : manifest->training.data_dir;
  const std::vector<TaxiTrip> train = ReadTaxiFile(data_dir + "/" + kTaxiTrainFile, flags.bad_rows);
  const std::vector<TaxiTrip> eval = ReadTaxiFile(data_dir + "/" + kTaxiEvalFile, flags.bad_rows);
  auto statistics = ComputeTaxiNumericStatistics(train);
  if (!statistics.ok()) Fail(statistics.status());
  const TaxiFeatureEncoder encoder(*statistics);
  WideDeepConfig config;
  config.seed = manifest->training.seed;  // the initial value of rows no step ever touched
  auto model = WideDeepModel::Create(config);
  if (!model.ok()) Fail(model.status());
  auto parameters = train::CheckpointParameters::Load(flags.model_path, manifest->weights);
  if (!parameters.ok()) Fail(parameters.status());
  auto result = train::EvaluateModel(*model, **parameters, TaxiExamples(eval, encoder), 4096);
  if (!result.ok()) Fail(result.status());
  std::printf("model %s (%s) on %s: %lld eval trips\neval loss %.4f\nauc %.4f\n",
              flags.model_path.c_str(), manifest->model.c_str(), data_dir.c_str(),
              static_cast<long long>(result->examples), *result->Metric("loss"),
              *result->Metric("auc"));
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
  Print(std::string(kProgram) + ": " + (*server)->name() + " serving " + flags.mode +
        " training on port " + std::to_string((*server)->port()) +
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
  Print(std::string(kProgram) + ": " + (*server)->name() + ": the chief ended the job");
  return kExitOk;
}

// Set by SIGTERM in the evaluator: the job has ended and the executor stops what still runs. A
// lock-free atomic, so the handler may set it on whichever thread takes the signal.
std::atomic<bool> evaluator_stop_requested{false};
static_assert(std::atomic<bool>::is_always_lock_free);

// Every replica of the job but the ps tasks: the chief, workers and the evaluator side-car.
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
  const TaxiExamples train_examples(train, encoder);
  const TaxiExamples eval_examples(eval, encoder);
  WideDeepConfig config_of_model;
  config_of_model.seed = flags.seed;
  config_of_model.wide_learning_rate = static_cast<float>(flags.wide_learning_rate);
  if (flags.learning_rate > 0) {
    config_of_model.deep_learning_rate = static_cast<float>(flags.learning_rate);
  }
  auto model = WideDeepModel::Create(config_of_model);
  if (!model.ok()) Fail(model.status());

  if (config.task.type == "evaluator") {
    if (flags.checkpoint_path.empty()) {
      Fail(
          Status::InvalidArgument("the evaluator follows checkpoints: it needs --checkpoint_path"));
    }
    Print(std::string(kProgram) + ": evaluator following " + flags.checkpoint_path +
          " (eval split: " + std::to_string(eval.size()) + " trips, ceiling auc " +
          std::to_string(truth->ceiling_auc) + ")");
    train::CheckpointEvaluatorOptions options;
    options.checkpoint_dir = flags.checkpoint_path;
    options.tensorboard_dir = TensorBoardDirectory(flags);
    options.idle_timeout = Milliseconds(flags.evaluator_timeout_s);
    options.run_identity = train::RunIdentity(net::JobSecret::FromEnvironment());
    options.stop_requested = [] { return evaluator_stop_requested.load(); };
    options.print = Print;
    auto result = train::RunCheckpointEvaluator(options, *model, eval_examples);
    if (!result.ok()) Fail(result.status());
    std::printf("final eval auc %.4f (ceiling %.4f)\n", *result->Metric("auc"), truth->ceiling_auc);
    std::fflush(stdout);
    return kExitOk;
  }

  train::ParameterServerTrainingOptions options;
  options.config = config;
  const char* job_name = std::getenv("COHORT_JOB_NAME");
  options.job_name = job_name ? job_name : "";
  options.secret = net::JobSecret::FromEnvironment();
  options.program_name = kProgram;
  options.example_noun = "trips";
  options.epochs = flags.epochs;
  options.per_worker_batch = flags.per_worker_batch;
  options.sync = flags.mode == "sync";
  options.max_staleness = flags.max_staleness;
  options.checkpoint_every_steps = flags.checkpoint_every_steps;
  options.checkpoint_dir = flags.checkpoint_path;
  options.saved_model_dir = flags.saved_model_path;
  options.tensorboard_dir = TensorBoardDirectory(flags);
  options.data_dir = flags.data_dir;
  options.retry_timeout = Milliseconds(flags.ps_retry_timeout_s);
  options.request_timeout = Milliseconds(flags.ps_request_timeout_s);
  options.model_ready_timeout = Milliseconds(flags.startup_timeout_s);
  options.print = Print;
  Print(std::string(kProgram) + ": " + config.task.ToString() + " of a parameter-server job (" +
        std::to_string(config.cluster.NumTasks("ps")) + " ps, " +
        std::to_string(cluster::NumWorkers(config.cluster)) + " training tasks); model " +
        kWideDeepModelName + "; " + flags.mode + "; batch " +
        std::to_string(flags.per_worker_batch) + " per step; " + std::to_string(flags.epochs) +
        " epochs of " + std::to_string(train.size()) + " trips; " + std::to_string(threads) +
        " threads");
  auto result = train::TrainWithParameterServers(options, *model, train_examples, eval_examples);
  if (!result.ok()) Fail(result.status());
  Print(std::string(kProgram) + ": " + config.task.ToString() + " done after " +
        std::to_string(result->local_steps) + " steps (global step " +
        std::to_string(result->global_step) + ")");
  if (result->is_chief) {
    std::printf("eval auc on %lld trips: ceiling %.4f\nauc %.4f\n",
                static_cast<long long>(result->evaluation.examples), truth->ceiling_auc,
                *result->evaluation.Metric("auc"));
    if (!flags.saved_model_path.empty()) {
      std::printf("saved model: %s (evaluate: %s --evaluate --model_path %s)\n",
                  flags.saved_model_path.c_str(), kProgram, flags.saved_model_path.c_str());
    }
    std::fflush(stdout);
  }
  return kExitOk;
}

int Train(const Flags& flags) {
  auto config = cluster::TfConfigFromEnvironment();
  if (!config.ok()) Fail(config.status());
  if (config->cluster.NumTasks("ps") == 0 && config->task.type != "ps") {
    Fail(Status::InvalidArgument(
        "the taxi example trains with parameter servers, but TF_CONFIG's cluster has no ps tasks "
        "(run it as a TFJob with PS replicas, e.g. examples/taxi/tfjob.yaml)"));
  }
  if (config->task.type == "ps") return ServeVariables(flags, *config);
  const int threads = ComputeThreads(flags.threads, *config);
  SetUpCompute(threads);
  return TrainWideDeep(flags, *config, threads);
}

int Main(int argc, char** argv) {
  SetProgram({kProgram, "the latest checkpoint"});
  CLI::App app{
      "taxi-train: every role of the Chicago-taxi parameter-server job (a wide & deep tip "
      "classifier): ps, chief, worker and evaluator. TF_CONFIG says who is in the cluster and "
      "who this process is.",
      kProgram};
  app.footer(
      "ps tasks serve the variables until the chief ends the job; the chief and workers pull the "
      "parameters and rows their batch needs, push gradients (--mode async|sync, "
      "--max_staleness); the chief checkpoints every --checkpoint_every_steps into "
      "--checkpoint_path, evaluates the final model on the taxi eval split (prints \"auc "
      "0.XXXX\") and saves it; an evaluator task evaluates each checkpoint (TensorBoard under "
      "<tensorboard_dir>/eval, <checkpoint_path>/eval/metrics.json) and exits after the final "
      "one. The taxi data set is generated once into --data_dir.\n"
      "Environment: TF_CONFIG (cluster and task), COHORT_JOB_SECRET (authenticates peers), "
      "COHORT_JOB_NAME (optional).\n"
      "Exit status: 0 done; 1 permanent failure (data, TF_CONFIG, files); 2 bad flags; 3 an I/O "
      "error (a full disk: the file is named), permanent too; 138 a "
      "ps or the chief stopped answering: restart the task and it continues where the job is.");
  Flags flags;
  app.add_option("--epochs", flags.epochs, "number of passes over the training split")
      ->capture_default_str()
      ->check(IntegerAtLeast(1));
  app.add_option("--per_worker_batch", flags.per_worker_batch, "trips per task per step")
      ->capture_default_str()
      ->check(IntegerAtLeast(1));
  app.add_option("--saved_model_path", flags.saved_model_path,
                 "directory for the trained model (its checkpoint + manifest.json); empty: not "
                 "saved")
      ->check(FileSystemPath());
  app.add_option("--checkpoint_path", flags.checkpoint_path,
                 "the chief's checkpoints, which restarted ps tasks restore and the evaluator "
                 "follows. Empty: no checkpoints")
      ->check(FileSystemPath());
  app.add_option("--model", flags.model, "model architecture (the taxi example has one)")
      ->capture_default_str()
      ->check(CLI::IsMember({std::string(kWideDeepModelName)}));
  app.add_option("--data_dir", flags.data_dir,
                 "the taxi data set (train.csv, eval.csv, ground_truth.json), generated there "
                 "once")
      ->check(FileSystemPath());
  app.add_option("--learning_rate", flags.learning_rate,
                 "the DNN's Adagrad learning rate (default 0.05)")
      ->check(PositiveReal());
  app.add_option("--wide_learning_rate", flags.wide_learning_rate,
                 "FTRL learning rate of the linear part")
      ->capture_default_str()
      ->check(PositiveReal());
  app.add_option("--tensorboard_dir", flags.tensorboard_dir,
                 "write TensorBoard event files to <dir>/train (chief) and <dir>/eval (evaluator) "
                 "(default: the directory job control names in $COHORT_SUMMARY_DIR, if any)")
      ->check(FileSystemPath());
  app.add_option("--seed", flags.seed, "seed of the initial weights")->capture_default_str();
  app.add_option("--threads", flags.threads,
                 "libtorch and OpenBLAS threads (0: hardware threads / training tasks on this "
                 "host)")
      ->capture_default_str()
      ->check(IntegerAtLeast(0));
  app.add_option("--startup_timeout_s", flags.startup_timeout_s,
                 "how long a worker waits for the chief to initialise the model")
      ->capture_default_str()
      ->check(PositiveReal());
  app.add_option("--sync_timeout_s", flags.sync_timeout_s,
                 "sync training: how long a ps waits for the missing workers' gradients of a "
                 "step, from the first one, before it applies what arrived")
      ->capture_default_str()
      ->check(PositiveReal());
  app.add_option("--mode", flags.mode,
                 "async (each push applied on arrival) or sync (one averaged gradient per step "
                 "from every training task)")
      ->capture_default_str()
      ->check(CLI::IsMember({"async", "sync"}));
  app.add_option("--bad_rows", flags.bad_rows,
                 "a malformed row of the taxi CSV files: fail (name it and stop) or skip (leave "
                 "it out, count it, name the first few)")
      ->capture_default_str()
      ->check(CLI::IsMember({"fail", "skip"}));
  app.add_option("--max_staleness", flags.max_staleness,
                 "async training: keep each worker at most N steps ahead of the slowest (-1: "
                 "unbounded)")
      ->capture_default_str()
      ->check(IntegerAtLeast(-1));
  app.add_option("--checkpoint_every_steps", flags.checkpoint_every_steps,
                 "the chief checkpoints every N global steps into --checkpoint_path (0: only at "
                 "the end)")
      ->capture_default_str()
      ->check(IntegerAtLeast(0));
  app.add_option("--ps_retry_timeout_s", flags.ps_retry_timeout_s,
                 "how long a worker retries an unreachable ps before failing, naming it")
      ->capture_default_str()
      ->check(PositiveReal());
  app.add_option("--ps_request_timeout_s", flags.ps_request_timeout_s,
                 "how long a worker waits for a ps to answer a request before it counts the ps "
                 "as unreachable (a ps behind a network partition never answers); sync mode: "
                 "more than --sync_timeout_s")
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
               "evaluate the saved model at --model_path on the eval split of its data set "
               "instead of training");
  app.add_option("--model_path", flags.model_path, "saved model directory for --evaluate")
      ->check(FileSystemPath());

  if (std::optional<int> exit_code = ParseCommandLine(&app, argc, argv)) return *exit_code;
  if (std::optional<int> exit_code = CheckEvaluateFlags(flags.evaluate, flags.model_path)) {
    return *exit_code;
  }
  if (flags.mode == "sync" && flags.ps_request_timeout_s <= flags.sync_timeout_s) {
    // A sync push is answered only when its step completes, up to the sync timeout later.
    char message[256];
    std::snprintf(message, sizeof(message),
                  "--ps_request_timeout_s %g must be more than --sync_timeout_s %g in sync mode: "
                  "a ps answers a push when its step completes",
                  flags.ps_request_timeout_s, flags.sync_timeout_s);
    PrintError(message);
    return kExitUsage;
  }
  const bool data_dir_given = app.count("--data_dir") > 0;
  if (flags.evaluate) return EvaluateSavedModel(flags, data_dir_given);
  if (!data_dir_given) {
    PrintError("taxi-train needs --data_dir DIR (the taxi data set is generated there once)");
    return kExitUsage;
  }
  return Train(flags);
}

}  // namespace
}  // namespace cohort::taxi

int main(int argc, char** argv) { return cohort::taxi::Main(argc, argv); }
