// Evaluation: loss and accuracy of a model over part of a data set.
//
// Sums rather than averages come back, so that the parts several workers evaluated can be added
// up (Strategy::SumAcrossWorkers) before dividing.
#pragma once

#include <torch/nn/modules/container/sequential.h>

#include <cstdint>

#include "train/data/image_dataset.h"

namespace cohort::train {

struct EvaluationSums {
  double loss_sum = 0;  // cross-entropy summed over samples
  double correct = 0;   // samples whose arg-max logit is the label
  double samples = 0;

  double loss() const { return samples > 0 ? loss_sum / samples : 0; }
  double accuracy() const { return samples > 0 ? correct / samples : 0; }
};

// Evaluates samples [begin, end) of `dataset` in batches of `batch`, without gradients and with
// the model in eval mode (restored to its previous mode afterwards). May throw c10::Error; callers
// inside src/train catch it.
EvaluationSums EvaluateRange(torch::nn::Sequential& model, const ImageDataset& dataset,
                             int64_t begin, int64_t end, int64_t batch);

}  // namespace cohort::train
