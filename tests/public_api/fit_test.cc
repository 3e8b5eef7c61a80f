// cohort/fit.h: any module trains through Fit, alone and on several workers, and the mistakes a
// user makes are named.
#include "cohort/fit.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <filesystem>
#include <fstream>

#include "api_test_support.h"
#include "cohort/collectives.h"
#include "cohort/status.h"

namespace cohort {
namespace {

using api_testing::Report;
using api_testing::TempDir;
using api_testing::TestStrategyOptions;
using api_testing::Workers;

// Two classes, separable by the sign of the sum of the features.
struct Data {
  explicit Data(int64_t samples, uint64_t seed) {
    torch::manual_seed(seed);
    inputs = torch::randn({samples, 4});
    targets = (inputs.sum(1) > 0).to(torch::kInt64);
  }
  torch::Tensor inputs, targets;
};

struct ClassifierImpl : torch::nn::Module {
  ClassifierImpl() {
    fc1 = register_module("fc1", torch::nn::Linear(4, 16));
    norm = register_module("norm", torch::nn::BatchNorm1d(16));
    fc2 = register_module("fc2", torch::nn::Linear(16, 2));
  }
  torch::Tensor forward(torch::Tensor x) { return fc2(torch::relu(norm(fc1(x)))); }
  torch::nn::Linear fc1{nullptr}, fc2{nullptr};
  torch::nn::BatchNorm1d norm{nullptr};
};
TORCH_MODULE(Classifier);

struct NoParametersImpl : torch::nn::Module {
  torch::Tensor forward(torch::Tensor x) { return x; }
};
TORCH_MODULE(NoParameters);

FitOptions SmallFit() {
  FitOptions options;
  options.epochs = 3;
  options.per_worker_batch = 16;
  options.metrics = {Accuracy()};
  options.eval_batch = 64;
  return options;
}

TEST(Fit, TrainsAModuleAloneAndSavesIt) {
  TempDir dir;
  MultiWorkerMirrored strategy(Cluster::FromTfConfig(""), TestStrategyOptions());
  const Data train(512, 1), test(128, 2);
  TensorSource train_source(train.inputs, train.targets), test_source(test.inputs, test.targets);
  Classifier net;
  torch::optim::Adam optimizer(net->parameters(), 0.01);
  FitOptions options = SmallFit();
  options.saved_model_dir = dir / "model";
  const FitResult result =
      Fit(strategy, net, optimizer, train_source, test_source, CrossEntropyLoss(), options);
  EXPECT_GT(result.metrics.at("accuracy"), 0.9);
  EXPECT_EQ(result.global_steps, 3 * 512 / 16);
  EXPECT_FALSE(result.already_complete);
  EXPECT_TRUE(std::filesystem::exists(dir / "model/weights.pt"));
  EXPECT_TRUE(std::filesystem::exists(dir / "model/manifest.json"));
  // The saved weights are the trained module's.
  Classifier loaded;
  LoadModule(*loaded, dir / "model/weights.pt");
  EXPECT_TRUE(torch::equal(loaded->fc2->weight, net->fc2->weight));
  EXPECT_TRUE(torch::equal(loaded->norm->running_mean, net->norm->running_mean));
  // Flipped bytes in the saved weights are caught by the manifest's checksum, never loaded.
  {
    std::fstream weights(dir / "model/weights.pt", std::ios::in | std::ios::out | std::ios::binary);
    weights.seekg(100);
    const char byte = static_cast<char>(weights.get() ^ 0x5a);
    weights.seekp(100);
    weights.put(byte);
  }
  try {
    LoadModule(*loaded, dir / "model/weights.pt");
    FAIL() << "flipped bytes were loaded";
  } catch (const Error& error) {
    EXPECT_EQ(error.code(), ErrorCode::kFailedPrecondition);
    EXPECT_NE(std::string(error.what()).find("checksum mismatch"), std::string::npos)
        << error.what();
  }
}

TEST(Fit, TakesAModuleAndAForwardFunction) {
  MultiWorkerMirrored strategy(Cluster::FromTfConfig(""), TestStrategyOptions());
  torch::manual_seed(3);
  const torch::Tensor x = torch::randn({256, 3});
  const torch::Tensor y = x.matmul(torch::tensor({1.0f, -2.0f, 0.5f}).unsqueeze(1)) + 0.25;
  TensorSource source(x, y);
  torch::nn::Linear linear(3, 1);
  torch::optim::SGD optimizer(linear->parameters(), 0.1);
  FitOptions options;
  options.epochs = 5;
  options.per_worker_batch = 16;
  const Model model(linear.ptr(), [&](const torch::Tensor& in) { return linear->forward(in); });
  const FitResult result =
      Fit(strategy, model, optimizer, source, source, MeanSquaredError(), options);
  EXPECT_LT(result.loss, 1e-3);
}

TEST(Fit, AModuleWithoutParametersIsNamed) {
  MultiWorkerMirrored strategy(Cluster::FromTfConfig(""), TestStrategyOptions());
  TensorSource source(torch::zeros({32, 2}), torch::zeros({32}, torch::kInt64));
  NoParameters net;
  torch::nn::Linear other(1, 1);
  torch::optim::SGD optimizer(other->parameters(), 0.1);
  try {
    Fit(strategy, net, optimizer, source, source, CrossEntropyLoss(), SmallFit());
    FAIL() << "no error";
  } catch (const Error& error) {
    EXPECT_EQ(error.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(std::string(error.what()).find("has no parameters"), std::string::npos)
        << error.what();
  }
}

TEST(Fit, AnErrorInTheLossNamesTheStep) {
  MultiWorkerMirrored strategy(Cluster::FromTfConfig(""), TestStrategyOptions());
  const Data data(64, 1);
  TensorSource source(data.inputs, data.targets);
  Classifier net;
  torch::optim::Adam optimizer(net->parameters(), 0.01);
  const LossFunction wrong = [](const torch::Tensor& output, const torch::Tensor& target) {
    return torch::mse_loss(output, target.to(torch::kFloat32));  // [16, 2] against [16]
  };
  try {
    Fit(strategy, net, optimizer, source, source, wrong, SmallFit());
    FAIL() << "no error";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("training step 0"), std::string::npos) << error.what();
  }
}

TEST(Fit, WorkersEndWithTheSameModel) {
  const auto outcomes = Workers(2, [](const Cluster& cluster) {
    MultiWorkerMirrored strategy(cluster, TestStrategyOptions());
    const Data train(512, 1), test(128, 2);
    TensorSource train_source(train.inputs, train.targets), test_source(test.inputs, test.targets);
    torch::manual_seed(10 + cluster.rank());  // different initial weights: the chief's win
    Classifier net;
    torch::optim::Adam optimizer(net->parameters(), 0.01);
    const FitResult result =
        Fit(strategy, net, optimizer, train_source, test_source, CrossEntropyLoss(), SmallFit());
    Report("steps " + std::to_string(result.global_steps));
    Report("accuracy above 0.9: " + std::to_string(result.metrics.at("accuracy") > 0.9));
    std::ostringstream weights;
    weights << net->fc2->weight << net->norm->running_var;
    Report(weights.str());
    return 0;
  });
  ASSERT_EQ(outcomes[0].exit_code, 0) << outcomes[0].report;
  ASSERT_EQ(outcomes[1].exit_code, 0) << outcomes[1].report;
  EXPECT_NE(outcomes[0].report.find("steps 48"), std::string::npos) << outcomes[0].report;
  EXPECT_NE(outcomes[0].report.find("accuracy above 0.9: 1"), std::string::npos);
  EXPECT_EQ(outcomes[0].report, outcomes[1].report);
}

TEST(Fit, DifferentBatchCountsPerWorkerAreNamed) {
  const auto outcomes = Workers(3, [](const Cluster& cluster) {
    MultiWorkerMirrored strategy(cluster, TestStrategyOptions());
    const Data train(cluster.rank() == 1 ? 384 : 512, 1), test(96, 2);
    TensorSource train_source(train.inputs, train.targets), test_source(test.inputs, test.targets);
    Classifier net;
    torch::optim::Adam optimizer(net->parameters(), 0.01);
    Fit(strategy, net, optimizer, train_source, test_source, CrossEntropyLoss(), SmallFit());
    return 0;
  });
  for (const auto& outcome : outcomes) {
    EXPECT_EQ(outcome.exit_code, 1);
    EXPECT_NE(outcome.report.find("the training data yields a different number of batches on "
                                  "each worker: worker:0 10 batches (512 samples), worker:1 8 "
                                  "batches (384 samples), worker:2 10 batches (512 samples)"),
              std::string::npos)
        << outcome.report;
  }
}

TEST(Fit, AModelThatDiffersBetweenWorkersIsNamed) {
  const auto outcomes = Workers(2, [](const Cluster& cluster) {
    MultiWorkerMirrored strategy(cluster, TestStrategyOptions());
    const Data train(256, 1);
    TensorSource source(train.inputs, train.targets);
    Classifier net;
    if (cluster.rank() == 1) {
      net->register_parameter("extra", torch::zeros({3}));  // worker 1 added a parameter
    }
    torch::optim::Adam optimizer(net->parameters(), 0.01);
    Fit(strategy, net, optimizer, source, source, CrossEntropyLoss(), SmallFit());
    return 0;
  });
  for (const auto& outcome : outcomes) {
    EXPECT_EQ(outcome.exit_code, 1);
    EXPECT_NE(outcome.report.find("the model differs between workers"), std::string::npos)
        << outcome.report;
    EXPECT_NE(outcome.report.find("worker:1"), std::string::npos) << outcome.report;
  }
  EXPECT_NE(outcomes[1].report.find("\"extra\""), std::string::npos) << outcomes[1].report;
}

}  // namespace
}  // namespace cohort
