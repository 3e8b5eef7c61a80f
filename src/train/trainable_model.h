// TrainableModel: the model side of what the fit loop trains.
//
// The Trainer (trainer.h) knows nothing of images, labels or losses: it asks a BatchSource
// (train/data/batch_source.h) for batches and hands each to the model's Step, which runs the
// forward pass and returns the loss to minimise and the model's named metrics. Backward, the
// gradient all-reduce, the optimizer, backups, evaluation and saving stay in the loop, so a new
// model and data set need only these two small classes:
//
//   class Regression : public TrainableModel {
//     const std::string& name() const override { return name_; }   // "regression"
//     torch::nn::Module& module() override { return *net_; }
//     StepResult Step(const Batch& batch) override {
//       torch::Tensor loss = torch::mse_loss(net_->forward(batch.inputs), batch.targets);
//       return {loss, {}};
//     }
//     void DescribeInputs(ModelManifest* manifest) const override { manifest->input_shape = {4}; }
//   };
//   Trainer::Create(options, [] { return std::make_unique<Regression>(); }, &train, &test, ...)
//
// ImageClassifier (image_classifier.h) is the image models' implementation.
#pragma once

#include <torch/nn/module.h>
#include <torch/types.h>

#include <functional>
#include <map>
#include <memory>
#include <string>

#include "base/status.h"
#include "train/data/batch_source.h"
#include "train/model_manifest.h"

namespace cohort::train {

struct StepResult {
  // The loss of the batch as a scalar tensor, averaged over its samples; the loop calls backward
  // on it while training.
  torch::Tensor loss;
  // Each named metric summed over the batch's samples (accuracy: the number predicted right), so
  // that the loop can average it over any number of batches and workers. Every call must report
  // the same names.
  std::map<std::string, double> metric_sums;
};

class TrainableModel {
 public:
  virtual ~TrainableModel() = default;

  // The architecture's name: shown in the run's description, stored in backups (a backup of
  // another architecture is refused) and in the saved model's manifest.
  virtual const std::string& name() const = 0;

  // The module whose parameters are trained, saved and restored.
  virtual torch::nn::Module& module() = 0;

  // The forward pass on `batch`. The loop has put the module in training or evaluation mode and
  // turned gradients on or off. May throw c10::Error; the loop turns it into a Status.
  virtual StepResult Step(const Batch& batch) = 0;

  // Fills what a saved model's manifest says about the inputs and outputs: input_shape and, for
  // a classifier, the class names.
  virtual void DescribeInputs(ModelManifest* manifest) const = 0;
};

// Builds the model. The trainer calls it after seeding libtorch's generator with the run's seed,
// so every worker draws the same initial weights.
using ModelFactory = std::function<StatusOr<std::unique_ptr<TrainableModel>>()>;

}  // namespace cohort::train
