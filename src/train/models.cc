#include "train/models.h"

#include <torch/nn/modules/activation.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/pooling.h>

namespace cohort::train {
namespace {

namespace nn = torch::nn;

nn::Sequential ClassicCnn(const ModelShape& shape) {
  constexpr int64_t kFilters = 32, kKernel = 3, kHidden = 128;
  const int64_t flat = kFilters * (shape.rows - kKernel + 1) * (shape.cols - kKernel + 1);
  return nn::Sequential(nn::Conv2d(nn::Conv2dOptions(1, kFilters, kKernel)), nn::ReLU(),
                        nn::Flatten(), nn::Linear(flat, kHidden), nn::ReLU(),
                        nn::Linear(kHidden, shape.classes));
}

nn::Sequential DeepCnn(const ModelShape& shape) {
  constexpr int64_t kKernel = 3, kHidden = 128;
  auto same_conv = [](int64_t in, int64_t out) {
    return nn::Conv2d(nn::Conv2dOptions(in, out, kKernel).padding(kKernel / 2));
  };
  // Each 2x2 pool halves the image, rounding down.
  const int64_t flat = 64 * (shape.rows / 4) * (shape.cols / 4);
  return nn::Sequential(same_conv(1, 32), nn::ReLU(), nn::MaxPool2d(2), same_conv(32, 64),
                        nn::ReLU(), nn::MaxPool2d(2), nn::Flatten(), nn::Linear(flat, kHidden),
                        nn::ReLU(), nn::Linear(kHidden, shape.classes));
}

}  // namespace

const std::vector<std::string>& ModelNames() {
  static const std::vector<std::string> kNames = {"cnn", "deep_cnn"};
  return kNames;
}

StatusOr<torch::nn::Sequential> MakeModel(const std::string& name, const ModelShape& shape) {
  if (shape.rows < 4 || shape.cols < 4 || shape.classes < 2) {
    return Status::InvalidArgument("model input " + std::to_string(shape.rows) + "x" +
                                   std::to_string(shape.cols) + " with " +
                                   std::to_string(shape.classes) + " classes is too small");
  }
  if (name == "cnn") return ClassicCnn(shape);
  if (name == "deep_cnn") return DeepCnn(shape);
  std::string known;
  for (const auto& n : ModelNames()) known += (known.empty() ? "" : ", ") + n;
  return Status::InvalidArgument("unknown model \"" + name + "\" (known: " + known + ")");
}

}  // namespace cohort::train
