#include "train/models.h"

#include <torch/nn/module.h>
#include <torch/nn/modules/activation.h>
#include <torch/nn/modules/batchnorm.h>
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

// (x - mean) / std with a mean and standard deviation kept as buffers, so that a saved model
// normalises as the trained one did.
class InputNormalizationImpl : public nn::Module {
 public:
  InputNormalizationImpl(double mean, double std)
      : mean_(register_buffer("mean", torch::full({1}, mean))),
        std_(register_buffer("std", torch::full({1}, std))) {}
  torch::Tensor forward(const torch::Tensor& input) { return (input - mean_) / std_; }

 private:
  torch::Tensor mean_;
  torch::Tensor std_;
};
TORCH_MODULE(InputNormalization);

nn::Sequential BatchNormCnn(const ModelShape& shape) {
  constexpr int64_t kFilters = 32, kKernel = 3, kHidden = 128;
  const int64_t flat = kFilters * (shape.rows - kKernel + 1) * (shape.cols - kKernel + 1);
  return nn::Sequential(InputNormalization(shape.input_mean, shape.input_std),
                        nn::Conv2d(nn::Conv2dOptions(1, kFilters, kKernel)),
                        nn::BatchNorm2d(kFilters), nn::ReLU(), nn::Flatten(),
                        nn::Linear(flat, kHidden), nn::BatchNorm1d(kHidden), nn::ReLU(),
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
  static const std::vector<std::string> kNames = {"cnn", "deep_cnn", "bn_cnn"};
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
  if (name == "bn_cnn") {
    if (!(shape.input_std > 0)) {
      return Status::InvalidArgument("bn_cnn: the input's standard deviation must be positive");
    }
    return BatchNormCnn(shape);
  }
  std::string known;
  for (const auto& n : ModelNames()) known += (known.empty() ? "" : ", ") + n;
  return Status::InvalidArgument("unknown model \"" + name + "\" (known: " + known + ")");
}

}  // namespace cohort::train
