// Multi-process tests on loopback: this test binary starts copies of itself as the workers of a
// MultiWorkerMirrored cluster (the COHORT_TRAIN_TEST_WORKER_OUT variable turns a copy into a
// worker before gtest starts).
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <thread>

#include "base/file.h"
#include "cluster/tf_config.h"
#include "regression_model.h"
#include "test_support.h"
#include "testing/files.h"
#include "testing/processes.h"
#include "testing/scratch_directory.h"
#include "train/gradient_compression.h"
#include "train/mirrored_strategy.h"

extern char** environ;

namespace cohort::train {
namespace {

namespace fs = std::filesystem;
using cohort::testing::ReadText;
using cohort::testing::WaitForChildOrSignal;

constexpr char kWorkerOutVariable[] = "COHORT_TRAIN_TEST_WORKER_OUT";
constexpr int kWorkerRetryableExit = 138;

// Marks `path` once training has made progress, so the parent knows when to strike.
class TouchAfterStep : public Callback {
 public:
  TouchAfterStep(std::string path, int64_t step) : path_(std::move(path)), step_(step) {}
  Status OnBatchEnd(const FitPlan&, TrainingState&, const BatchLogs& logs) override {
    if (logs.global_step == step_) testing::WriteFile(path_, "training");
    return Status::OK();
  }

 private:
  std::string path_;
  int64_t step_;
};

// Saves the state a trainer starts from and stops it before its first step.
class SaveInitialState : public Callback {
 public:
  explicit SaveInitialState(std::string path) : path_(std::move(path)) {}
  Status OnTrainBegin(const FitPlan&, TrainingState& state) override {
    StatusOr<FileChecksum> saved = state.Save(path_);
    if (!saved.ok()) return saved.status();
    return Status::Internal("initial state saved");  // stops the run here
  }

 private:
  std::string path_;
};

// Makes a worker start from other weights than the chief's (as if its backup or its random
// initialisation differed): only the chief's broadcast can bring it back in line.
class StartFromOtherWeights : public Callback {
 public:
  explicit StartFromOtherWeights(std::string path) : path_(std::move(path)) {}
  Status RestoreState(const FitPlan&, TrainingState& state) override {
    StatusOr<std::string> bytes = ReadWholeFile(path_);
    if (!bytes.ok()) return bytes.status();
    return state.Load(*bytes, path_);
  }

 private:
  std::string path_;
};

std::string Env(const char* name, const char* fallback = "") {
  const char* value = std::getenv(name);
  return value ? value : fallback;
}

// The model and data a run trains: the image classifier ("cnn") or the regression of
// regression_model.h, a model the fit loop knows only through its interfaces.
struct Workload {
  testing::SmallData images;
  testing::RegressionData vectors;
  std::string model;

