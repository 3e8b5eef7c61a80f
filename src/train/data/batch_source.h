// BatchSource: the data side of what the fit loop trains on.
//
// A source holds `size()` samples, numbered 0 .. size()-1, and turns a list of sample numbers
// into one batch of tensors. Which numbers each worker asks for is the fit loop's business
// (shard_sampler.h shards and shuffles them), so a source knows nothing of workers or epochs:
//
//   class VectorSource : public BatchSource {
//     int64_t size() const override { return rows_; }
//     StatusOr<Batch> Gather(const std::vector<int64_t>& indices) const override { ... }
//   };
//
// The model side is TrainableModel (train/trainable_model.h), which reads `inputs` and `targets`
// in whatever layout the source and the model agree on. ImageBatchSource (image_batch_source.h)
// is the source of the image classifier.
#pragma once

#include <torch/types.h>

#include <cstdint>
#include <vector>

#include "base/status.h"

namespace cohort::train {

// Samples gathered for one step: the model's input and what it should learn to produce, both
// with the samples along the first dimension.
struct Batch {
  int64_t step = 0;  // the global step the batch is for (set by BatchPrefetcher)
  torch::Tensor inputs;
  torch::Tensor targets;

  int64_t size() const { return targets.defined() ? targets.size(0) : 0; }
};

class BatchSource {
 public:
  virtual ~BatchSource() = default;

  // The number of samples.
  virtual int64_t size() const = 0;

  // The samples numbered `indices`, in that order, as tensors the batch owns. Called from the
  // prefetch thread and, for evaluation, from the training thread, possibly at the same time:
  // it must not change the source. An error stops training.
  virtual StatusOr<Batch> Gather(const std::vector<int64_t>& indices) const = 0;
};

}  // namespace cohort::train
