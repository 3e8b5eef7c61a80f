// taxi-train: every role of the Chicago-taxi parameter-server job (examples/taxi/tfjob.yaml),
// written on Cohort's public API (include/cohort) as any user's program would be: the wide & deep
// tip classifier is a torch::nn::Module (wide_deep_net.h) whose embeddings become sparse tables on
// the ps tasks, and cohort::Fit with the ParameterServer strategy does what the task's role asks
// (a ps serves its shard, the chief and the workers train, the evaluator follows the checkpoints).
// The wide part trains with FTRL on the servers, the DNN with Adagrad. With --evaluate it
// evaluates a saved taxi model instead.
//
// The same binary is every replica of the TFJob: TF_CONFIG (and COHORT_JOB_SECRET) say who is in
// the cluster and who this process is. The taxi data set is generated once into --data_dir.
//
// Exit status: 0 trained (or evaluated); 1 a permanent failure (bad data, TF_CONFIG, files);
// 2 bad flags; 3 an I/O error (a full disk), permanent; 138 a failure a restart can cure (a ps or
// the chief stopped answering), so that a restartPolicy of OnFailure or ExitCode restarts the task,
// which then continues from where the job is (cohort::Main's exit codes).
#include <torch/version.h>

#include <CLI/CLI.hpp>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cohort/callbacks.h"
#include "cohort/cluster.h"
#include "cohort/collectives.h"
#include "cohort/fit.h"
#include "cohort/parameter_server.h"
#include "cohort/status.h"
#include "cohort/storage.h"
#include "taxi_csv.h"
#include "taxi_dataset.h"
#include "taxi_features.h"
#include "wide_deep_net.h"

