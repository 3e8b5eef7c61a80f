// ImageClassifier: the image models (models.h) as a TrainableModel.
//
// A step takes an ImageBatchSource's batch (images [batch, 1, rows, cols] in [0, 1], int64 labels)
// and returns the mean cross-entropy of the logits (Keras's SparseCategoricalCrossentropy with
// from_logits=True) and one metric, "accuracy": the samples whose arg-max logit is the label. The
// saved model's manifest gets input_shape {1, rows, cols} and the class names.
//
//   ImageBatchSource train_source(&train), test_source(&test);
//   ModelFactory factory = ImageClassifier::Factory("cnn", train, test, ClassNamesFor(dir, n));
//   auto trainer = Trainer::Create(options, factory, &train_source, &test_source, strategy);
#pragma once

#include <torch/nn/modules/container/sequential.h>

#include <memory>
#include <string>
#include <vector>

#include "base/status.h"
#include "train/data/image_dataset.h"
#include "train/models.h"
#include "train/trainable_model.h"

namespace cohort::train {

class ImageClassifier : public TrainableModel {
 public:
  // A freshly initialised `model_name` model (MakeModel) for `shape`; `class_names` has
  // shape.classes entries. InvalidArgument for an unknown name.
  static StatusOr<std::unique_ptr<ImageClassifier>> Create(const std::string& model_name,
                                                           const ModelShape& shape,
                                                           std::vector<std::string> class_names);

  // A factory for Trainer::Create that builds `model_name` for the images of `train`, with as
  // many classes as train has (at least 2). InvalidArgument when the training and test images
  // differ in size or the name is unknown. The data sets need not outlive the factory. A model
  // that normalises its input ("bn_cnn") gets the training split's pixel mean and deviation.
  static ModelFactory Factory(const std::string& model_name, const ImageDataset& train,
                              const ImageDataset& test, std::vector<std::string> class_names);

  // Wraps an existing network, e.g. one loaded from a saved model.
  ImageClassifier(std::string model_name, torch::nn::Sequential network, ModelShape shape,
                  std::vector<std::string> class_names);

  torch::nn::Sequential& network() { return network_; }

  const std::string& name() const override { return name_; }
  torch::nn::Module& module() override { return *network_; }
  StepResult Step(const Batch& batch) override;
  void DescribeInputs(ModelManifest* manifest) const override;

 private:
  std::string name_;
  torch::nn::Sequential network_;
  ModelShape shape_;
  std::vector<std::string> class_names_;
};

}  // namespace cohort::train