  explicit Workload(std::string model_name) : model(std::move(model_name)) {}
  ModelFactory factory() const {
    return model == "regression" ? testing::RegressionModel::Factory() : images.Cnn();
  }
  const BatchSource* train() const {
    return model == "regression" ? static_cast<const BatchSource*>(&vectors.train)
                                 : &images.train_source;
  }
  const BatchSource* test() const {
    return model == "regression" ? static_cast<const BatchSource*>(&vectors.test)
                                 : &images.test_source;
  }
  StatusOr<std::unique_ptr<Trainer>> MakeTrainer(const TrainerOptions& options,
                                                 Strategy* strategy) const {
    testing::UseOneComputeThread();
    return Trainer::Create(options, factory(), train(), test(), strategy);
  }
};

// The worker side: train as TF_CONFIG says, then write the final parameters to the output file.
// Exits the process (0, 1, or 138 when a peer failed).
[[noreturn]] void RunWorker(const std::string& out) {
  testing::UseOneComputeThread();
  auto fail = [](const Status& status) {
    std::fprintf(stderr, "worker failed: %s\n", status.ToString().c_str());
    std::fflush(stderr);
    const bool retryable = status.code() == Status::Code::kUnavailable ||
                           status.code() == Status::Code::kDeadlineExceeded;
    std::_Exit(retryable ? kWorkerRetryableExit : 1);
  };
  auto config = cluster::TfConfigFromEnvironment();
  if (!config.ok()) fail(config.status());
  WorkerConnectionOptions connection;
  connection.job_name = "train-test";
  connection.startup_timeout = std::chrono::seconds(60);
  connection.peer_timeout = std::chrono::seconds(10);
  auto strategy = MakeStrategy(*config, connection);
  if (!strategy.ok()) fail(strategy.status());
  TrainerOptions options = testing::SmallRun();
  options.epochs = 1;
  options.steps_per_epoch = std::stoll(Env("COHORT_TRAIN_TEST_STEPS"));
  options.per_worker_batch = std::stoll(Env("COHORT_TRAIN_TEST_BATCH"));
  options.optimizer = Env("COHORT_TRAIN_TEST_OPTIMIZER", "sgd");
  options.learning_rate = std::stod(Env("COHORT_TRAIN_TEST_LEARNING_RATE", "0.1"));
  options.bucket_bytes = 64 * 1024;  // several buckets, so ordering across them is exercised
  auto compression = ParseGradientCompression(Env("COHORT_TRAIN_TEST_COMPRESSION", "none"));
  if (!compression.ok()) fail(compression.status());
  options.gradient_compression = *compression;
  const Workload workload(Env("COHORT_TRAIN_TEST_MODEL", "cnn"));
  auto trainer = workload.MakeTrainer(options, strategy->get());
  if (!trainer.ok()) fail(trainer.status());
  TouchAfterStep touch(out + ".training", 3);
  std::vector<Callback*> callbacks = {&touch};
  // Every non-chief worker loads the initial state of a run with another seed before the chief's
  // broadcast, so the equivalence below holds only if the broadcast reaches every worker.
  const std::string other_state = out + ".other-seed.pt";
  StartFromOtherWeights other_weights(other_state);
  if (config->task.index != 0) {
    TrainerOptions other_options = options;
    other_options.seed = options.seed + 1000;
    SingleProcessStrategy alone;
    auto other = workload.MakeTrainer(other_options, &alone);
    if (!other.ok()) fail(other.status());
    SaveInitialState save(other_state);
    if (Status status = (*other)->Fit({&save}); status.code() != Status::Code::kInternal) {
      fail(status);
    }
    callbacks.push_back(&other_weights);
  }
  if (Status status = (*trainer)->Fit(callbacks); !status.ok()) fail(status);
  const std::vector<float> parameters = (*trainer)->ParameterVector();
  std::ofstream file(out, std::ios::binary);
  file.write(reinterpret_cast<const char*>(parameters.data()),
             static_cast<std::streamsize>(parameters.size() * sizeof(float)));
  file.close();
  std::_Exit(file ? 0 : 1);
}

const bool kRanAsWorker = [] {
  const char* out = std::getenv(kWorkerOutVariable);
  if (out != nullptr) RunWorker(out);
  return false;
}();

// `count` loopback ports that were free a moment ago (held together, so all distinct).
std::vector<int> FreePorts(int count) {
  std::vector<int> sockets, ports;
  for (int i = 0; i < count; ++i) {
    int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)), 0);
    socklen_t length = sizeof(address);
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length);
    sockets.push_back(fd);
    ports.push_back(ntohs(address.sin_port));
  }
  for (int fd : sockets) ::close(fd);
  return ports;
}

struct Worker {
  pid_t pid = -1;
  std::string out;
  std::string log;
};

