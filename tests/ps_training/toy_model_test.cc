// The parameter-server trainer is model-agnostic: a toy logistic regression over hashed ids (one
// sparse table of per-id weights and a dense bias, its gradients by hand, no libtorch), trained by
// TrainWithParameterServers as a chief and a worker (threads) against two real parameter servers
// in this process; then the evaluator side-car and a saved model's evaluation read its
// checkpoints. The model's "accuracy" metric flows into the log lines, the evaluations and the
// saved model's manifest.
#include <gtest/gtest.h>
#include <signal.h>

#include <atomic>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <thread>

#include "testing/ps_cluster.h"
#include "testing/scratch_directory.h"
#include "testing/synthetic_data.h"
#include "testing/wait.h"
#include "train/model_manifest.h"
#include "train/parameter_server/checkpoint_evaluator.h"
#include "train/parameter_server/model_evaluation.h"
#include "train/parameter_server/parameter_server_trainer.h"
#include "train/parameter_server/parameter_sources.h"

namespace cohort::train {
namespace {

namespace fs = std::filesystem;

constexpr int64_t kIds = 40;
constexpr int kIdsPerExample = 3;

// The true weight of id `id`: the label is 1 when an example's ids weigh more than 0.
double TrueWeight(int64_t id) { return id % 2 == 0 ? 1.0 : -1.0 + 0.01 * static_cast<double>(id); }

struct ToyExample {
  int64_t ids[kIdsPerExample];
  float label;
};

struct ToyBatch : public EncodedBatch {
  int64_t size() const override { return static_cast<int64_t>(examples.size()); }
  std::vector<ToyExample> examples;
};

class ToyExamples : public ExampleSource {
 public:
  ToyExamples(int64_t count, uint64_t seed) {
    std::mt19937_64 random(seed);
    std::uniform_int_distribution<int64_t> id(0, kIds - 1);
    for (int64_t i = 0; i < count; ++i) {
      ToyExample example;
      double weight = 0;
      for (int64_t& value : example.ids) {
        value = id(random);
        weight += TrueWeight(value);
      }
      example.label = weight > 0 ? 1.0f : 0.0f;
      examples_.push_back(example);
    }
  }
  int64_t size() const override { return static_cast<int64_t>(examples_.size()); }
  std::unique_ptr<EncodedBatch> NewBatch() const override { return std::make_unique<ToyBatch>(); }
  void Encode(std::span<const int64_t> indices, EncodedBatch* batch) const override {
    auto* toy = static_cast<ToyBatch*>(batch);
    toy->examples.clear();
    for (int64_t index : indices) toy->examples.push_back(examples_[static_cast<size_t>(index)]);
  }

