// A model that is not an image classifier, for the tests that train through the Trainer's
// interfaces: a small MLP regressing y = w.x + b + noise from 4-dimensional vectors.
//
//   RegressionData data;                       // synthetic train and test splits
//   Trainer::Create(options, RegressionModel::Factory(), &data.train, &data.test, &strategy)
//
// Its one metric is "mean_absolute_error"; it has no accuracy.
#pragma once

#include <torch/nn/functional/loss.h>
#include <torch/nn/modules/activation.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/modules/linear.h>

#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "train/data/batch_source.h"
#include "train/trainable_model.h"

namespace cohort::train::testing {

inline constexpr int64_t kRegressionInputs = 4;

// Vectors and their targets in memory, row after row.
class VectorSource : public BatchSource {
 public:
  VectorSource(int64_t samples, uint64_t seed) {
    std::mt19937_64 rng(seed);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    const float weights[kRegressionInputs] = {0.5f, -1.0f, 2.0f, 0.25f};
    for (int64_t i = 0; i < samples; ++i) {
      float target = 0.3f + 0.01f * normal(rng);
      for (int64_t j = 0; j < kRegressionInputs; ++j) {
        const float x = normal(rng);
        inputs_.push_back(x);
        target += weights[j] * x;
      }
      targets_.push_back(target);
    }
  }

  int64_t size() const override { return static_cast<int64_t>(targets_.size()); }

  StatusOr<Batch> Gather(const std::vector<int64_t>& indices) const override {
    const int64_t count = static_cast<int64_t>(indices.size());
    Batch batch;
    batch.inputs = torch::empty({count, kRegressionInputs});
    batch.targets = torch::empty({count, 1});
    float* inputs = batch.inputs.data_ptr<float>();
    float* targets = batch.targets.data_ptr<float>();
    for (int64_t i = 0; i < count; ++i) {
      if (indices[i] < 0 || indices[i] >= size()) {
        return Status::InvalidArgument("sample " + std::to_string(indices[i]) + " of " +
                                       std::to_string(size()));
      }
      for (int64_t j = 0; j < kRegressionInputs; ++j) {
        inputs[i * kRegressionInputs + j] = inputs_[indices[i] * kRegressionInputs + j];
      }
      targets[i] = targets_[indices[i]];
    }
    return batch;
  }

 private:
  std::vector<float> inputs_;
  std::vector<float> targets_;
};

struct RegressionData {
  VectorSource train{256, 11};
  VectorSource test{64, 12};
};

class RegressionModel : public TrainableModel {
 public:
  static ModelFactory Factory() {
    return []() -> StatusOr<std::unique_ptr<TrainableModel>> {
      return std::unique_ptr<TrainableModel>(std::make_unique<RegressionModel>());
    };
  }

  RegressionModel()
      : network_(torch::nn::Linear(kRegressionInputs, 16), torch::nn::Tanh(),
                 torch::nn::Linear(16, 1)) {}

  const std::string& name() const override { return name_; }
  torch::nn::Module& module() override { return *network_; }

  StepResult Step(const Batch& batch) override {
    torch::Tensor predictions = network_->forward(batch.inputs);
    torch::Tensor loss = torch::nn::functional::mse_loss(predictions, batch.targets);
    torch::NoGradGuard no_grad;
    const double absolute_errors = (predictions - batch.targets).abs().sum().item<double>();
    return StepResult{loss, {{"mean_absolute_error", absolute_errors}}};
  }

  void DescribeInputs(ModelManifest* manifest) const override {
    manifest->input_shape = {kRegressionInputs};
  }

 private:
  std::string name_ = "regression";
  torch::nn::Sequential network_;
};

}  // namespace cohort::train::testing
