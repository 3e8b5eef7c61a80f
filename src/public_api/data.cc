#include "cohort/data.h"

#include <torch/torch.h>

#include "public_api/internal.h"
#include "train/data/image_dataset.h"
#include "train/data/shard_sampler.h"

namespace cohort {

TensorSource::TensorSource(torch::Tensor inputs, torch::Tensor targets)
    : inputs_(std::move(inputs)), targets_(std::move(targets)) {
  if (!inputs_.defined() || !targets_.defined() || inputs_.dim() == 0 || targets_.dim() == 0) {
    ThrowError(Status::InvalidArgument(
        "TensorSource needs inputs and targets with the samples along their first dimension"));
  }
  if (inputs_.size(0) != targets_.size(0)) {
    ThrowError(Status::InvalidArgument("TensorSource: the inputs hold " +
                                       std::to_string(inputs_.size(0)) + " samples, the targets " +
                                       std::to_string(targets_.size(0))));
  }
}

Batch TensorSource::Get(const std::vector<int64_t>& indices) const {
  const torch::Tensor index = torch::tensor(indices, torch::TensorOptions().dtype(torch::kInt64));
  return Batch{inputs_.index_select(0, index), targets_.index_select(0, index)};
}

TensorSource LoadMnist(const std::string& dir, const std::string& split) {
  if (split != "train" && split != "test") {
    ThrowError(Status::InvalidArgument("LoadMnist: split \"" + split +
                                       "\" is neither \"train\" nor \"test\""));
  }
  train::ImageDataset data = ValueOrThrow(
      train::LoadImageDataset(dir, split == "train" ? train::Split::kTrain : train::Split::kTest));
  torch::Tensor pixels =
      torch::from_blob(data.pixels.data(), {data.size(), 1, data.rows, data.cols}, torch::kUInt8)
          .to(torch::kFloat32)
          .div_(255.0);
  torch::Tensor labels =
      torch::from_blob(data.labels.data(), {data.size()}, torch::kUInt8).to(torch::kInt64);
  return TensorSource(std::move(pixels), std::move(labels));
}

struct ShardedBatches::Impl {
  Impl(int64_t samples, int workers, int rank, int64_t per_worker_batch, int64_t steps,
       uint64_t seed)
      : sampler(samples, workers, rank, per_worker_batch, steps, seed) {}
  train::ShardSampler sampler;
};

ShardedBatches::ShardedBatches(MultiWorkerMirrored& strategy, const BatchSource& source,
                               int64_t per_worker_batch, uint64_t seed)
    : source_(source) {
  if (per_worker_batch < 1) {
    ThrowError(Status::InvalidArgument("per_worker_batch must be at least 1"));
  }
  ThrowIfError(CheckSameBatchCount(strategy, source.size(), per_worker_batch, "the data"));
  const int64_t global_batch = per_worker_batch * strategy.world_size();
  steps_per_epoch_ = source.size() / global_batch;
  if (steps_per_epoch_ == 0) {
    ThrowError(Status::InvalidArgument("the data has " + std::to_string(source.size()) +
                                       " samples, fewer than one global batch (" +
                                       std::to_string(per_worker_batch) + " x " +
                                       std::to_string(strategy.world_size()) + " workers)"));
  }
  impl_ = std::make_unique<Impl>(source.size(), strategy.world_size(), strategy.rank(),
                                 per_worker_batch, steps_per_epoch_, seed);
}

ShardedBatches::~ShardedBatches() = default;

Batch ShardedBatches::Get(int epoch, int64_t step) {
  if (epoch < 0 || step < 0 || step >= steps_per_epoch_) {
    ThrowError(Status::InvalidArgument(
        "ShardedBatches::Get: step " + std::to_string(step) + " of epoch " + std::to_string(epoch) +
        " is outside an epoch of " + std::to_string(steps_per_epoch_) + " steps"));
  }
  return source_.Get(impl_->sampler.BatchIndices(epoch * steps_per_epoch_ + step));
}

}  // namespace cohort