 private:
  std::vector<ToyExample> examples_;
};

// logit = bias + sum of the example's id weights; sigmoid cross-entropy.
class ToyLogisticRegression : public ParameterServerModel {
 public:
  ModelDescription Describe() const override {
    return {.name = "toy_logistic",
            .classes = {"negative", "positive"},
            .optimizer = "adagrad",
            .learning_rate = 0.5,
            .seed = 3};
  }
  std::vector<ps::DenseVariable> DenseVariables() const override {
    return {{{"bias", 1, 1}, Adagrad(), {0.0f}}};
  }
  std::vector<ps::EmbeddingTableSpec> Tables() const override {
    return {{"weights", 1, 3, 0.0f, Adagrad()}};
  }
  BatchLookups Lookups(const EncodedBatch& batch) const override {
    std::vector<int64_t> ids;
    for (const ToyExample& example : Examples(batch)) {
      ids.insert(ids.end(), std::begin(example.ids), std::end(example.ids));
    }
    BatchLookups lookups;
    lookups.tables.resize(1);
    lookups.tables[0].table = "weights";
    DeduplicateIds(ids, &lookups.tables[0]);
    return lookups;
  }
  StatusOr<GradientStepResult> ComputeGradients(
      const EncodedBatch& batch, const std::vector<std::vector<float>>& dense,
      BatchLookups& lookups, std::vector<std::vector<float>>* dense_gradients) const override {
    const std::vector<ToyExample>& examples = Examples(batch);
    TableLookup& weights = lookups.tables[0];
    weights.gradient.assign(weights.ids.size(), 0.0f);
    dense_gradients->assign(1, std::vector<float>(1, 0.0f));
    const double n = static_cast<double>(examples.size());
    GradientStepResult result;
    double correct = 0;
    for (size_t i = 0; i < examples.size(); ++i) {
      const double p = Probability(examples[i], i, dense, weights);
      const double error = (p - examples[i].label) / n;
      (*dense_gradients)[0][0] += static_cast<float>(error);
      for (int k = 0; k < kIdsPerExample; ++k) {
        weights.gradient[weights.index[i * kIdsPerExample + k]] += static_cast<float>(error);
      }
      result.loss -= (examples[i].label > 0.5f ? std::log(p) : std::log(1 - p)) / n;
      correct += (p > 0.5) == (examples[i].label > 0.5f) ? 1 : 0;
    }
    result.metrics = {{"accuracy", correct / n}};
    return result;
  }
  StatusOr<BatchEvaluation> Evaluate(const EncodedBatch& batch,
                                     const std::vector<std::vector<float>>& dense,
                                     const BatchLookups& lookups) const override {
    const std::vector<ToyExample>& examples = Examples(batch);
    BatchEvaluation evaluation;
    double correct = 0;
    for (size_t i = 0; i < examples.size(); ++i) {
      const double p = Probability(examples[i], i, dense, lookups.tables[0]);
      const bool positive = examples[i].label > 0.5f;
      evaluation.loss_sum -= positive ? std::log(p) : std::log(1 - p);
      evaluation.scores.push_back(p);
      evaluation.labels.push_back(positive ? 1 : 0);
      correct += (p > 0.5) == positive ? 1 : 0;
    }
    evaluation.metric_sums = {{"accuracy", correct}};
    return evaluation;
  }