namespace cohort::taxi {
namespace {

constexpr char kProgram[] = "taxi-train";
constexpr int kExitUsage = 2;

struct Flags {
  int epochs = 3;
  int64_t per_worker_batch = 64;
  std::string saved_model_path;
  std::string checkpoint_path;
  std::string model = kWideDeepModelName;
  std::string data_dir;
  double learning_rate = 0.05;
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

void Print(const std::string& line) {
  std::printf("%s: %s\n", kProgram, line.c_str());
  std::fflush(stdout);
}

// The data code's errors (taxi_csv.h, taxi_dataset.h) as the API's exceptions.
template <typename T>
T Take(StatusOr<T> value) {
  if (value.ok()) return std::move(*value);
  const Status& status = value.status();
  throw Error(status.code() == Status::Code::kIOError    ? ErrorCode::kIOError
              : status.code() == Status::Code::kNotFound ? ErrorCode::kNotFound
                                                         : ErrorCode::kInvalidArgument,
              status.message());
}

std::chrono::milliseconds Milliseconds(double seconds) {
  return std::chrono::milliseconds(static_cast<int64_t>(seconds * 1000));
}

// --tensorboard_dir, else the directory job control names for this task in COHORT_SUMMARY_DIR,
// else none.
std::string TensorBoardDirectory(const Flags& flags) {
  if (!flags.tensorboard_dir.empty()) return flags.tensorboard_dir;
  const char* named = std::getenv("COHORT_SUMMARY_DIR");
  return named != nullptr ? named : "";
}

// One of the taxi CSV files, read with --bad_rows: a malformed row fails the run, or is skipped,
// counted, and (the first few) named in the log.
std::vector<TaxiTrip> ReadTaxiFile(const std::string& path, const std::string& bad_rows) {
  TaxiCsvReadOptions options;
  options.bad_rows = bad_rows == "skip" ? BadRowPolicy::kSkipAndCount : BadRowPolicy::kFail;
  TaxiCsvContents contents = Take(ReadTaxiCsv(path, options));
  if (contents.skipped_rows > 0) {
    Print("skipped " + std::to_string(contents.skipped_rows) + " malformed rows of " + path +
          " (--bad_rows=skip), the first:");
    for (const std::string& error : contents.first_errors) std::printf("  %s\n", error.c_str());
  }
  return std::move(contents.trips);
}

// The feature encoder of a data set: z-scores with its train split's statistics.
TaxiFeatureEncoder EncoderOf(const std::vector<TaxiTrip>& train) {
  return TaxiFeatureEncoder(Take(ComputeTaxiNumericStatistics(train)));
}

// A saved taxi model (weights.pt and manifest.json, as Fit saves them) evaluated on the eval split
// of the taxi data set in --data_dir; the feature statistics come from its train split, as they
// did in training.
void EvaluateSavedModel(const Flags& flags) {
  const std::string manifest_path = flags.model_path + "/manifest.json";
  std::string manifest_text;
  try {
    manifest_text = ReadStoredFile(manifest_path, size_t{1} << 20);
  } catch (const Error& error) {
    if (error.code() != ErrorCode::kNotFound) throw;
    throw Error(ErrorCode::kNotFound, "no saved model at " + manifest_path);
  }
  const nlohmann::json manifest = nlohmann::json::parse(manifest_text, nullptr, false);
  if (manifest.is_discarded() || !manifest.contains("model")) {
    throw Error(ErrorCode::kInvalidArgument, manifest_path + " is not a saved model's manifest");
  }
  const std::string model = manifest.at("model").get<std::string>();
  if (model != kWideDeepModelName) {
    throw Error(ErrorCode::kInvalidArgument,
                flags.model_path + " holds a " + model + " model, not the taxi example's " +
                    kWideDeepModelName + " (evaluate image models with cohort-train --evaluate)");
  }
  const std::vector<TaxiTrip> train =
      ReadTaxiFile(flags.data_dir + "/" + kTaxiTrainFile, flags.bad_rows);
  const std::vector<TaxiTrip> eval =
      ReadTaxiFile(flags.data_dir + "/" + kTaxiEvalFile, flags.bad_rows);
  const TaxiFeatureEncoder encoder = EncoderOf(train);
  const TaxiTrips trips(eval, encoder);
  WideDeepNet net;
  LoadModule(*net, flags.model_path + "/weights.pt");
  net->eval();
  torch::NoGradGuard no_grad;
  std::vector<torch::Tensor> logits, labels;
  constexpr int64_t kEvalBatch = 4096;
  for (int64_t begin = 0; begin < trips.size(); begin += kEvalBatch) {
    std::vector<int64_t> indices;
    for (int64_t i = begin; i < std::min(trips.size(), begin + kEvalBatch); ++i)
      indices.push_back(i);
    Batch batch = trips.Get(indices);
    logits.push_back(net->forward(batch.inputs));
    labels.push_back(batch.targets);
  }
  const torch::Tensor logit = torch::cat(logits), label = torch::cat(labels);
  const double loss = BinaryCrossEntropyWithLogits()(logit, label).item<double>();
  const double accuracy =
      ((logit > 0).to(torch::kFloat) == label).to(torch::kDouble).mean().item<double>();
  std::printf("model %s (%s) on %s: %lld eval trips\neval loss %.4f\naccuracy %.4f\nauc %.4f\n",
              flags.model_path.c_str(), model.c_str(), flags.data_dir.c_str(),
              static_cast<long long>(trips.size()), loss, accuracy,
              BinaryAuc(torch::sigmoid(logit), label));
}

// Every role of the job: Fit does what TF_CONFIG's task asks.
void Train(const Flags& flags) {
  const Cluster cluster = Cluster::FromEnvironment();
  if (cluster.NumTasks("ps") == 0) {
    throw Error(ErrorCode::kInvalidArgument,
                "the taxi example trains with parameter servers, but TF_CONFIG's cluster has no ps "
                "tasks (run it as a TFJob with PS replicas, e.g. examples/taxi/tfjob.yaml)");
  }
  ParameterServerOptions options;
  options.sync = flags.mode == "sync";
  options.sync_timeout = Milliseconds(flags.sync_timeout_s);
  options.max_staleness = flags.max_staleness;
  options.startup_timeout = Milliseconds(flags.startup_timeout_s);
  options.retry_timeout = Milliseconds(flags.ps_retry_timeout_s);
  options.request_timeout = Milliseconds(flags.ps_request_timeout_s);
  options.serve_timeout = Milliseconds(flags.ps_timeout_s);
  options.evaluator_timeout = Milliseconds(flags.evaluator_timeout_s);
  options.compute_threads = flags.threads;
  options.binary_auc = true;
  // DNNLinearCombinedClassifier's linear part: FTRL.
  ServerOptimizer ftrl;
  ftrl.kind = ServerOptimizer::Kind::kFtrl;
  ftrl.learning_rate = flags.wide_learning_rate;
  options.optimizer_for[kWidePart] = ftrl;
  ParameterServer strategy(cluster, options);

  FitOptions fit;
  fit.epochs = flags.epochs;
  fit.per_worker_batch = flags.per_worker_batch;
  fit.seed = flags.seed;
  fit.model_name = kWideDeepModelName;
  fit.optimizer_name = "ftrl+adagrad";
  fit.eval_batch = 4096;
  fit.saved_model_dir = flags.saved_model_path;
  fit.callbacks.push_back(Progress());
  if (!flags.checkpoint_path.empty()) {
    fit.callbacks.push_back(BackupAndRestore(flags.checkpoint_path, flags.checkpoint_every_steps));
  }
  const std::string tensorboard_dir = TensorBoardDirectory(flags);
  if (!tensorboard_dir.empty()) fit.callbacks.push_back(TensorBoard(tensorboard_dir));
  if (strategy.is_ps()) {
    // A ps needs no data: it serves until the chief ends the job.
    WideDeepNet net;
    torch::optim::Adagrad optimizer(net->parameters(),
                                    torch::optim::AdagradOptions(flags.learning_rate));
    const TaxiFeatureEncoder no_encoder{TaxiNumericStatistics{}};
    const TaxiTrips none({}, no_encoder);
    Fit(strategy, net, optimizer, none, none, BinaryCrossEntropyWithLogits(), fit);
    Print(cluster.task().ToString() + ": the chief ended the job");
    return;
  }

  const TaxiGroundTruth truth = Take(EnsureTaxiDataset(flags.data_dir, TaxiDatasetOptions{}));
  const std::vector<TaxiTrip> train =
      ReadTaxiFile(flags.data_dir + "/" + kTaxiTrainFile, flags.bad_rows);
  const std::vector<TaxiTrip> eval =
      ReadTaxiFile(flags.data_dir + "/" + kTaxiEvalFile, flags.bad_rows);
  const TaxiFeatureEncoder encoder = EncoderOf(train);
  const TaxiTrips train_trips(train, encoder), eval_trips(eval, encoder);

  torch::manual_seed(flags.seed);  // the same initial DNN on every task
  WideDeepNet net;
  // The DNN's optimizer, Keras' Adagrad (initial accumulator 0.1); the servers apply it.
  torch::optim::Adagrad optimizer(
      net->parameters(),
      torch::optim::AdagradOptions(flags.learning_rate).initial_accumulator_value(0.1));
  // (Fit's Progress callback describes the job and the training.)
  Print(cluster.task().ToString() + ": " + std::to_string(train.size()) + " train and " +
        std::to_string(eval.size()) + " eval trips from " + flags.data_dir + " (ceiling auc " +
        std::to_string(truth.ceiling_auc) + ")");
  const FitResult result =
      Fit(strategy, net, optimizer, train_trips, eval_trips, BinaryCrossEntropyWithLogits(), fit);
  const auto auc = result.metrics.find("auc");
  if (strategy.is_evaluator()) {
    std::printf("final eval auc %.4f (ceiling %.4f)\n",
                auc != result.metrics.end() ? auc->second : 0.0, truth.ceiling_auc);
    return;
  }
  Print(cluster.task().ToString() + " done (global step " + std::to_string(result.global_steps) +
        ")");
  if (strategy.is_chief()) {
    std::printf("eval auc on %zu trips: ceiling %.4f\nauc %.4f\n", eval.size(), truth.ceiling_auc,
                auc != result.metrics.end() ? auc->second : 0.0);
    if (!flags.saved_model_path.empty()) {
      std::printf("saved model: %s (evaluate: %s --evaluate --model_path %s --data_dir %s)\n",
                  flags.saved_model_path.c_str(), kProgram, flags.saved_model_path.c_str(),
                  flags.data_dir.c_str());
    }
  }
}

// A path flag that may name object storage (s3://bucket/dir, gs://bucket/dir; cohort/storage.h):
// a malformed URL, or one whose settings do not resolve, is refused before any work starts.
CLI::Validator PathOrStorageUrl() {
  return CLI::Validator([](std::string& text) -> std::string { return StoragePathProblem(text); },
                        "PATH|URL");
}

// A path flag that must be a file system path: a storage URL (s3://, gs://) is refused naming it.
CLI::Validator FileSystemPath() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        const size_t separator = text.find("://");
        if (separator == std::string::npos || separator == 0) return "";
        const std::string scheme = text.substr(0, separator);
        for (char c : scheme) {
          if (!std::isalnum(static_cast<unsigned char>(c)) && c != '+' && c != '-' && c != '.') {
            return "";
          }
        }
        return "\"" + text + "\" is a URL (" + scheme + "://), and " + kProgram +
               " reads and writes only file system paths; mount the storage on this machine (a "
               "volume, or a FUSE mount of the bucket) and give the mounted path, e.g. /mnt/" +
               scheme + "/" + text.substr(separator + 3);
      },
      "PATH");
}

