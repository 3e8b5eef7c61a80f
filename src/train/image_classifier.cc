#include "train/image_classifier.h"

#include <torch/nn/functional/loss.h>

#include <algorithm>
#include <cmath>

namespace cohort::train {

StatusOr<std::unique_ptr<ImageClassifier>> ImageClassifier::Create(
    const std::string& model_name, const ModelShape& shape, std::vector<std::string> class_names) {
  auto network = MakeModel(model_name, shape);
  if (!network.ok()) return network.status();
  return std::make_unique<ImageClassifier>(model_name, std::move(network).value(), shape,
                                           std::move(class_names));
}

namespace {

// The mean and standard deviation of `dataset`'s pixels, scaled to [0, 1] as the batches are.
void MeasurePixels(const ImageDataset& dataset, ModelShape* shape) {
  if (dataset.pixels.empty()) return;
  double sum = 0, sum_of_squares = 0;
  for (const uint8_t pixel : dataset.pixels) {
    const double value = pixel / 255.0;
    sum += value;
    sum_of_squares += value * value;
  }
  const double count = static_cast<double>(dataset.pixels.size());
  const double mean = sum / count;
  const double variance = std::max(0.0, sum_of_squares / count - mean * mean);
  shape->input_mean = mean;
  // A constant image (variance 0) is only shifted.
  shape->input_std = variance > 0 ? std::sqrt(variance) : 1.0;
}

}  // namespace

ModelFactory ImageClassifier::Factory(const std::string& model_name, const ImageDataset& train,
                                      const ImageDataset& test,
                                      std::vector<std::string> class_names) {
  const bool same_size = train.rows == test.rows && train.cols == test.cols;
  ModelShape shape{train.rows, train.cols, std::max(train.num_classes, 2)};
  // Only the models that normalise their input need the training split's statistics.
  if (model_name == "bn_cnn") MeasurePixels(train, &shape);
  return [model_name, same_size, shape,
          class_names = std::move(class_names)]() -> StatusOr<std::unique_ptr<TrainableModel>> {
    if (!same_size) return Status::InvalidArgument("training and test images differ in size");
    auto model = Create(model_name, shape, class_names);
    if (!model.ok()) return model.status();
    return std::unique_ptr<TrainableModel>(std::move(model).value());
  };
}

ImageClassifier::ImageClassifier(std::string model_name, torch::nn::Sequential network,
                                 ModelShape shape, std::vector<std::string> class_names)
    : name_(std::move(model_name)),
      network_(std::move(network)),
      shape_(shape),
      class_names_(std::move(class_names)) {}

StepResult ImageClassifier::Step(const Batch& batch) {
  torch::Tensor logits = network_->forward(batch.inputs);
  torch::Tensor loss = torch::nn::functional::cross_entropy(logits, batch.targets);
  torch::NoGradGuard no_grad;
  const double correct = logits.argmax(1).eq(batch.targets).sum().item<double>();
  return StepResult{loss, {{"accuracy", correct}}};
}

void ImageClassifier::DescribeInputs(ModelManifest* manifest) const {
  manifest->input_shape = {1, shape_.rows, shape_.cols};
  manifest->classes = class_names_;
}

}  // namespace cohort::train
