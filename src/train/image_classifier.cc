#include "train/image_classifier.h"

#include <torch/nn/functional/loss.h>

#include <algorithm>

namespace cohort::train {

StatusOr<std::unique_ptr<ImageClassifier>> ImageClassifier::Create(
    const std::string& model_name, const ModelShape& shape, std::vector<std::string> class_names) {
  auto network = MakeModel(model_name, shape);
  if (!network.ok()) return network.status();
  return std::make_unique<ImageClassifier>(model_name, std::move(network).value(), shape,
                                           std::move(class_names));
}

ModelFactory ImageClassifier::Factory(const std::string& model_name, const ImageDataset& train,
                                      const ImageDataset& test,
                                      std::vector<std::string> class_names) {
  const bool same_size = train.rows == test.rows && train.cols == test.cols;
  const ModelShape shape{train.rows, train.cols, std::max(train.num_classes, 2)};
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
