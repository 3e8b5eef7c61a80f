// WideDeepModel: the wide & deep taxi tip classifier of DNNLinearCombinedClassifier, trained on
// parameter servers: a ParameterServerModel (train/parameter_server/parameter_server_model.h) over
// the trips of taxi_examples.h. taxi-train trains the same model on the public API
// (examples/taxi/wide_deep_net.h); this one, on the internal trainer, serves that trainer's tests.
//
// The model is a list of variables that live on the parameter servers (src/ps) and a libtorch
// computation over the few values one batch needs:
//
//   wide:  logit_wide = wide_bias + sum over the batch row's wide ids of wide_weights[id]
//          wide_weights is a sparse table of rows of width 1 (one weight per hashed or crossed
//          bucket, taxi_features.h) trained with FTRL, as the linear part of the estimator is.
//   deep:  x = [embedding/<column>[id] for each categorical column] ++ numeric features
//          -> 100 -> 70 -> 50 -> 25 (ReLU) -> 1 = logit_deep
//          one embedding table per column (sparse, Adagrad), dense kernels and biases (Adagrad).
//   logit = logit_wide + logit_deep; loss = sigmoid cross-entropy, averaged over the batch.
//
// A step never touches whole tables: BatchLookups lists, per table, the distinct ids the batch
// uses and where each batch row finds its row among them, so a worker pulls only those rows and
// pushes one gradient per pulled row (summed over the batch rows that share it, as Keras sums the
// IndexedSlices of a repeated id).
//
// The dense variables are created with seeded Glorot-uniform kernels and zero biases; every worker
// computes the same initial values, so whichever create reaches a server first, the model starts
// the same. Evaluation reports the AUC of the big-tip probability and the sigmoid cross-entropy,
// with probabilities clamped to [1e-7, 1 - 1e-7] as Keras' binary cross-entropy clamps them.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "base/status.h"
#include "ps/embedding_table.h"
#include "taxi/taxi_features.h"
#include "train/parameter_server/parameter_server_model.h"

namespace cohort::taxi {

using train::BatchLookups;
using train::TableLookup;

inline constexpr char kWideDeepModelName[] = "wide_deep";
inline constexpr char kWideWeightsTable[] = "linear/wide_weights";
inline constexpr char kWideBiasVariable[] = "linear/bias";

struct WideDeepConfig {
  int64_t embedding_width = 8;
  std::vector<int64_t> hidden_units = {100, 70, 50, 25};
  // DNNLinearCombinedClassifier's defaults: FTRL at min(0.2, 1/sqrt(columns)) for the linear part
  // and Adagrad at 0.05 for the DNN.
  float wide_learning_rate = 0.2f;
  float deep_learning_rate = 0.05f;
  uint64_t seed = 42;
};

// A batch's lookups list the wide table first (its `index` per batch row and wide column), then
// the embedding tables in TaxiEmbeddingColumns() order (per batch row).
class WideDeepModel : public train::ParameterServerModel {
 public:
  // InvalidArgument for a non-positive width, hidden size or learning rate.
  static StatusOr<WideDeepModel> Create(const WideDeepConfig& config);

  const WideDeepConfig& config() const { return config_; }

  // wide_deep, classes small_tip and big_tip, "ftrl+adagrad" at the DNN's learning rate.
  train::ModelDescription Describe() const override;
  // The dense variables with their initial values: the DNN's kernels and biases, the wide bias.
  std::vector<ps::DenseVariable> DenseVariables() const override;
  // The sparse tables: the wide weights, then one embedding table per categorical column.
  std::vector<ps::EmbeddingTableSpec> Tables() const override;

  // The distinct ids of each table that `batch` uses (rows and gradients left empty).
  BatchLookups Lookups(const TaxiFeatureBatch& batch) const;
  // The same for a TaxiBatch (taxi_examples.h).
  BatchLookups Lookups(const train::EncodedBatch& batch) const override;

  // Forward and backward over `batch`: fills each lookup's `gradient` and `dense_gradients`
  // (one buffer per dense variable, in DenseVariables() order) and returns the mean loss. `dense`
  // holds the dense values in the same order. libtorch errors become Internal.
  StatusOr<double> ComputeGradients(const TaxiFeatureBatch& batch,
                                    const std::vector<std::vector<float>>& dense,
                                    BatchLookups& lookups,
                                    std::vector<std::vector<float>>* dense_gradients) const;
  // The same for a TaxiBatch: the loss and no other metric.
  StatusOr<train::GradientStepResult> ComputeGradients(
      const train::EncodedBatch& batch, const std::vector<std::vector<float>>& dense,
      BatchLookups& lookups, std::vector<std::vector<float>>* dense_gradients) const override;

  // The probability of a big tip for each row of `batch`, without gradients.
  StatusOr<std::vector<double>> Predict(const TaxiFeatureBatch& batch,
                                        const std::vector<std::vector<float>>& dense,
                                        const BatchLookups& lookups) const;
  // Predict over a TaxiBatch: the probabilities as scores, the labels, the clamped loss.
  StatusOr<train::BatchEvaluation> Evaluate(const train::EncodedBatch& batch,
                                            const std::vector<std::vector<float>>& dense,
                                            const BatchLookups& lookups) const override;

 private:
  explicit WideDeepModel(const WideDeepConfig& config) : config_(config) {}

  WideDeepConfig config_;
};

}  // namespace cohort::taxi
