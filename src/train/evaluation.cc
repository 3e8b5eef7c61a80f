#include "train/evaluation.h"

#include <torch/nn/functional/loss.h>
#include <torch/utils.h>

#include <numeric>

#include "train/data/batch_prefetcher.h"

namespace cohort::train {

EvaluationSums EvaluateRange(torch::nn::Sequential& model, const ImageDataset& dataset,
                             int64_t begin, int64_t end, int64_t batch) {
  torch::NoGradGuard no_grad;
  const bool was_training = model->is_training();
  model->eval();
  EvaluationSums sums;
  std::vector<int64_t> indices;
  for (int64_t first = begin; first < end; first += batch) {
    const int64_t count = std::min(batch, end - first);
    indices.resize(static_cast<size_t>(count));
    std::iota(indices.begin(), indices.end(), first);
    HostBatch host = GatherBatch(dataset, indices, 0);
    torch::Tensor images =
        torch::from_blob(host.images.data(), {count, 1, dataset.rows, dataset.cols});
    torch::Tensor labels = torch::from_blob(host.labels.data(), {count}, torch::kInt64);
    torch::Tensor logits = model->forward(images);
    sums.loss_sum +=
        torch::nn::functional::cross_entropy(
            logits, labels, torch::nn::functional::CrossEntropyFuncOptions().reduction(torch::kSum))
            .item<double>();
    sums.correct += logits.argmax(1).eq(labels).sum().item<double>();
    sums.samples += static_cast<double>(count);
  }
  model->train(was_training);
  return sums;
}

}  // namespace cohort::train
