#include "taxi/wide_deep_model.h"

#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "taxi/taxi_examples.h"

namespace cohort::taxi {
namespace {

std::string EmbeddingTableName(const std::string& column) { return "dnn/embedding/" + column; }

// Dense layer i's kernel and bias names; i == hidden_units.size() is the logits layer.
std::string LayerName(size_t layer, size_t hidden_layers) {
  return layer == hidden_layers ? "dnn/logits" : "dnn/hiddenlayer_" + std::to_string(layer);
}

int64_t DeepInputWidth(const WideDeepConfig& config) {
  return static_cast<int64_t>(TaxiEmbeddingColumns().size()) * config.embedding_width +
         static_cast<int64_t>(TaxiNumericFeatureNames().size());
}

// A tensor over `values` without copying; libtorch only reads it (or, for a leaf that requires a
// gradient, writes the gradient elsewhere).
torch::Tensor View(const std::vector<float>& values, torch::IntArrayRef shape) {
  return torch::from_blob(const_cast<float*>(values.data()), shape, torch::kFloat32);
}
torch::Tensor View(const std::vector<int64_t>& values, torch::IntArrayRef shape) {
  return torch::from_blob(const_cast<int64_t*>(values.data()), shape, torch::kInt64);
}

const TaxiFeatureBatch& FeaturesOf(const train::EncodedBatch& batch) {
  return static_cast<const TaxiBatch&>(batch).features;
}

struct Leaves {
  std::vector<torch::Tensor> dense;  // DenseVariables() order
  std::vector<torch::Tensor> rows;   // one per lookup
};

// The logits of `batch`; `leaves` receives the tensors gradients flow to.
torch::Tensor Logits(const WideDeepConfig& config, const TaxiFeatureBatch& batch,
                     const std::vector<std::vector<float>>& dense, const BatchLookups& lookups,
                     bool requires_grad, Leaves* leaves) {
  const int64_t size = batch.size;
  const size_t hidden_layers = config.hidden_units.size();
  int64_t width = DeepInputWidth(config);
  size_t next_dense = 0;
  std::vector<std::pair<torch::Tensor, torch::Tensor>> layers;
  for (size_t layer = 0; layer <= hidden_layers; ++layer) {
    const int64_t units = layer == hidden_layers ? 1 : config.hidden_units[layer];
    torch::Tensor kernel = View(dense[next_dense++], {width, units}).requires_grad_(requires_grad);
    torch::Tensor bias = View(dense[next_dense++], {units}).requires_grad_(requires_grad);
    leaves->dense.push_back(kernel);
    leaves->dense.push_back(bias);
    layers.emplace_back(kernel, bias);
    width = units;
  }
  torch::Tensor wide_bias = View(dense[next_dense++], {1}).requires_grad_(requires_grad);
  leaves->dense.push_back(wide_bias);

  for (const TableLookup& lookup : lookups.tables) {
    leaves->rows.push_back(
        View(lookup.rows, {static_cast<int64_t>(lookup.ids.size()), lookup.row_width})
            .requires_grad_(requires_grad));
  }
  const TableLookup& wide = lookups.tables[0];
  const int64_t wide_columns = static_cast<int64_t>(wide.index.size()) / size;
  torch::Tensor wide_logit =
      leaves->rows[0].index_select(0, View(wide.index, {size * wide_columns})).view({size, -1});
  wide_logit = wide_logit.sum(1) + wide_bias;

  std::vector<torch::Tensor> inputs;
  for (size_t table = 1; table < lookups.tables.size(); ++table) {
    inputs.push_back(
        leaves->rows[table].index_select(0, View(lookups.tables[table].index, {size})));
  }
  inputs.push_back(
      View(batch.numeric, {size, static_cast<int64_t>(TaxiNumericFeatureNames().size())}));
  torch::Tensor x = torch::cat(inputs, 1);
  for (size_t layer = 0; layer < layers.size(); ++layer) {
    x = torch::addmm(layers[layer].second, x, layers[layer].first);
    if (layer < hidden_layers) x = torch::relu(x);
  }
  return wide_logit + x.view({size});
}

}  // namespace

StatusOr<WideDeepModel> WideDeepModel::Create(const WideDeepConfig& config) {
  if (config.embedding_width <= 0) {
    return Status::InvalidArgument("wide & deep: embedding width must be positive, got " +
                                   std::to_string(config.embedding_width));
  }
  if (config.hidden_units.empty()) {
    return Status::InvalidArgument("wide & deep: the DNN needs at least one hidden layer");
  }
  for (int64_t units : config.hidden_units) {
    if (units <= 0) {
      return Status::InvalidArgument("wide & deep: hidden units must be positive, got " +
                                     std::to_string(units));
    }
  }
  if (!(config.wide_learning_rate > 0) || !(config.deep_learning_rate > 0)) {
    return Status::InvalidArgument("wide & deep: learning rates must be positive");
  }
  return WideDeepModel(config);
}

std::vector<ps::DenseVariable> WideDeepModel::DenseVariables() const {
  const ps::OptimizerConfig adagrad{.kind = ps::OptimizerKind::kAdagrad,
                                    .learning_rate = config_.deep_learning_rate};
  const ps::OptimizerConfig ftrl{.kind = ps::OptimizerKind::kFtrl,
                                 .learning_rate = config_.wide_learning_rate};
  std::vector<ps::DenseVariable> variables;
  // One generator for all kernels, seeded by the model seed, so every worker draws the same.
  std::mt19937_64 random(config_.seed);
  int64_t width = DeepInputWidth(config_);
  const size_t hidden_layers = config_.hidden_units.size();
  for (size_t layer = 0; layer <= hidden_layers; ++layer) {
    const int64_t units = layer == hidden_layers ? 1 : config_.hidden_units[layer];
    // Glorot uniform, Keras' default kernel initializer.
    const double limit = std::sqrt(6.0 / static_cast<double>(width + units));
    std::uniform_real_distribution<double> uniform(-limit, limit);
    std::vector<float> kernel(static_cast<size_t>(width * units));
    for (float& value : kernel) value = static_cast<float>(uniform(random));
    const std::string name = LayerName(layer, hidden_layers);
    variables.push_back({{name + "/kernel", width, units}, adagrad, std::move(kernel)});
    variables.push_back(
        {{name + "/bias", units, 1}, adagrad, std::vector<float>(static_cast<size_t>(units))});
    width = units;
  }
  variables.push_back({{kWideBiasVariable, 1, 1}, ftrl, {0.0f}});
  return variables;
}

train::ModelDescription WideDeepModel::Describe() const {
  return {.name = kWideDeepModelName,
          .classes = {"small_tip", "big_tip"},
          .optimizer = "ftrl+adagrad",
          .learning_rate = config_.deep_learning_rate,
          .seed = config_.seed};
}

std::vector<ps::EmbeddingTableSpec> WideDeepModel::Tables() const {
  std::vector<ps::EmbeddingTableSpec> tables;
  // The linear part starts at zero, as the estimator's does.
  tables.push_back(
      {kWideWeightsTable,
       1,
       config_.seed,
       0.0f,
       {.kind = ps::OptimizerKind::kFtrl, .learning_rate = config_.wide_learning_rate}});
  uint64_t table_seed = config_.seed;
  for (const FeatureColumn& column : TaxiEmbeddingColumns()) {
    tables.push_back(
        {EmbeddingTableName(column.name),
         config_.embedding_width,
         ++table_seed,
         0.05f,
         {.kind = ps::OptimizerKind::kAdagrad, .learning_rate = config_.deep_learning_rate}});
  }
  return tables;
}

BatchLookups WideDeepModel::Lookups(const TaxiFeatureBatch& batch) const {
  BatchLookups lookups;
  const std::vector<ps::EmbeddingTableSpec> tables = Tables();
  lookups.tables.resize(tables.size());
  for (size_t table = 0; table < tables.size(); ++table) {
    lookups.tables[table].table = tables[table].name;
    lookups.tables[table].row_width = tables[table].row_width;
  }
  train::DeduplicateIds(batch.wide_ids, &lookups.tables[0]);
  const size_t columns = TaxiEmbeddingColumns().size();
  std::vector<int64_t> column_ids(static_cast<size_t>(batch.size));
  for (size_t column = 0; column < columns; ++column) {
    for (int64_t row = 0; row < batch.size; ++row) {
      column_ids[row] = batch.embedding_ids[row * columns + column];
    }
    train::DeduplicateIds(column_ids, &lookups.tables[column + 1]);
  }
  return lookups;
}

BatchLookups WideDeepModel::Lookups(const train::EncodedBatch& batch) const {
  return Lookups(FeaturesOf(batch));
}

StatusOr<double> WideDeepModel::ComputeGradients(
    const TaxiFeatureBatch& batch, const std::vector<std::vector<float>>& dense,
    BatchLookups& lookups, std::vector<std::vector<float>>* dense_gradients) const {
  try {
    Leaves leaves;
    torch::Tensor logits = Logits(config_, batch, dense, lookups, true, &leaves);
    torch::Tensor loss =
        torch::binary_cross_entropy_with_logits(logits, View(batch.labels, {batch.size}));
    loss.backward();
    dense_gradients->resize(leaves.dense.size());
    for (size_t i = 0; i < leaves.dense.size(); ++i) {
      torch::Tensor gradient = leaves.dense[i].grad().contiguous();
      (*dense_gradients)[i].assign(gradient.data_ptr<float>(),
                                   gradient.data_ptr<float>() + gradient.numel());
    }
    for (size_t table = 0; table < lookups.tables.size(); ++table) {
      torch::Tensor gradient = leaves.rows[table].grad().contiguous();
      lookups.tables[table].gradient.assign(gradient.data_ptr<float>(),
                                            gradient.data_ptr<float>() + gradient.numel());
    }
    return loss.item<double>();
  } catch (const c10::Error& error) {
    return Status::Internal("wide & deep gradient computation failed: " +
                            std::string(error.what_without_backtrace()));
  }
}

StatusOr<std::vector<double>> WideDeepModel::Predict(const TaxiFeatureBatch& batch,
                                                     const std::vector<std::vector<float>>& dense,
                                                     const BatchLookups& lookups) const {
  try {
    torch::NoGradGuard no_gradients;
    Leaves leaves;
    torch::Tensor probabilities =
        torch::sigmoid(Logits(config_, batch, dense, lookups, false, &leaves))
            .to(torch::kFloat64)
            .contiguous();
    const double* values = probabilities.data_ptr<double>();
    return std::vector<double>(values, values + batch.size);
  } catch (const c10::Error& error) {
    return Status::Internal("wide & deep prediction failed: " +
                            std::string(error.what_without_backtrace()));
  }
}

StatusOr<train::GradientStepResult> WideDeepModel::ComputeGradients(
    const train::EncodedBatch& batch, const std::vector<std::vector<float>>& dense,
    BatchLookups& lookups, std::vector<std::vector<float>>* dense_gradients) const {
  auto loss = ComputeGradients(FeaturesOf(batch), dense, lookups, dense_gradients);
  if (!loss.ok()) return loss.status();
  return train::GradientStepResult{.loss = *loss, .metrics = {}};
}

StatusOr<train::BatchEvaluation> WideDeepModel::Evaluate(
    const train::EncodedBatch& batch, const std::vector<std::vector<float>>& dense,
    const BatchLookups& lookups) const {
  const TaxiFeatureBatch& features = FeaturesOf(batch);
  auto probabilities = Predict(features, dense, lookups);
  if (!probabilities.ok()) return probabilities.status();
  train::BatchEvaluation evaluation;
  for (int64_t row = 0; row < features.size; ++row) {
    // Clamped as Keras' binary cross-entropy clamps, so one confident miss cannot be infinite.
    const double p = std::clamp((*probabilities)[row], 1e-7, 1.0 - 1e-7);
    const bool positive = features.labels[row] > 0.5f;
    evaluation.loss_sum -= positive ? std::log(p) : std::log(1.0 - p);
    evaluation.scores.push_back((*probabilities)[row]);
    evaluation.labels.push_back(positive ? 1 : 0);
  }
  return evaluation;
}

}  // namespace cohort::taxi
