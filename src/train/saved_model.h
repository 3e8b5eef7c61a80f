// SavedModel: a trained model, loaded for prediction.
//
// A saved model is a directory with manifest.json (model_manifest.h) and the weights in libtorch's
// format (weights.pt, written by Trainer::SaveModel). Loading rebuilds the named architecture and
// reads the weights into it, so the directory is all a program needs:
//
//   auto model = cohort::train::SavedModel::Load("/tmp/model");
//   if (!model.ok()) { ... model.status().ToString() ... }
//   std::vector<float> image(28 * 28);           // row-major pixels scaled to [0, 1]
//   auto label = (*model)->PredictClasses(image.data(), 1);
//   std::string name = (*model)->manifest().classes[(*label)[0]];
//
// The API needs no libtorch headers. Predictions run on the CPU, in inference mode; one
// SavedModel must not be used from several threads at once.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "base/status.h"
#include "train/callback.h"
#include "train/data/image_dataset.h"
#include "train/model_manifest.h"

namespace cohort::train {

class SavedModel {
 public:
  // Reads <dir>/manifest.json and the weights it names, verified against the size and SHA-256 the
  // manifest records before libtorch sees a byte. Errors name the file at fault (a mismatch with
  // the expected and the found checksum).
  static StatusOr<std::unique_ptr<SavedModel>> Load(const std::string& dir);
  ~SavedModel();

  const ModelManifest& manifest() const { return manifest_; }
  int64_t num_classes() const { return static_cast<int64_t>(manifest_.classes.size()); }
  // rows * cols of one input image.
  int64_t image_size() const { return manifest_.input_shape[1] * manifest_.input_shape[2]; }

  // Class probabilities (softmax of the logits) of `count` images stored one after another at
  // `images` (count * image_size() floats): count * num_classes() values, image by image.
  StatusOr<std::vector<float>> PredictProbabilities(const float* images, int64_t count);

  // The most probable class of each image.
  StatusOr<std::vector<int>> PredictClasses(const float* images, int64_t count);

  // Loss and accuracy (metrics["accuracy"]) over a whole data set, whose images must have the
  // model's input size.
  StatusOr<EvaluationResult> Evaluate(const ImageDataset& dataset);

 private:
  struct Network;  // the ImageClassifier holding the libtorch module
  SavedModel(ModelManifest manifest, std::unique_ptr<Network> network);

  ModelManifest manifest_;
  std::unique_ptr<Network> network_;
};

}  // namespace cohort::train