// Starts `workers` copies of this binary as worker:0..n-1 of one cluster.
std::vector<Worker> StartWorkers(const std::string& dir, int workers, int64_t steps, int64_t batch,
                                 const std::string& optimizer, double learning_rate,
                                 const std::string& model = "cnn",
                                 const std::string& compression = "none") {
  cluster::TfConfig config;
  for (int port : FreePorts(workers)) {
    config.cluster.jobs["worker"].push_back("localhost:" + std::to_string(port));
  }
  std::vector<Worker> started;
  for (int index = 0; index < workers; ++index) {
    config.task = {"worker", index};
    Worker worker;
    worker.out = dir + "/worker-" + std::to_string(index) + ".params";
    worker.log = dir + "/worker-" + std::to_string(index) + ".log";
    std::vector<std::string> variables = {
        "TF_CONFIG=" + cluster::FormatTfConfig(config),
        "COHORT_JOB_SECRET=multi-worker-test-secret",
        std::string(kWorkerOutVariable) + "=" + worker.out,
        "COHORT_TRAIN_TEST_STEPS=" + std::to_string(steps),
        "COHORT_TRAIN_TEST_BATCH=" + std::to_string(batch),
        "COHORT_TRAIN_TEST_OPTIMIZER=" + optimizer,
        "COHORT_TRAIN_TEST_LEARNING_RATE=" + std::to_string(learning_rate),
        "COHORT_TRAIN_TEST_MODEL=" + model,
        "COHORT_TRAIN_TEST_COMPRESSION=" + compression};
    for (char** entry = environ; *entry != nullptr; ++entry) {
      const std::string text = *entry;
      if (text.rfind("TF_CONFIG=", 0) != 0 && text.rfind("COHORT_", 0) != 0) {
        variables.push_back(text);
      }
    }
    std::vector<char*> envp;
    for (auto& variable : variables) envp.push_back(variable.data());
    envp.push_back(nullptr);
    std::string self = fs::read_symlink("/proc/self/exe").string();
    char* argv[] = {self.data(), nullptr};
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, worker.log.c_str(),
                                     O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
    EXPECT_EQ(posix_spawn(&worker.pid, self.c_str(), &actions, nullptr, argv, envp.data()), 0);
    posix_spawn_file_actions_destroy(&actions);
    started.push_back(worker);
  }
  return started;
}

std::vector<float> ReadParameters(const std::string& path) {
  const std::string bytes = ReadText(path);
  std::vector<float> values(bytes.size() / sizeof(float));
  std::memcpy(values.data(), bytes.data(), values.size() * sizeof(float));
  return values;
}

void ExpectEquivalence(const std::string& optimizer, double learning_rate, double tolerance,
                       const std::string& model = "cnn", int num_workers = 3,
                       const std::string& compression = "none") {
  constexpr int64_t kBatch = 8, kSteps = 5;
  const cohort::testing::ScratchDirectory scratch("cohort-multi-worker-" + model + "-" + optimizer +
                                                  "-" + compression);
  const std::string dir = scratch.path().string();
  std::vector<Worker> workers =
      StartWorkers(dir, num_workers, kSteps, kBatch, optimizer, learning_rate, model, compression);

  // One process at batch N*B, same seed, trained while the workers train.
  const Workload workload(model);
  TrainerOptions options = testing::SmallRun();
  options.epochs = 1;
  options.steps_per_epoch = kSteps;
  options.per_worker_batch = num_workers * kBatch;
  options.optimizer = optimizer;
  options.learning_rate = learning_rate;
  SingleProcessStrategy single;
  auto trainer = workload.MakeTrainer(options, &single);
  ASSERT_TRUE(trainer.ok()) << trainer.status().ToString();
  // The same seed gives every run the same initial weights (the chief broadcasts its own anyway).
  const std::vector<float> initial = (*trainer)->ParameterVector();
  ASSERT_TRUE((*trainer)->Fit({}).ok());
  const std::vector<float> expected = (*trainer)->ParameterVector();

  std::vector<std::vector<float>> results;
  for (const Worker& worker : workers) {
    ASSERT_EQ(WaitForChildOrSignal(worker.pid, std::chrono::seconds(150), SIGKILL), 0)
        << ReadText(worker.log);
    results.push_back(ReadParameters(worker.out));
    ASSERT_EQ(results.back().size(), expected.size());
  }
  // The all-reduce gives every rank bit-identical sums, so the replicas are identical.
  for (size_t i = 1; i < results.size(); ++i) EXPECT_EQ(results[i], results[0]) << "worker " << i;
  double worst = 0;
  for (size_t i = 0; i < expected.size(); ++i) {
    worst = std::max(worst, static_cast<double>(std::fabs(results[0][i] - expected[i])));
  }
  EXPECT_LT(worst, tolerance) << "largest parameter difference after " << kSteps << " steps";
  // The workers really trained, so the match above says something: most parameters moved from
  // their initial values, and the largest move dwarfs the tolerance.
  ASSERT_EQ(initial.size(), expected.size());
  size_t moved = 0;
  double largest_move = 0;
  for (size_t i = 0; i < initial.size(); ++i) {
    const double move = std::fabs(results[0][i] - initial[i]);
    if (move > 0) ++moved;
    largest_move = std::max(largest_move, move);
  }
  EXPECT_GT(moved, initial.size() / 2) << moved << " of " << initial.size() << " parameters moved";
  EXPECT_GT(largest_move, 100 * tolerance);
}

