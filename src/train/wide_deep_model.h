// WideDeepModel: the wide & deep taxi tip classifier of DNNLinearCombinedClassifier, trained on
// parameter servers.
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
// the same. `global_step` is a variable too (TensorFlow's global step): every push adds one to it
// through SGD with learning rate 1, so workers and the chief agree on progress without talking to
// each other.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "base/status.h"
#include "ps/embedding_table.h"
#include "ps/parameter_server_client.h"
#include "train/taxi_features.h"
#include "train/taxi_trip.h"

namespace cohort::train {

inline constexpr char kWideDeepModelName[] = "wide_deep";
inline constexpr char kGlobalStepVariable[] = "global_step";
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

// The rows of one table a batch needs.
struct TableLookup {
  std::string table;
  int64_t row_width = 1;
  std::vector<int64_t> ids;     // distinct ids, the rows to pull
  std::vector<int64_t> index;   // per batch row (and per column for the wide table): into `ids`
  std::vector<float> rows;      // ids.size() * row_width pulled values
  std::vector<float> gradient;  // like rows: what to push
};

// Every table's lookup for one batch: the wide table first, then the embedding tables in
// TaxiEmbeddingColumns() order.
struct BatchLookups {
  std::vector<TableLookup> tables;
};

class WideDeepModel {
 public:
  // InvalidArgument for a non-positive width, hidden size or learning rate.
  static StatusOr<WideDeepModel> Create(const WideDeepConfig& config);

  const WideDeepConfig& config() const { return config_; }

  // The dense variables with their initial values, global_step last.
  std::vector<ps::DenseVariable> DenseVariables() const;
  // The sparse tables: the wide weights, then one embedding table per categorical column.
  std::vector<ps::EmbeddingTableSpec> Tables() const;

  // The distinct ids of each table that `batch` uses (rows and gradients left empty).
  BatchLookups Lookups(const TaxiFeatureBatch& batch) const;

  // Forward and backward over `batch`: fills each lookup's `gradient` and `dense_gradients`
  // (one buffer per dense variable but global_step, in DenseVariables() order) and returns the
  // mean loss. `dense` holds the dense values in the same order. libtorch errors become Internal.
  StatusOr<double> ComputeGradients(const TaxiFeatureBatch& batch,
                                    const std::vector<std::vector<float>>& dense,
                                    BatchLookups& lookups,
                                    std::vector<std::vector<float>>* dense_gradients) const;

  // The probability of a big tip for each row of `batch`, without gradients.
  StatusOr<std::vector<double>> Predict(const TaxiFeatureBatch& batch,
                                        const std::vector<std::vector<float>>& dense,
                                        const BatchLookups& lookups) const;

 private:
  explicit WideDeepModel(const WideDeepConfig& config) : config_(config) {}

  WideDeepConfig config_;
};

// Where a model's current values come from: the live parameter servers or a checkpoint.
class ParameterSource {
 public:
  virtual ~ParameterSource() = default;
  // Whole dense variables by name (rows * row_width floats each).
  virtual Status PullDense(const std::vector<std::pair<std::string, float*>>& outputs) = 0;
  // The rows of `ids` of `table`, count * row_width floats.
  virtual Status PullRows(const std::string& table, const int64_t* ids, size_t count,
                          float* out) = 0;
};

// Pulls every dense variable of `model` (global_step excluded) into `dense`, sized to fit.
Status PullDenseVariables(const WideDeepModel& model, ParameterSource& source,
                          std::vector<std::vector<float>>* dense);
// Pulls the rows each lookup names.
Status PullLookupRows(ParameterSource& source, BatchLookups& lookups);

struct BinaryEvaluation {
  double auc = 0;
  double loss = 0;
  int64_t examples = 0;
};

// The model's AUC and mean loss over `trips`, in batches of `batch_size`, with values from
// `source`.
StatusOr<BinaryEvaluation> EvaluateWideDeep(const WideDeepModel& model, ParameterSource& source,
                                            const TaxiFeatureEncoder& encoder,
                                            std::span<const TaxiTrip> trips, int64_t batch_size);

}  // namespace cohort::train