CLI::Validator PositiveReal() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        char* end = nullptr;
        const double value = std::strtod(text.c_str(), &end);
        if (end == text.c_str() || *end != '\0' || !(value > 0)) {
          return "expected a positive number, got \"" + text + "\"";
        }
        return "";
      },
      "POSITIVE");
}

int Usage(const std::string& message) {
  std::fprintf(stderr, "%s: error: %s\n", kProgram, message.c_str());
  return kExitUsage;
}

int Main(int argc, char** argv) {
  CLI::App app{
      "taxi-train: every role of the Chicago-taxi parameter-server job (a wide & deep tip "
      "classifier on Cohort's public API): ps, chief, worker and evaluator. TF_CONFIG says who is "
      "in the cluster and who this process is.",
      kProgram};
  app.footer(
      "ps tasks serve the variables until the chief ends the job; the chief and workers pull the "
      "parameters and embedding rows their batch needs, push gradients (--mode async|sync, "
      "--max_staleness); the chief checkpoints the servers every --checkpoint_every_steps into "
      "<checkpoint_path>/ps, evaluates the final model on the taxi eval split (prints \"auc "
      "0.XXXX\") and saves it (weights.pt + manifest.json); an evaluator task evaluates each "
      "checkpoint (TensorBoard under <tensorboard_dir>/eval, <checkpoint_path>/ps/eval/"
      "metrics.json) and exits after the final one. The taxi data set is generated once into "
      "--data_dir.\n"
      "Environment: TF_CONFIG (cluster and task), COHORT_JOB_SECRET (authenticates peers), "
      "COHORT_JOB_NAME (optional), COHORT_SUMMARY_DIR (default --tensorboard_dir).\n"
      "Exit status: 0 done; 1 permanent failure (data, TF_CONFIG, files); 2 bad flags; 3 an I/O "
      "error (a full disk: the file is named), permanent too; 138 a ps or the chief stopped "
      "answering: restart the task and it continues where the job is.");
  Flags flags;
  app.add_option("--epochs", flags.epochs, "number of passes over the training split")
      ->capture_default_str()
      ->check(CLI::Range(1, 1 << 20));
  app.add_option("--per_worker_batch", flags.per_worker_batch, "trips per task per step")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 20));
  app.add_option("--saved_model_path", flags.saved_model_path,
                 "directory or object storage prefix (s3://bucket/dir, gs://bucket/dir) for the "
                 "trained model (weights.pt + manifest.json); empty: not saved")
      ->check(PathOrStorageUrl());
  app.add_option("--checkpoint_path", flags.checkpoint_path,
                 "the backup directory (BackupAndRestore): the chief checkpoints the servers into "
                 "<dir>/ps, which restarted ps tasks restore and the evaluator follows; a "
                 "directory or an object storage prefix (s3://, gs://). Empty: no checkpoints")
      ->check(PathOrStorageUrl());
  app.add_option("--model", flags.model, "model architecture (the taxi example has one)")
      ->capture_default_str()
      ->check(CLI::IsMember({std::string(kWideDeepModelName)}));
  app.add_option("--data_dir", flags.data_dir,
                 "the taxi data set (train.csv, eval.csv, ground_truth.json), generated there "
                 "once")
      ->check(FileSystemPath());
  app.add_option("--learning_rate", flags.learning_rate, "the DNN's Adagrad learning rate")
      ->capture_default_str()
      ->check(PositiveReal());
  app.add_option("--wide_learning_rate", flags.wide_learning_rate,
                 "FTRL learning rate of the linear part")
      ->capture_default_str()
      ->check(PositiveReal());
  app.add_option("--tensorboard_dir", flags.tensorboard_dir,
                 "write TensorBoard event files to <dir>/train (chief) and <dir>/eval (evaluator) "
                 "(default: the directory job control names in $COHORT_SUMMARY_DIR, if any); an "
                 "object storage prefix (s3://, gs://) gets a series of closed event files")
      ->check(PathOrStorageUrl());
  app.add_option("--seed", flags.seed, "seed of the initial weights and the shuffling")
      ->capture_default_str();
  app.add_option("--threads", flags.threads,
                 "libtorch compute threads (0: hardware threads / training tasks on this host)")
      ->capture_default_str()
      ->check(CLI::Range(0, 1024));
  app.add_option("--startup_timeout_s", flags.startup_timeout_s,
                 "how long a worker waits for the chief to create the variables")
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
      ->check(CLI::Range(int64_t{-1}, int64_t{1} << 40));
  app.add_option("--checkpoint_every_steps", flags.checkpoint_every_steps,
                 "the chief checkpoints every N global steps into <checkpoint_path>/ps (0: at "
                 "every epoch end)")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 40));
  app.add_option("--ps_retry_timeout_s", flags.ps_retry_timeout_s,
                 "how long a worker retries an unreachable ps before failing, naming it")
      ->capture_default_str()
      ->check(PositiveReal());
  app.add_option("--ps_request_timeout_s", flags.ps_request_timeout_s,
                 "how long a worker waits for a ps to answer a request before it counts the ps "
                 "as unreachable; sync mode: more than --sync_timeout_s")
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
               "evaluate the saved model at --model_path on the eval split of the data set in "
               "--data_dir instead of training");
  app.add_option("--model_path", flags.model_path,
                 "saved model directory or object storage prefix (s3://, gs://) for --evaluate")
      ->check(PathOrStorageUrl());

  // The version of Cohort it was built in (the build defines TAXI_TRAIN_VERSION) and its libtorch.
  app.set_version_flag("--version", std::string(kProgram) + " " + TAXI_TRAIN_VERSION +
                                        "\nbuilt with libtorch " + TORCH_VERSION);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    std::printf("%s", app.help().c_str());
    return 0;
  } catch (const CLI::CallForVersion& version) {
    std::printf("%s\n", version.what());
    return 0;
  } catch (const CLI::ParseError& error) {
    return Usage(std::string(error.what()) + "\nRun " + kProgram + " --help for usage.");
  }
  if (flags.evaluate && flags.model_path.empty()) return Usage("--evaluate needs --model_path DIR");
  if (!flags.evaluate && !flags.model_path.empty()) {
    return Usage("--model_path is only used with --evaluate (to save a model: --saved_model_path)");
  }
  if (flags.mode == "sync" && flags.ps_request_timeout_s <= flags.sync_timeout_s) {
    char message[256];
    std::snprintf(message, sizeof(message),
                  "--ps_request_timeout_s %g must be more than --sync_timeout_s %g in sync mode: "
                  "a ps answers a push when its step completes",
                  flags.ps_request_timeout_s, flags.sync_timeout_s);
    return Usage(message);
  }
  if (flags.data_dir.empty()) {
    return Usage("taxi-train needs --data_dir DIR (the taxi data set is generated there once)");
  }
  return cohort::Main([&] { flags.evaluate ? EvaluateSavedModel(flags) : Train(flags); });
}

}  // namespace
}  // namespace cohort::taxi

int main(int argc, char** argv) { return cohort::taxi::Main(argc, argv); }