// With the same seed, N workers at per-worker batch B take the same steps as one process at
// batch N*B: the gradient of the mean loss over N*B samples is the mean of the N workers'.
TEST(MultiWorker, ThreeWorkersMatchOneProcessWithTheGlobalBatchSgd) {
  ExpectEquivalence("sgd", 0.1, 1e-5);
}

TEST(MultiWorker, ThreeWorkersMatchOneProcessWithTheGlobalBatchAdam) {
  // Adam moves every parameter by about the learning rate whatever the size of its gradient, so
  // rounding differences in tiny gradients show up at the scale of the learning rate: allow 0.1%
  // of the total movement (learning rate x steps).
  ExpectEquivalence("adam", 0.01, 1e-3 * 0.01 * 5);
}

// The same holds for a model the loop knows only through BatchSource and TrainableModel.
TEST(MultiWorker, TwoWorkersTrainARegressionLikeOneProcess) {
  ExpectEquivalence("sgd", 0.05, 1e-5, "regression", /*num_workers=*/2);
}

// With gradients summed in 16 bits (--gradient_compression) the replicas stay identical, and
// they stay within 16-bit precision of the float32 run: SGD moves a parameter by the learning
// rate times the gradient, whose averaged value is off by at most about 2^-8 (bfloat16) or 2^-11
// (float16) of itself, a few hundredths of a percent of the movement compounded over 5 steps.
TEST(MultiWorker, TwoWorkersWithBf16GradientsStayWithinItsPrecisionOfOneProcess) {
  ExpectEquivalence("sgd", 0.1, 2e-4, "cnn", /*num_workers=*/2, "bf16");
}

TEST(MultiWorker, TwoWorkersWithFp16GradientsStayWithinItsPrecisionOfOneProcess) {
  ExpectEquivalence("sgd", 0.1, 3e-5, "cnn", /*num_workers=*/2, "fp16");
}

// SIGKILL one worker mid-training: the others learn it through the collectives within seconds,
// name it, and exit with the retryable code.
TEST(MultiWorker, SurvivorsOfADeadWorkerExitRetryablyNamingIt) {
  const cohort::testing::ScratchDirectory scratch("cohort-multi-worker-kill");
  const std::string dir = scratch.path().string();
  std::vector<Worker> workers = StartWorkers(dir, 3, /*steps=*/100000, /*batch=*/8, "sgd", 0.1);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while (!fs::exists(workers[2].out + ".training") && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ASSERT_TRUE(fs::exists(workers[2].out + ".training")) << ReadText(workers[2].log);
  ::kill(workers[2].pid, SIGKILL);
  const auto killed_at = std::chrono::steady_clock::now();
  EXPECT_EQ(WaitForChildOrSignal(workers[2].pid, std::chrono::seconds(10), SIGKILL), 128 + SIGKILL);
  for (int i = 0; i < 2; ++i) {
    EXPECT_EQ(WaitForChildOrSignal(workers[i].pid, std::chrono::seconds(60), SIGKILL),
              kWorkerRetryableExit)
        << ReadText(workers[i].log);
    EXPECT_NE(ReadText(workers[i].log).find("worker:2"), std::string::npos)
        << ReadText(workers[i].log);
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - killed_at).count();
  EXPECT_LT(seconds, 15.0) << "the survivors took too long to notice";
}

}  // namespace
}  // namespace cohort::train
