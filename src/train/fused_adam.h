// FusedAdam: libtorch's Adam with the update of each parameter done in one pass over memory.
//
// torch::optim::Adam (1.13) updates a parameter with five tensor operations (two moment updates,
// a square root, a division and the final step), each a full pass over the parameter's memory plus
// a temporary the size of the parameter. On the classic CNN, whose first dense layer holds 2.8 M
// weights, that costs about as much as the forward pass. FusedAdam computes the same formula
// element by element in a single loop:
//   m = b1 m + (1 - b1) g;  v = b2 v + (1 - b2) g^2;
//   p -= lr / (1 - b1^t) * m / (sqrt(v) / sqrt(1 - b2^t) + eps)
// It keeps its state in libtorch's AdamParamState under libtorch's keys, so save() and load() are
// Adam's own and a checkpoint of either optimizer loads into the other. Tensors that are not
// contiguous float32 (never the case for the models here), and amsgrad, take Adam's own path.
#pragma once

#include <torch/optim/adam.h>

#include <vector>

namespace cohort::train {

class FusedAdam : public torch::optim::Adam {
 public:
  FusedAdam(std::vector<torch::Tensor> parameters, torch::optim::AdamOptions options)
      : torch::optim::Adam(std::move(parameters), options) {}

  torch::Tensor step(LossClosure closure = nullptr) override;
};

}  // namespace cohort::train
