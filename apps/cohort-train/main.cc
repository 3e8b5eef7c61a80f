// cohort-train: trains an image classifier on MNIST-format data, alone or as one worker of a
// MultiWorkerMirrored job, driven by TF_CONFIG exactly like a TensorFlow Keras program.
// Parameter-server training is the taxi example's program, taxi-train (examples/taxi).
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
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "cluster/tf_config.h"
#include "net/auth.h"
#include "train/backup_and_restore.h"
#include "train/compute_threads.h"
#include "train/data/image_batch_source.h"
#include "train/data/image_dataset.h"
#include "train/image_classifier.h"
#include "train/mirrored_strategy.h"
#include "train/model_checkpoint.h"
#include "train/model_manifest.h"
#include "train/models.h"
#include "train/progress_callback.h"
#include "train/saved_model.h"
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
  bool evaluate = false;
  std::string model_path;
};

// The model name the wide & deep taxi model had here before it moved to taxi-train.
constexpr char kMovedWideDeepModel[] = "wide_deep";
constexpr char kMovedWideDeepMessage[] =
    "the wide & deep taxi model and parameter-server training moved to the taxi example's own "
    "program, taxi-train (examples/taxi; built as build/examples/taxi/taxi-train), which takes "
    "the same flags";

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

// Whether the command line asks for --model=wide_deep (either spelling), which is told where the
// model went before its parameter-server flags could be refused as unknown.
bool AsksForMovedWideDeep(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == std::string("--model=") + kMovedWideDeepModel) return true;
    if (arg == "--model" && i + 1 < argc && argv[i + 1] == std::string(kMovedWideDeepModel)) {
      return true;
    }
  }
  return false;
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
  if (manifest->model == kMovedWideDeepModel) {
    Fail(Status::InvalidArgument(flags.model_path + " holds a " + kMovedWideDeepModel +
                                 " model: " + kMovedWideDeepMessage));
  }
  EvaluateImageModel(flags.model_path, data_dir);
  std::fflush(stdout);
  return kExitOk;
}

int Train(const Flags& flags) {
  auto config = cluster::TfConfigFromEnvironment();
  if (!config.ok()) Fail(config.status());
  if (config->cluster.NumTasks("ps") > 0 || config->task.type == "ps") {
    Fail(Status::InvalidArgument(
        "TF_CONFIG's cluster has ps tasks, so this is parameter-server training, which is the "
        "taxi example's program, taxi-train (examples/taxi); --model=" +
        flags.model + " trains with MultiWorkerMirrored, in a cluster without ps tasks"));
  }
  const int threads = flags.threads > 0 ? flags.threads : AutomaticThreads(*config);
  const BlasLibrary blas = SetUpCompute(threads);

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
      "Parameter-server training (a cluster with ps tasks) is the taxi example's program, "
      "taxi-train (examples/taxi).\n"
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
      ->check(CLI::IsMember(ModelNames()));
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
                 "how long to wait for every worker to join")
      ->capture_default_str()
      ->check(PositiveReal());
  app.add_option("--peer_timeout_s", flags.peer_timeout_s,
                 "MultiWorkerMirrored: how long a silent worker is given before it counts as dead "
                 "and the others exit to be restarted (at least 3 s)")
      ->capture_default_str()
      ->check(AtLeastThreeSeconds());
  app.add_flag("--evaluate", flags.evaluate,
               "evaluate the saved model at --model_path on the test split instead of training");
  app.add_option("--model_path", flags.model_path, "saved model directory for --evaluate");

  if (AsksForMovedWideDeep(argc, argv)) {
    PrintError(std::string("--model=") + kMovedWideDeepModel + ": " + kMovedWideDeepMessage);
    return kExitUsage;
  }
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
  if (flags.evaluate) {
    return Evaluate(flags, app.count("--data_dir") > 0);
  }
  return Train(flags);
}

}  // namespace
}  // namespace cohort::train

int main(int argc, char** argv) { return cohort::train::Main(argc, argv); }
