// Models by name: image classifiers from [batch, 1, rows, cols] float images to class logits.
//
//   "cnn"       the classic Keras-tutorial CNN: Conv 32 3x3 + ReLU -> Flatten -> Dense 128 + ReLU
//               -> Dense classes. About 2.8 M parameters on 28x28 input, almost all in the first
//               dense layer, so a step is dominated by one large matrix multiply (BLAS-bound).
//   "deep_cnn"  two conv + max-pool blocks (32 then 64 channels, 3x3, "same" padding, 2x2 pool)
//               -> Flatten -> Dense 128 + ReLU -> Dense classes: more compute per sample, a tenth
//               of the parameters, and a little more accuracy.
//   "bn_cnn"    the "cnn" with the usual input normalisation and batch normalisation: (x - mean) /
//               std with the training split's pixel mean and standard deviation (buffers, saved
//               with the weights) -> Conv 32 3x3 + BatchNorm + ReLU -> Flatten -> Dense 128 +
//               BatchNorm + ReLU -> Dense classes. The same 2.8 M parameters as "cnn", but few
//               exact zeros in its gradients (the "cnn"'s raw 0-1 pixels behind a ReLU leave
//               nearly half of the big layer's gradient exactly zero), so training comparisons
//               run both: what zero skipping gains on one it does not on the other.
// Logits are raw (no softmax): the loss is cross-entropy on logits, as Keras's
// SparseCategoricalCrossentropy(from_logits=True).
#pragma once

#include <torch/nn/modules/container/sequential.h>

#include <string>
#include <vector>

#include "base/status.h"

namespace cohort::train {

// What a model is built for: its input image size and number of classes.
struct ModelShape {
  int64_t rows = 28;
  int64_t cols = 28;
  int64_t classes = 10;
  // The pixel mean and standard deviation (pixels in [0, 1]) that "bn_cnn" normalises its input
  // with; Fashion-MNIST's training split's by default. Other models ignore them.
  double input_mean = 0.2860;
  double input_std = 0.3530;
};

// The names MakeModel accepts, for --help and error messages.
const std::vector<std::string>& ModelNames();

// A freshly initialised model (libtorch's default initialisation, drawn from torch's global
// generator, so seed it first for reproducible weights). InvalidArgument for an unknown name.
StatusOr<torch::nn::Sequential> MakeModel(const std::string& name, const ModelShape& shape);

}  // namespace cohort::train
