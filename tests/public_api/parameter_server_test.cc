// cohort/parameter_server.h: a module with an embedding trains through Fit in a real job of ps
// tasks, a chief and a worker (forked processes with TF_CONFIG), async and sync; the servers hold
// the variables (each writes its shard of the checkpoints, and the chief's module gets their
// values); an evaluator follows the checkpoints; the mistakes a user makes are named.
#include "cohort/parameter_server.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <thread>

#include "api_test_support.h"
#include "cohort/status.h"

namespace cohort {
namespace {

using api_testing::Job;
using api_testing::Report;
using api_testing::TempDir;

constexpr int64_t kIds = 40;

// Column 0 an id in [0, kIds), columns 1-2 noise; the class is the id's parity, so only the
// embedding can tell it.
struct Data {
  explicit Data(int64_t samples, uint64_t seed) {
    torch::manual_seed(seed);
    torch::Tensor ids = torch::randint(0, kIds, {samples, 1}).to(torch::kFloat32);
    inputs = torch::cat({ids, torch::randn({samples, 2})}, 1);
    targets = ids.squeeze(1).to(torch::kInt64).remainder(2);
  }
  torch::Tensor inputs, targets;
};

struct TaggerImpl : torch::nn::Module {
  TaggerImpl() {
    embedding = register_module("embedding", torch::nn::Embedding(kIds, 4));
    fc = register_module("fc", torch::nn::Linear(6, 2));
  }
  torch::Tensor forward(torch::Tensor x) {
    torch::Tensor ids = x.select(1, 0).to(torch::kInt64);
    return fc(torch::cat({embedding(ids), x.slice(1, 1)}, 1));
  }
  torch::nn::Embedding embedding{nullptr};
  torch::nn::Linear fc{nullptr};
};
TORCH_MODULE(Tagger);

// The same with one logit, for a binary classifier: a linear part over the id (a width-1
// embedding, trained with FTRL) plus a linear layer over the features.
struct WideTaggerImpl : torch::nn::Module {
  WideTaggerImpl() {
    wide = register_module("wide", torch::nn::Embedding(kIds, 1));
    fc = register_module("fc", torch::nn::Linear(2, 1));
  }
  torch::Tensor forward(torch::Tensor x) {
    torch::Tensor ids = x.select(1, 0).to(torch::kInt64);
    return wide(ids).squeeze(1) + fc(x.slice(1, 1)).squeeze(1);
  }
  torch::nn::Embedding wide{nullptr};
  torch::nn::Linear fc{nullptr};
};
TORCH_MODULE(WideTagger);

struct NoParametersImpl : torch::nn::Module {
  torch::Tensor forward(torch::Tensor x) { return x; }
};
TORCH_MODULE(NoParameters);

ParameterServerOptions TestOptions(bool sync) {
  ParameterServerOptions options;
  options.sync = sync;
  options.startup_timeout = std::chrono::seconds(60);
  options.retry_timeout = std::chrono::seconds(20);
  options.request_timeout = std::chrono::seconds(60);
  options.sync_timeout = std::chrono::seconds(20);
  options.serve_timeout = std::chrono::seconds(200);
  options.evaluator_timeout = std::chrono::seconds(120);
  options.linger = std::chrono::seconds(2);
  options.compute_threads = 1;
  return options;
}

FitOptions SmallFit(const TempDir& dir) {
  FitOptions options;
  options.epochs = 4;
  options.per_worker_batch = 16;
  options.metrics = {Accuracy()};
  options.eval_batch = 64;
  options.callbacks = {BackupAndRestore(dir / "backup"), ModelCheckpoint(dir / "checkpoints")};
  options.saved_model_dir = dir / "model";
  return options;
}

// Async training ends when the job's global step reaches its total, whoever pushed the steps: a
// chief that starts before a worker has loaded libtorch could train the whole job alone and end
// it, and the late worker would find no server. So each training task says it is up (a file in
// `dir`), and the chief starts once all are, waiting at most a minute.
void StartTogether(const Cluster& cluster, const TempDir& dir) {
  const std::string type = cluster.task().type;
  if (type == "ps" || type == "evaluator") return;
  std::ofstream(dir / ("up-" + cluster.task().ToString()));
  if (!cluster.is_chief()) return;
  const int training_tasks = cluster.world_size();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(1);
  for (;;) {
    int up = 0;
    for (const auto& entry : std::filesystem::directory_iterator(dir.path())) {
      up += entry.path().filename().string().rfind("up-", 0) == 0 ? 1 : 0;
    }
    if (up == training_tasks) return;
    if (std::chrono::steady_clock::now() > deadline) {
      throw std::runtime_error("waited a minute for the " + std::to_string(training_tasks) +
                               " training tasks to start; " + std::to_string(up) + " did");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

// The loss of `net` on `data` as it is now.
double LossOf(Tagger& net, const Data& data) {
  torch::NoGradGuard no_grad;
  return torch::nn::functional::cross_entropy(net->forward(data.inputs), data.targets)
      .item<double>();
}

// A job of `tasks` training the tagger; each task reports what Fit returned.
std::vector<api_testing::WorkerOutcome> TrainTagger(const std::vector<std::string>& tasks,
                                                    bool sync, const TempDir& dir, int epochs = 4) {
  return Job(tasks, [&](const Cluster& cluster) {
    ParameterServer strategy(cluster, TestOptions(sync));
    const Data train(640, 1), test(160, 2);
    TensorSource train_source(train.inputs, train.targets);
    TensorSource test_source(test.inputs, test.targets);
    torch::manual_seed(7);
    Tagger net;
    const double initial_loss = LossOf(net, test);
    torch::optim::Adagrad optimizer(net->parameters(), torch::optim::AdagradOptions(0.3));
    if (!sync) StartTogether(cluster, dir);
    FitOptions options = SmallFit(dir);
    options.epochs = epochs;
    const FitResult result =
        Fit(strategy, net, optimizer, train_source, test_source, CrossEntropyLoss(), options);
    Report(strategy.Describe());
    Report("served " + std::to_string(result.served));
    Report("steps " + std::to_string(result.global_steps));
    Report("already_complete " + std::to_string(result.already_complete));
    if (strategy.is_chief() || strategy.is_evaluator()) {
      Report("initial_loss " + std::to_string(initial_loss));
      Report("loss " + std::to_string(result.loss));
      Report("accuracy " + std::to_string(result.metrics.at("accuracy")));
    }
    if (strategy.is_chief()) {
      // The chief's module holds the servers' final values: its own loss is the evaluated one.
      Report("module_loss " + std::to_string(LossOf(net, test)));
      Tagger loaded;
      torch::load(loaded, dir / "model/weights.pt");
      Report(std::string("saved_matches ") +
             (torch::equal(loaded->embedding->weight, net->embedding->weight) &&
                      torch::equal(loaded->fc->weight, net->fc->weight)
                  ? "yes"
                  : "no"));
    }
    return 0;
  });
}

// The number on the line `key N` of `report`.
double Figure(const std::string& report, const std::string& key) {
  const std::string text = "\n" + report;
  const size_t at = text.find("\n" + key + " ");
  if (at == std::string::npos) {
    ADD_FAILURE() << "no " << key << " in " << report;
    return -1;
  }
  return std::stod(text.substr(at + key.size() + 2));
}

void ExpectTrained(const std::vector<std::string>& tasks,
                   const std::vector<api_testing::WorkerOutcome>& outcomes, int64_t expected_steps,
                   int64_t extra_steps) {
  for (size_t i = 0; i < tasks.size(); ++i) {
    ASSERT_EQ(outcomes[i].exit_code, 0) << tasks[i] << ": " << outcomes[i].report;
    const std::string& report = outcomes[i].report;
    if (tasks[i] == "ps") {
      EXPECT_EQ(Figure(report, "served"), 1) << report;
      continue;
    }
    EXPECT_EQ(Figure(report, "served"), 0) << report;
    if (tasks[i] == "chief") {
      EXPECT_GE(Figure(report, "steps"), expected_steps) << report;
      EXPECT_LE(Figure(report, "steps"), expected_steps + extra_steps) << report;
      EXPECT_LT(Figure(report, "loss"), 0.5 * Figure(report, "initial_loss")) << report;
      EXPECT_GT(Figure(report, "accuracy"), 0.9) << report;
      EXPECT_NEAR(Figure(report, "module_loss"), Figure(report, "loss"), 1e-3) << report;
      EXPECT_NE(report.find("saved_matches yes"), std::string::npos) << report;
    }
  }
}

TEST(ParameterServer, AsyncTrainingWithTwoServersAndAnEvaluator) {
  TempDir dir;
  const std::vector<std::string> tasks = {"chief", "worker", "ps", "ps", "evaluator"};
  const auto outcomes = TrainTagger(tasks, /*sync=*/false, dir);
  // Async: one global step per push, 640 samples / 16 per push, 4 epochs. A training task reads
  // the global step with the values it pulled while its previous step ran, so each may push up
  // to twice after the total is reached, as TensorFlow's async workers overshoot.
  ExpectTrained(tasks, outcomes, 4 * 640 / 16, /*extra_steps=*/4);
  // Each server wrote its shard of the checkpoints: the variables live on both.
  bool shard[2] = {false, false};
  for (const auto& entry : std::filesystem::directory_iterator(dir / "backup/ps")) {
    const std::string name = entry.path().filename().string();
    for (int ps = 0; ps < 2; ++ps) {
      if (name.rfind("ps-" + std::to_string(ps) + "-of-2.", 0) == 0) shard[ps] = true;
    }
  }
  EXPECT_TRUE(shard[0] && shard[1]);
  for (int epoch = 1; epoch <= 4; ++epoch) {
    EXPECT_TRUE(
        std::filesystem::exists(dir / ("checkpoints/ckpt-" + std::to_string(epoch) + ".pt")))
        << epoch;
  }
  // The evaluator followed the chief's checkpoints up to the final one, whose figures it returns.
  const std::string& evaluator = outcomes[4].report;
  EXPECT_NEAR(Figure(evaluator, "loss"), Figure(outcomes[0].report, "loss"), 1e-3) << evaluator;
}

TEST(ParameterServer, SyncTrainingWithOneServer) {
  TempDir dir;
  const std::vector<std::string> tasks = {"chief", "worker", "ps"};
  const auto outcomes = TrainTagger(tasks, /*sync=*/true, dir);
  // Sync: one global step per step of both training tasks.
  ExpectTrained(tasks, outcomes, 4 * 640 / 16 / 2, /*extra_steps=*/0);
}

TEST(ParameterServer, ARestartedJobResumesFromTheServersCheckpoints) {
  TempDir dir;
  const std::vector<std::string> tasks = {"chief", "worker", "ps"};
  // A completed run of 2 epochs; then every task starts again with the same backup directory.
  const auto first = TrainTagger(tasks, /*sync=*/true, dir, /*epochs=*/2);
  ExpectTrained(tasks, first, 2 * 640 / 16 / 2, /*extra_steps=*/0);
  EXPECT_EQ(Figure(first[0].report, "already_complete"), 0) << first[0].report;
  // The ps restores the final checkpoint: the job is already at its last step, nothing trains, and
  // the chief's figures are those of the restored variables, the first run's.
  const auto again = TrainTagger(tasks, /*sync=*/true, dir, /*epochs=*/2);
  ASSERT_EQ(again[0].exit_code, 0) << again[0].report;
  EXPECT_EQ(Figure(again[0].report, "already_complete"), 1) << again[0].report;
  EXPECT_EQ(Figure(again[0].report, "steps"), 2 * 640 / 16 / 2) << again[0].report;
  EXPECT_NEAR(Figure(again[0].report, "loss"), Figure(first[0].report, "loss"), 1e-6)
      << again[0].report;
  // Asked for 4 epochs, the job continues from there to the new total.
  const auto longer = TrainTagger(tasks, /*sync=*/true, dir, /*epochs=*/4);
  ExpectTrained(tasks, longer, 4 * 640 / 16 / 2, /*extra_steps=*/0);
  EXPECT_EQ(Figure(longer[0].report, "already_complete"), 0) << longer[0].report;
}

// A job training the wide tagger with FTRL (at `l1`) on its linear part; the chief's report.
std::string TrainWideTagger(double l1) {
  TempDir dir;
  const std::vector<std::string> tasks = {"chief", "worker", "ps"};
  const auto outcomes = Job(tasks, [&](const Cluster& cluster) {
    ParameterServerOptions ps_options = TestOptions(/*sync=*/false);
    ServerOptimizer ftrl;
    ftrl.kind = ServerOptimizer::Kind::kFtrl;
    ftrl.learning_rate = 0.5;
    ftrl.l1 = l1;
    ps_options.optimizer_for = {{"wide.", ftrl}};
    ps_options.binary_auc = true;
    ParameterServer strategy(cluster, ps_options);
    const Data train(640, 1), test(160, 2);
    TensorSource train_source(train.inputs, train.targets);
    TensorSource test_source(test.inputs, test.targets);
    WideTagger net;
    torch::optim::Adagrad optimizer(net->parameters(), torch::optim::AdagradOptions(0.1));
    StartTogether(cluster, dir);
    FitOptions options;
    options.epochs = 3;
    options.per_worker_batch = 16;
    const FitResult result = Fit(strategy, net, optimizer, train_source, test_source,
                                 BinaryCrossEntropyWithLogits(), options);
    if (strategy.is_chief()) {
      Report("auc " + std::to_string(result.metrics.at("auc")));
      Report("loss " + std::to_string(result.loss));
    }
    return 0;
  });
  for (size_t i = 0; i < tasks.size(); ++i) {
    EXPECT_EQ(outcomes[i].exit_code, 0) << tasks[i] << ": " << outcomes[i].report;
  }
  return outcomes[0].report;
}

TEST(ParameterServer, ABinaryClassifierWithFtrlOnItsLinearPartReportsTheAuc) {
  // The class is the id's parity, which the linear part learns exactly.
  const std::string trained = TrainWideTagger(/*l1=*/0);
  EXPECT_GT(Figure(trained, "auc"), 0.99) << trained;
  EXPECT_LT(Figure(trained, "loss"), 0.3) << trained;
  // The linear part has FTRL's update, not Fit's Adagrad: an l1 this large keeps every weight of
  // it at zero, and the features alone are noise.
  const std::string sparse = TrainWideTagger(/*l1=*/1000);
  EXPECT_LT(Figure(sparse, "auc"), 0.7) << sparse;
}

// A cluster of a ps task and a worker whose ps is never there: what fails before any connection.
Cluster WorkerOfAbsentServer() {
  const std::vector<int> ports = api_testing::FreePorts(2);
  return Cluster::FromTfConfig(api_testing::JobTfConfig({"worker", "ps"}, ports, 0));
}

// The cohort::Error that `body` throws (kInternal "no error" when it throws none).
Error ErrorOf(const std::function<void()>& body) {
  try {
    body();
  } catch (const Error& error) {
    return error;
  }
  return Error(ErrorCode::kInternal, "no error");
}

TEST(ParameterServer, AClusterWithoutServersIsRefused) {
  const Error alone = ErrorOf([] { ParameterServer strategy(Cluster::FromTfConfig("")); });
  EXPECT_EQ(alone.code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(std::string(alone.what()).find("ParameterServer needs ps tasks"), std::string::npos)
      << alone.what();
  const Error workers = ErrorOf([] {
    ParameterServer strategy(Cluster::FromTfConfig(api_testing::WorkerTfConfig({1, 2}, 0)));
  });
  EXPECT_EQ(workers.code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(std::string(workers.what()).find("has none"), std::string::npos) << workers.what();
}

TEST(ParameterServer, BadOptionsAreNamed) {
  ParameterServerOptions options = TestOptions(/*sync=*/true);
  options.request_timeout = options.sync_timeout;
  const Error error = ErrorOf([&] { ParameterServer strategy(WorkerOfAbsentServer(), options); });
  EXPECT_EQ(error.code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(std::string(error.what()).find("request_timeout"), std::string::npos) << error.what();
}

TEST(ParameterServer, FitNamesTheMistakesBeforeConnecting) {
  ParameterServer strategy(WorkerOfAbsentServer(), TestOptions(/*sync=*/false));
  const Data data(64, 1);
  TensorSource source(data.inputs, data.targets);
  TempDir dir;
  const auto fit_error = [&](const Model& model, torch::optim::Optimizer& optimizer,
                             const FitOptions& options) {
    return ErrorOf(
        [&] { Fit(strategy, model, optimizer, source, source, CrossEntropyLoss(), options); });
  };
  FitOptions options = SmallFit(dir);

  NoParameters empty;
  Tagger net;
  torch::optim::SGD sgd(net->parameters(), 0.1);
  Error error = fit_error(empty, sgd, options);
  EXPECT_EQ(error.code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(std::string(error.what()).find("has no parameters"), std::string::npos) << error.what();

  torch::optim::SGD momentum(net->parameters(), torch::optim::SGDOptions(0.1).momentum(0.9));
  error = fit_error(net, momentum, options);
  EXPECT_EQ(error.code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(std::string(error.what()).find("SGD with momentum"), std::string::npos) << error.what();

  torch::optim::RMSprop rmsprop(net->parameters(), 0.1);
  error = fit_error(net, rmsprop, options);
  EXPECT_EQ(error.code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(std::string(error.what()).find("Adagrad and Adam"), std::string::npos) << error.what();

  FitOptions steps = options;
  steps.steps_per_epoch = 3;
  error = fit_error(net, sgd, steps);
  EXPECT_EQ(error.code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(std::string(error.what()).find("steps_per_epoch"), std::string::npos) << error.what();

  ParameterServerOptions misnamed = TestOptions(/*sync=*/false);
  misnamed.optimizer_for = {{"deep.", ServerOptimizer{}}};
  ParameterServer misnamed_strategy(WorkerOfAbsentServer(), misnamed);
  error = ErrorOf(
      [&] { Fit(misnamed_strategy, net, sgd, source, source, CrossEntropyLoss(), options); });
  EXPECT_EQ(error.code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(std::string(error.what()).find("optimizer_for[\"deep.\"] matches no parameter"),
            std::string::npos)
      << error.what();

  ParameterServerOptions bad_ftrl = TestOptions(/*sync=*/false);
  bad_ftrl.optimizer_for = {
      {"embedding.", ServerOptimizer{.kind = ServerOptimizer::Kind::kFtrl, .learning_rate = 0}}};
  ParameterServer bad_ftrl_strategy(WorkerOfAbsentServer(), bad_ftrl);
  error = ErrorOf(
      [&] { Fit(bad_ftrl_strategy, net, sgd, source, source, CrossEntropyLoss(), options); });
  EXPECT_EQ(error.code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(std::string(error.what()).find("optimizer_for[\"embedding.\"]: ftrl: learning_rate"),
            std::string::npos)
      << error.what();

  FitOptions best = options;
  best.callbacks = {ModelCheckpoint(dir / "best", /*save_best_only=*/true)};
  error = fit_error(net, sgd, best);
  EXPECT_EQ(error.code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(std::string(error.what()).find("save_best_only"), std::string::npos) << error.what();
}

TEST(ParameterServer, AnEvaluatorNeedsTheCheckpoints) {
  const std::vector<int> ports = api_testing::FreePorts(3);
  ParameterServer strategy(
      Cluster::FromTfConfig(api_testing::JobTfConfig({"chief", "ps", "evaluator"}, ports, 2)),
      TestOptions(/*sync=*/false));
  EXPECT_TRUE(strategy.is_evaluator());
  EXPECT_FALSE(strategy.is_chief());
  const Data data(64, 1);
  TensorSource source(data.inputs, data.targets);
  Tagger net;
  torch::optim::Adagrad optimizer(net->parameters(), 0.1);
  FitOptions options;
  const Error error =
      ErrorOf([&] { Fit(strategy, net, optimizer, source, source, CrossEntropyLoss(), options); });
  EXPECT_EQ(error.code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(std::string(error.what()).find("BackupAndRestore"), std::string::npos) << error.what();
}

}  // namespace
}  // namespace cohort
