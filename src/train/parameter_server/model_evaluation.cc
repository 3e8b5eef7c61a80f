#include "train/parameter_server/model_evaluation.h"

#include <algorithm>
#include <cstdio>
#include <numeric>

#include "train/parameter_server/binary_auc.h"

namespace cohort::train {

StatusOr<double> Evaluation::Metric(const std::string& name) const {
  for (const auto& [metric, value] : metrics) {
    if (metric == name) return value;
  }
  return Status::NotFound("the evaluation has no metric \"" + name + "\"");
}

std::string Evaluation::ToString() const {
  std::string text;
  for (const auto& [name, value] : metrics) {
    char figure[64];
    std::snprintf(figure, sizeof(figure), "%.4f", value);
    text += (text.empty() ? "" : " ") + name + " " + figure;
  }
  return text;
}

StatusOr<Evaluation> EvaluateModel(const ParameterServerModel& model, ParameterSource& source,
                                   const ExampleSource& examples, int64_t batch_size) {
  if (batch_size <= 0) {
    return Status::InvalidArgument("evaluation batch size must be positive, got " +
                                   std::to_string(batch_size));
  }
  std::vector<std::vector<float>> dense;
  COHORT_RETURN_IF_ERROR(PullDenseVariables(model, source, &dense));
  std::unique_ptr<EncodedBatch> batch = examples.NewBatch();
  std::vector<int64_t> indices;
  std::vector<double> scores;
  std::vector<uint8_t> labels;
  std::vector<std::pair<std::string, double>> metric_sums;
  double loss_sum = 0;
  for (int64_t begin = 0; begin < examples.size(); begin += batch_size) {
    indices.resize(static_cast<size_t>(std::min(examples.size() - begin, batch_size)));
    std::iota(indices.begin(), indices.end(), begin);
    examples.Encode(indices, batch.get());
    BatchLookups lookups = model.Lookups(*batch);
    COHORT_RETURN_IF_ERROR(PullLookupRows(source, lookups));
    auto evaluated = model.Evaluate(*batch, dense, lookups);
    if (!evaluated.ok()) return evaluated.status();
    loss_sum += evaluated->loss_sum;
    scores.insert(scores.end(), evaluated->scores.begin(), evaluated->scores.end());
    labels.insert(labels.end(), evaluated->labels.begin(), evaluated->labels.end());
    if (metric_sums.empty()) {
      metric_sums = evaluated->metric_sums;
    } else {
      for (size_t i = 0; i < metric_sums.size() && i < evaluated->metric_sums.size(); ++i) {
        metric_sums[i].second += evaluated->metric_sums[i].second;
      }
    }
  }
  Evaluation evaluation;
  evaluation.examples = examples.size();
  const double count = static_cast<double>(std::max<int64_t>(1, examples.size()));
  if (!scores.empty()) {
    auto auc = AreaUnderRocCurve(scores, labels);
    if (!auc.ok()) return auc.status();
    evaluation.metrics.emplace_back("auc", *auc);
  }
  evaluation.metrics.emplace_back("loss", examples.size() == 0 ? 0 : loss_sum / count);
  for (const auto& [name, sum] : metric_sums) evaluation.metrics.emplace_back(name, sum / count);
  return evaluation;
}

}  // namespace cohort::train
