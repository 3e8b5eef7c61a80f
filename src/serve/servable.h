// Servable: one loaded model version, as the prediction server runs it. A request's instances
// are decoded one by one into numbers (DecodeInstance: a malformed one is named by its index and
// field), many requests' instances are concatenated into one batch (batcher.h), and the batch
// runs through the model in one forward pass (Predict), giving one JSON prediction per instance.
//
//   StatusOr<std::unique_ptr<Servable>> model = LoadServable("/tmp/mnist/model");
//   StatusOr<DecodedInstance> x = (*model)->DecodeInstance(instance_json, 0);
//   StatusOr<std::vector<nlohmann::json>> y = (*model)->Predict(x->values, 1, x->shape);
//
// Two kinds of model:
// - a saved image classifier (cohort-train's saved model: manifest.json + weights.pt,
//   train/saved_model.h). An instance is a rows x cols image: nested arrays of pixels scaled to
//   [0, 1] ([[...]...], [rows][cols][1], [1][rows][cols] or one flat array of rows * cols), or a
//   PNG as {"b64": "..."}, either alone or as the value of an object's one input key
//   ({"image": ...}). A prediction is {"class_id", "class", "probabilities"}.
// - a TorchScript file (`torch.jit.save` from Python; a file ending in .pt or .pth, or a
//   directory holding model.pt). An instance is a nested array of numbers (its shape is the
//   instance's; a batch stacks instances of one shape along a new first dimension, as float32),
//   or an object whose one key holds such an array. The module's forward must return a tensor
//   whose first dimension is the batch; a prediction is that tensor's row as nested arrays.
//
// Predict is safe to call from several threads: a model that is not serialises its calls.
#pragma once

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "base/status.h"

namespace cohort::serve {

// The most numbers one instance may hold, and the most dimensions it may have.
inline constexpr int64_t kMaxInstanceValues = 1 << 20;
inline constexpr size_t kMaxInstanceRank = 8;

struct DecodedInstance {
  std::vector<int64_t> shape;  // of one instance (the batch adds a first dimension)
  std::vector<float> values;   // prod(shape) numbers, row-major
};

class Servable {
 public:
  virtual ~Servable() = default;

  // "COHORT" for a saved model of Cohort's trainers, "TORCHSCRIPT" for a TorchScript file.
  virtual std::string framework() const = 0;
  // What the model takes and gives, for GET .../metadata: {"inputs": ..., "outputs": ...}.
  virtual nlohmann::json Signature() const = 0;

  // Instance `index` of a request as numbers. InvalidArgument whose message names the instance
  // ("instance 3") and the field at fault ("[27][4]: ...", "b64: ...").
  virtual StatusOr<DecodedInstance> DecodeInstance(const nlohmann::json& instance,
                                                   size_t index) const = 0;

  // `count` instances of shape `shape`, concatenated in `values` (count * prod(shape) numbers):
  // one prediction each, in order. Internal when the model fails.
  virtual StatusOr<std::vector<nlohmann::json>> Predict(const std::vector<float>& values,
                                                        int64_t count,
                                                        const std::vector<int64_t>& shape) = 0;
};

// Loads the model at `path`: a saved model directory (manifest.json), a TorchScript file, or a
// directory holding model.pt. InvalidArgument naming the path when it is none of these or cannot
// be loaded; a saved model's weights are verified against the manifest first.
StatusOr<std::unique_ptr<Servable>> LoadServable(const std::string& path);

// The numbers of `value`, a nested array of numbers, and its shape; InvalidArgument naming the
// first element at fault by its index path ("[2][5]") prefixed by `where`.
StatusOr<DecodedInstance> DecodeNestedArray(const nlohmann::json& value, const std::string& where);

}  // namespace cohort::serve
