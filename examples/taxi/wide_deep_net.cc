#include "taxi/wide_deep_net.h"

#include <algorithm>
#include <numeric>

namespace cohort::taxi {

WideDeepNetImpl::WideDeepNetImpl(const WideDeepNetConfig& config) {
  wide_weights = register_module("wide_weights", torch::nn::Embedding(TaxiWideIdSpace(), 1));
  wide_bias = register_parameter("wide_bias", torch::zeros({1}));
  int64_t deep_inputs = static_cast<int64_t>(TaxiNumericFeatureNames().size());
  for (const FeatureColumn& column : TaxiEmbeddingColumns()) {
    column_embeddings.push_back(register_module(
        column.name + "_embedding", torch::nn::Embedding(column.size, config.embedding_width)));
    deep_inputs += config.embedding_width;
  }
  layers = torch::nn::Sequential();
  for (int64_t units : config.hidden_units) {
    layers->push_back(torch::nn::Linear(deep_inputs, units));
    layers->push_back(torch::nn::ReLU());
    deep_inputs = units;
  }
  layers->push_back(torch::nn::Linear(deep_inputs, 1));
  register_module("layers", layers);
  // The estimator's initialisers: Glorot-uniform kernels, zero biases. (The embedding tables'
  // rows are drawn by the parameter servers when first used.)
  torch::NoGradGuard no_grad;
  for (auto& parameter : layers->named_parameters()) {
    if (parameter.value().dim() == 2) {
      torch::nn::init::xavier_uniform_(parameter.value());
    } else {
      torch::nn::init::zeros_(parameter.value());
    }
  }
}

torch::Tensor WideDeepNetImpl::forward(const torch::Tensor& inputs) {
  const int64_t wide_columns = static_cast<int64_t>(TaxiWideColumns().size());
  const int64_t embedding_columns = static_cast<int64_t>(column_embeddings.size());
  const torch::Tensor wide_ids = inputs.slice(1, 0, wide_columns).to(torch::kLong);
  const torch::Tensor wide_logit = wide_weights(wide_ids).sum({1, 2}) + wide_bias;
  std::vector<torch::Tensor> deep_inputs;
  for (int64_t c = 0; c < embedding_columns; ++c) {
    deep_inputs.push_back(
        column_embeddings[c](inputs.select(1, wide_columns + c).to(torch::kLong)));
  }
  deep_inputs.push_back(inputs.slice(1, wide_columns + embedding_columns));
  const torch::Tensor deep_logit = layers->forward(torch::cat(deep_inputs, 1)).squeeze(1);
  return wide_logit + deep_logit;
}

Batch TaxiTrips::Get(const std::vector<int64_t>& indices) const {
  std::vector<TaxiTrip> trips;
  trips.reserve(indices.size());
  for (int64_t index : indices) trips.push_back(trips_[static_cast<size_t>(index)]);
  TaxiFeatureBatch features;
  encoder_->Encode(trips, &features);
  const int64_t rows = features.size;
  const int64_t wide = static_cast<int64_t>(TaxiWideColumns().size());
  const int64_t embedding = static_cast<int64_t>(TaxiEmbeddingColumns().size());
  const int64_t numeric = static_cast<int64_t>(TaxiNumericFeatureNames().size());
  torch::Tensor inputs = torch::empty({rows, wide + embedding + numeric});
  float* row = inputs.data_ptr<float>();
  for (int64_t r = 0; r < rows; ++r, row += wide + embedding + numeric) {
    for (int64_t c = 0; c < wide; ++c) row[c] = static_cast<float>(features.wide_ids[r * wide + c]);
    for (int64_t c = 0; c < embedding; ++c) {
      row[wide + c] = static_cast<float>(features.embedding_ids[r * embedding + c]);
    }
    for (int64_t c = 0; c < numeric; ++c)
      row[wide + embedding + c] = features.numeric[r * numeric + c];
  }
  torch::Tensor labels = torch::tensor(features.labels, torch::kFloat);
  return Batch{inputs, labels};
}

double BinaryAuc(const torch::Tensor& scores, const torch::Tensor& labels) {
  const torch::Tensor score = scores.to(torch::kDouble).contiguous().flatten();
  const torch::Tensor label = labels.to(torch::kDouble).contiguous().flatten();
  const int64_t n = score.numel();
  const double* s = score.data_ptr<double>();
  const double* y = label.data_ptr<double>();
  std::vector<int64_t> order(static_cast<size_t>(n));
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [s](int64_t a, int64_t b) { return s[a] < s[b]; });
  // Mann-Whitney: the sum of the positives' ranks, tied scores sharing their mean rank.
  double positive_rank_sum = 0;
  int64_t positives = 0;
  for (int64_t i = 0; i < n;) {
    int64_t j = i;
    while (j < n && s[order[j]] == s[order[i]]) ++j;
    const double mean_rank = (static_cast<double>(i + 1) + static_cast<double>(j)) / 2;
    for (int64_t k = i; k < j; ++k) {
      if (y[order[k]] > 0.5) {
        positive_rank_sum += mean_rank;
        ++positives;
      }
    }
    i = j;
  }
  const int64_t negatives = n - positives;
  if (positives == 0 || negatives == 0) return 0.5;
  return (positive_rank_sum - static_cast<double>(positives) * (positives + 1) / 2) /
         (static_cast<double>(positives) * static_cast<double>(negatives));
}

}  // namespace cohort::taxi
