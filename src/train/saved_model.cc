#include "train/saved_model.h"

#include <torch/serialize.h>
#include <torch/utils.h>

#include <filesystem>
#include <sstream>

#include "train/data/image_batch_source.h"
#include "train/evaluation.h"
#include "train/image_classifier.h"

namespace cohort::train {

struct SavedModel::Network {
  ImageClassifier classifier;
};

SavedModel::SavedModel(ModelManifest manifest, std::unique_ptr<Network> network)
    : manifest_(std::move(manifest)), network_(std::move(network)) {}

SavedModel::~SavedModel() = default;

StatusOr<std::unique_ptr<SavedModel>> SavedModel::Load(const std::string& dir) {
  auto manifest = ReadManifest(dir);
  if (!manifest.ok()) return manifest.status();
  if (manifest->input_shape.size() != 3) {
    return Status::InvalidArgument((std::filesystem::path(dir) / kManifestFile).string() +
                                   ": input_shape must be [channels, rows, cols]");
  }
  const ModelShape shape{manifest->input_shape[1], manifest->input_shape[2],
                         static_cast<int64_t>(manifest->classes.size())};
  auto module = MakeModel(manifest->model, shape);
  if (!module.ok()) return module.status().WithContext(dir);
  const std::string weights = (std::filesystem::path(dir) / manifest->weights).string();
  // Only verified bytes are loaded: flipped bits never reach the network.
  StatusOr<std::string> bytes = ReadVerifiedWeights(dir, *manifest);
  if (!bytes.ok()) return bytes.status();
  try {
    std::istringstream in(*bytes);
    torch::load(*module, in);
  } catch (const c10::Error& error) {
    return Status::InvalidArgument(weights + ": cannot load " + manifest->model +
                                   " weights: " + error.what_without_backtrace());
  }
  (*module)->eval();
  auto network = std::make_unique<Network>(Network{
      ImageClassifier(manifest->model, std::move(module).value(), shape, manifest->classes)});
  return std::unique_ptr<SavedModel>(
      new SavedModel(std::move(manifest).value(), std::move(network)));
}

StatusOr<std::vector<float>> SavedModel::PredictProbabilities(const float* images, int64_t count) {
  if (count <= 0) return std::vector<float>();
  try {
    torch::NoGradGuard no_grad;
    torch::Tensor input = torch::from_blob(
        const_cast<float*>(images), {count, 1, manifest_.input_shape[1], manifest_.input_shape[2]});
    torch::Tensor probabilities =
        torch::softmax(network_->classifier.network()->forward(input), 1).contiguous();
    const float* data = probabilities.data_ptr<float>();
    return std::vector<float>(data, data + probabilities.numel());
  } catch (const c10::Error& error) {
    return Status::Internal(std::string("prediction failed: ") + error.what_without_backtrace());
  }
}

StatusOr<std::vector<int>> SavedModel::PredictClasses(const float* images, int64_t count) {
  auto probabilities = PredictProbabilities(images, count);
  if (!probabilities.ok()) return probabilities.status();
  std::vector<int> classes;
  for (int64_t i = 0; i < count; ++i) {
    const float* row = probabilities->data() + i * num_classes();
    classes.push_back(static_cast<int>(std::max_element(row, row + num_classes()) - row));
  }
  return classes;
}

StatusOr<EvaluationResult> SavedModel::Evaluate(const ImageDataset& dataset) {
  if (dataset.rows != manifest_.input_shape[1] || dataset.cols != manifest_.input_shape[2]) {
    return Status::InvalidArgument("the data set's images are " + std::to_string(dataset.rows) +
                                   "x" + std::to_string(dataset.cols) + ", the model takes " +
                                   std::to_string(manifest_.input_shape[1]) + "x" +
                                   std::to_string(manifest_.input_shape[2]));
  }
  try {
    constexpr int64_t kBatch = 500;
    const ImageBatchSource source(&dataset);
    auto sums = EvaluateRange(network_->classifier, source, 0, dataset.size(), kBatch);
    if (!sums.ok()) return sums.status();
    return sums->Averages();
  } catch (const c10::Error& error) {
    return Status::Internal(std::string("evaluation failed: ") + error.what_without_backtrace());
  }
}

}  // namespace cohort::train
