#include "train/evaluation.h"

#include <torch/utils.h>

#include <algorithm>
#include <numeric>

namespace cohort::train {

std::vector<double> EvaluationSums::ToVector() const {
  std::vector<double> values = {loss_sum, samples};
  for (const auto& [name, sum] : metric_sums) values.push_back(sum);
  return values;
}

void EvaluationSums::FromVector(const std::vector<double>& values) {
  loss_sum = values[0];
  samples = values[1];
  size_t next = 2;
  for (auto& [name, sum] : metric_sums) sum = values[next++];
}

EvaluationResult EvaluationSums::Averages() const {
  EvaluationResult result;
  result.loss = samples > 0 ? loss_sum / samples : 0;
  for (const auto& [name, sum] : metric_sums)
    result.metrics[name] = samples > 0 ? sum / samples : 0;
  result.samples = static_cast<int64_t>(samples);
  return result;
}

StatusOr<EvaluationSums> EvaluateRange(TrainableModel& model, const BatchSource& source,
                                       int64_t begin, int64_t end, int64_t batch) {
  torch::NoGradGuard no_grad;
  torch::nn::Module& module = model.module();
  const bool was_training = module.is_training();
  module.eval();
  EvaluationSums sums;
  std::vector<int64_t> indices;
  for (int64_t first = begin; first < end; first += batch) {
    const int64_t count = std::min(batch, end - first);
    indices.resize(static_cast<size_t>(count));
    std::iota(indices.begin(), indices.end(), first);
    auto gathered = source.Gather(indices);
    if (!gathered.ok()) {
      module.train(was_training);
      return gathered.status().WithContext("evaluation");
    }
    StepResult result = model.Step(*gathered);
    sums.loss_sum += result.loss.item<double>() * static_cast<double>(count);
    for (const auto& [name, sum] : result.metric_sums) sums.metric_sums[name] += sum;
    sums.samples += static_cast<double>(count);
  }
  module.train(was_training);
  return sums;
}

}  // namespace cohort::train