 private:
  static ps::OptimizerConfig Adagrad() {
    return {.kind = ps::OptimizerKind::kAdagrad, .learning_rate = 0.5f};
  }
  static const std::vector<ToyExample>& Examples(const EncodedBatch& batch) {
    return static_cast<const ToyBatch&>(batch).examples;
  }
  static double Probability(const ToyExample& example, size_t row,
                            const std::vector<std::vector<float>>& dense,
                            const TableLookup& weights) {
    double logit = dense[0][0];
    for (int k = 0; k < kIdsPerExample; ++k) {
      logit += weights.rows[weights.index[row * kIdsPerExample + k]];
    }
    return std::clamp(1.0 / (1.0 + std::exp(-logit)), 1e-7, 1 - 1e-7);
  }
};

TEST(ParameterServerTrainer, TrainsAModelThatIsNotTheTaxiModel) {
  const cohort::testing::ScratchDirectory scratch("cohort-ps-training-toy");
  const std::string dir = scratch.path().string();
  cohort::testing::PsCluster cluster(2, 1);
  std::vector<std::unique_ptr<ps::ParameterServer>> servers;
  for (int index = 0; index < 2; ++index) {
    ps::ParameterServerOptions options = cluster.ServerOptions(index);
    options.checkpoint_dir = dir + "/checkpoints";
    options.log = [](const std::string&) {};
    auto server = ps::ParameterServer::Start(std::move(options));
    ASSERT_TRUE(server.ok()) << server.status().ToString();
    servers.push_back(std::move(*server));
  }

  const ToyLogisticRegression model;
  const ToyExamples train(2000, 1), eval(500, 2);
  const auto options_for = [&](const cluster::TaskId& task, std::vector<std::string>* lines) {
    ParameterServerTrainingOptions options;
    options.config.cluster = cluster.spec();
    options.config.task = task;
    options.job_name = cohort::testing::kTestJob;
    options.secret = net::JobSecret(cohort::testing::kTestSecret);
    options.program_name = "toy";
    options.epochs = 4;
    options.per_worker_batch = 50;
    options.checkpoint_every_steps = 40;
    options.checkpoint_dir = dir + "/checkpoints";
    options.saved_model_dir = dir + "/saved_model";
    options.tensorboard_dir = dir + "/logs";
    options.log_every_steps = 20;
    options.retry_timeout = std::chrono::seconds(20);
    options.model_ready_timeout = std::chrono::seconds(60);
    options.print = [lines](const std::string& line) { lines->push_back(line); };
    return options;
  };
  std::vector<std::string> worker_lines, chief_lines;
  StatusOr<ParameterServerTrainingResult> worker = Status::Internal("not run");
  std::thread worker_thread([&] {
    worker =
        TrainWithParameterServers(options_for({"worker", 0}, &worker_lines), model, train, eval);
  });
  auto chief =
      TrainWithParameterServers(options_for({"chief", 0}, &chief_lines), model, train, eval);
  worker_thread.join();
  ASSERT_TRUE(chief.ok()) << chief.status().ToString();
  ASSERT_TRUE(worker.ok()) << worker.status().ToString();
  for (auto& server : servers) {
    EXPECT_TRUE(server->Wait(net::Deadline::After(std::chrono::seconds(30))).ok());
    server->Stop();
  }

  // 4 epochs of 2000 examples in async pushes of 50: 160 global steps. Async, a task that read a
  // global step below 160 (its pull runs ahead of the other task's push) still makes its step, so
  // the job may end a step or two past it, as TensorFlow's async workers do.
  EXPECT_TRUE(chief->is_chief);
  EXPECT_FALSE(worker->is_chief);
  const int64_t final_step = chief->global_step;
  EXPECT_GE(final_step, 160);
  EXPECT_LE(final_step, 163);
  // A worker's last push may land after the chief read the final step.
  EXPECT_GE(chief->local_steps + worker->local_steps, final_step);
  EXPECT_LE(chief->local_steps + worker->local_steps, final_step + 2);
  EXPECT_EQ(chief_lines.front(),
            "toy: chief:0 starts at global step 0 of 160 (1000 examples in "
            "its shard)");
  bool logged_accuracy = false;
  for (const std::string& line : chief_lines) {
    if (line.find("): loss ") != std::string::npos &&
        line.find(", accuracy ") != std::string::npos) {
      logged_accuracy = true;
    }
  }
  EXPECT_TRUE(logged_accuracy) << chief_lines.back();

  // The rule is learnable: the final model separates the classes.
  const Evaluation& evaluation = chief->evaluation;
  EXPECT_EQ(evaluation.examples, 500);
  ASSERT_EQ(evaluation.metrics.size(), 3u);
  EXPECT_EQ(evaluation.metrics[0].first, "auc");
  EXPECT_EQ(evaluation.metrics[1].first, "loss");
  EXPECT_EQ(evaluation.metrics[2].first, "accuracy");
  EXPECT_GT(*evaluation.Metric("auc"), 0.95);
  EXPECT_GT(*evaluation.Metric("accuracy"), 0.85);

  // The saved model records the model's own description and every figure.
  auto manifest = ReadManifest(dir + "/saved_model");
  ASSERT_TRUE(manifest.ok()) << manifest.status().ToString();
  EXPECT_EQ(manifest->model, "toy_logistic");
  EXPECT_EQ(manifest->training.optimizer, "adagrad");
  EXPECT_EQ(manifest->training.global_steps, final_step);
  EXPECT_DOUBLE_EQ(manifest->metrics.at("eval_auc"), *evaluation.Metric("auc"));
  EXPECT_DOUBLE_EQ(manifest->metrics.at("eval_accuracy"), *evaluation.Metric("accuracy"));
  auto saved = CheckpointParameters::Load(dir + "/saved_model", manifest->weights);
  ASSERT_TRUE(saved.ok()) << saved.status().ToString();
  auto reevaluated = EvaluateModel(model, **saved, eval, 64);
  ASSERT_TRUE(reevaluated.ok()) << reevaluated.status().ToString();
  EXPECT_NEAR(*reevaluated->Metric("auc"), *evaluation.Metric("auc"), 1e-9);

  // The evaluator side-car finds the final checkpoint of this run and reports the same figures.
  EXPECT_EQ(FinalCheckpointStep(dir + "/checkpoints",
                                RunIdentity(net::JobSecret(cohort::testing::kTestSecret))),
            final_step);
  CheckpointEvaluatorOptions evaluator;
  evaluator.checkpoint_dir = dir + "/checkpoints";
  evaluator.run_identity = RunIdentity(net::JobSecret(cohort::testing::kTestSecret));
  evaluator.idle_timeout = std::chrono::seconds(5);
  std::vector<std::string> evaluator_lines;
  evaluator.print = [&](const std::string& line) { evaluator_lines.push_back(line); };
  auto followed = RunCheckpointEvaluator(evaluator, model, eval);
  ASSERT_TRUE(followed.ok()) << followed.status().ToString();
  EXPECT_NEAR(*followed->Metric("accuracy"), *evaluation.Metric("accuracy"), 1e-9);
  ASSERT_FALSE(evaluator_lines.empty());
  EXPECT_EQ(evaluator_lines.back().rfind(
                "eval at global step " + std::to_string(final_step) + ": auc ", 0),
            0u)
      << evaluator_lines.back();
  std::ifstream metrics_file(dir + "/checkpoints/eval/metrics.json");
  const auto metrics = nlohmann::json::parse(metrics_file);
  EXPECT_EQ(metrics.at("global_step").get<int64_t>(), final_step);
  EXPECT_TRUE(metrics.contains("accuracy")) << metrics.dump(2);
  EXPECT_FALSE(fs::is_empty(dir + "/logs/train"));
}

// A ps that stops answering without closing its connections, as one behind a network partition
// does (here: its process stopped with SIGSTOP, so the kernel still accepts but nothing answers),
// fails the training task after the request timeout plus the retry timeout, naming the ps.
TEST(ParameterServerTrainer, ServerThatStopsAnsweringFailsTheTaskAfterTheRequestTimeout) {
  cohort::testing::PsCluster cluster(1, 0);
  ps::ParameterServerOptions server_options = cluster.ServerOptions(0);
  cohort::testing::Child server = cluster.Spawn(
      [server_options] { return cohort::testing::ServeUntilShutdown(server_options); },
      server_options.listening_fd);
  cluster.CloseHandedOver({0});

  const ToyLogisticRegression model;
  const ToyExamples train(2000, 1), eval(500, 2);
  ParameterServerTrainingOptions options;
  options.config.cluster = cluster.spec();
  options.config.task = {"chief", 0};
  options.job_name = cohort::testing::kTestJob;
  options.secret = net::JobSecret(cohort::testing::kTestSecret);
  options.epochs = 100000;  // it must still be training when the server stops
  options.per_worker_batch = 50;
  options.request_timeout = std::chrono::seconds(1);
  options.retry_timeout = std::chrono::seconds(1);
  std::atomic<bool> training{false};
  options.print = [&](const std::string& line) {
    if (line.find("starts at global step") != std::string::npos) training = true;
  };
  StatusOr<ParameterServerTrainingResult> result = Status::Internal("not run");
  std::chrono::steady_clock::time_point stopped_at;
  std::thread chief([&] { result = TrainWithParameterServers(options, model, train, eval); });
  const bool started =
      cohort::testing::WaitUntil([&] { return training.load(); }, std::chrono::seconds(60));
  if (started) {
    ASSERT_EQ(kill(server.pid(), SIGSTOP), 0);
    stopped_at = std::chrono::steady_clock::now();
  }
  chief.join();
  const double waited =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - stopped_at).count();
  kill(server.pid(), SIGCONT);
  server.Kill();
  ASSERT_TRUE(started) << "the chief did not start training within 60 s";
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().code(), Status::Code::kUnavailable) << result.status().ToString();
  EXPECT_NE(result.status().message().find("ps:0"), std::string::npos)
      << result.status().ToString();
  // 1 s for the answer and 1 s of retries (no connection attempt runs past them, and a batch that
  // waited behind the one that gave up fails with it), plus room for a busy machine: far below
  // the 120 s of the default request timeout, and below the 10 s that one connection attempt
  // alone took before (its handshake timeout).
  EXPECT_LT(waited, 8) << result.status().ToString();
}

}  // namespace
}  // namespace cohort::train
