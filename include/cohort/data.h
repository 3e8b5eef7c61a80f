// cohort/data.h: the data a training program trains on.
//
// A BatchSource is a whole data set: `size()` samples, numbered 0 .. size()-1, and Get() turns a
// list of sample numbers into one batch. Every worker holds the same source; which samples each
// worker trains on at each step is Cohort's business (each epoch is shuffled with the run's
// seed and split into disjoint per-worker batches), so a source knows nothing of workers:
//
//   // In memory: inputs [N, ...] and targets [N, ...].
//   cohort::TensorSource train(inputs, targets);
//   // Fashion-MNIST or MNIST files (train-images-idx3-ubyte[.gz] ...): images [N, 1, 28, 28]
//   // scaled to 0..1, labels int64.
//   cohort::TensorSource test = cohort::LoadMnist("/usr/share/datasets/fashion-mnist", "test");
//   // Any torch::data dataset whose examples stack (data and target tensors):
//   cohort::DatasetSource<MyDataset> mine(MyDataset(...));
//
// A hand-written loop asks a ShardedBatches for its worker's batch of each step; Fit (fit.h) does
// that itself. Both check, before the first step, that every worker's source yields the same
// number of batches: a worker that loaded a different file would otherwise wait for collectives
// the others never make. The error names the workers and their counts.
#pragma once

#include <torch/data/datasets/base.h>
#include <torch/types.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace cohort {

class MultiWorkerMirrored;

// Samples gathered for one step, along the first dimension of both tensors.
struct Batch {
  torch::Tensor inputs;
  torch::Tensor targets;

  int64_t size() const { return targets.defined() ? targets.size(0) : 0; }
};

class BatchSource {
 public:
  virtual ~BatchSource() = default;
  // The number of samples.
  virtual int64_t size() const = 0;
  // The samples numbered `indices` (each below size()), in that order. Called from a background
  // thread while the previous step computes, and for evaluation from the training thread, maybe
  // at the same time: it must not change the source. May throw; training stops with the error.
  virtual Batch Get(const std::vector<int64_t>& indices) const = 0;
};

// A data set held in two tensors with the samples along the first dimension.
class TensorSource : public BatchSource {
 public:
  // Throws cohort::Error when the two disagree on the number of samples.
  TensorSource(torch::Tensor inputs, torch::Tensor targets);
  int64_t size() const override { return inputs_.size(0); }
  Batch Get(const std::vector<int64_t>& indices) const override;
  const torch::Tensor& inputs() const { return inputs_; }
  const torch::Tensor& targets() const { return targets_; }

 private:
  torch::Tensor inputs_;
  torch::Tensor targets_;
};

// One split ("train" or "test") of an MNIST-format data set in `dir` (gzipped or not): images as
// float [N, 1, rows, cols] in 0..1, labels as int64 [N]. Throws cohort::Error naming the file when
// one is missing or damaged.
TensorSource LoadMnist(const std::string& dir, const std::string& split);

// The adapter for torch::data datasets (torch::data::datasets::Dataset<D, Example<>>, e.g. a
// dataset of your own, or torch::data::datasets::MNIST on unpacked files): each example's data
// and target are stacked into a batch. The dataset's size() must be known.
template <typename Dataset>
class DatasetSource : public BatchSource {
 public:
  explicit DatasetSource(Dataset dataset) : dataset_(std::move(dataset)) {
    const auto size = dataset_.size();
    TORCH_CHECK(size.has_value(), "cohort::DatasetSource needs a dataset whose size() is known");
    size_ = static_cast<int64_t>(*size);
  }
  int64_t size() const override { return size_; }
  Batch Get(const std::vector<int64_t>& indices) const override {
    std::vector<torch::Tensor> data, targets;
    data.reserve(indices.size());
    targets.reserve(indices.size());
    for (int64_t index : indices) {
      auto example = dataset_.get(static_cast<size_t>(index));
      data.push_back(example.data);
      targets.push_back(example.target);
    }
    return Batch{torch::stack(data), torch::stack(targets)};
  }

 private:
  // get() is not const in torch::data; Get() is called concurrently only for reading, as
  // torch::data's own parallel loaders call it.
  mutable Dataset dataset_;
  int64_t size_ = 0;
};

// The batches of one worker, for a hand-written loop: every epoch the sample numbers 0..size()-1
// are shuffled with `seed` and the epoch, and step s of the epoch gives this worker its
// `per_worker_batch` samples of global batch s. An epoch has size() / (per_worker_batch x workers)
// steps; the samples that do not fill a global batch are left out of that epoch.
//
//   cohort::ShardedBatches batches(strategy, train, /*per_worker_batch=*/32, /*seed=*/1);
//   for (int epoch = 0; epoch < epochs; ++epoch)
//     for (int64_t step = 0; step < batches.steps_per_epoch(); ++step) {
//       cohort::Batch batch = batches.Get(epoch, step);
//       ...
//     }
class ShardedBatches {
 public:
  // Collective: every worker constructs it at the same point. Throws cohort::Error when the
  // workers' sources yield different numbers of batches (naming each worker's count), or when
  // the source holds fewer samples than one global batch.
  ShardedBatches(MultiWorkerMirrored& strategy, const BatchSource& source, int64_t per_worker_batch,
                 uint64_t seed);
  ~ShardedBatches();
  int64_t steps_per_epoch() const { return steps_per_epoch_; }
  // This worker's batch for `step` (0 .. steps_per_epoch()-1) of `epoch`. Not thread-safe.
  Batch Get(int epoch, int64_t step);

 private:
  struct Impl;
  const BatchSource& source_;
  int64_t steps_per_epoch_ = 0;
  std::unique_ptr<Impl> impl_;
};

}  // namespace cohort
