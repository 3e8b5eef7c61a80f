// ParameterServerModel: what the parameter-server trainer (parameter_server_trainer.h), the
// evaluator side-car (checkpoint_evaluator.h) and a saved model's evaluation (model_evaluation.h)
// need to know about a model, and nothing more. The taxi example's wide & deep model
// (tests/taxi/wide_deep_model.h) is one implementation; a user's model is another.
//
// A model is a list of variables that live on the parameter servers (src/ps) and a computation
// over the few values one batch needs:
//
//   DenseVariables()  whole variables (kernels, biases) with their initial values and optimizers;
//                     every step pulls all of them;
//   Tables()          sparse tables (embeddings, linear weights of hashed features): a step pulls
//                     only the rows its batch uses, listed by Lookups();
//   ComputeGradients  forward and backward over one batch, given the pulled values: the loss,
//                     named metrics, a gradient per dense variable and one per pulled row (summed
//                     over the batch rows that share it, as Keras sums the IndexedSlices of a
//                     repeated id);
//   Evaluate          the forward pass alone, for evaluation: the loss summed over the batch and,
//                     for a binary classifier, each example's score and label (model_evaluation.h
//                     adds the AUC).
//
// The data come from two ExampleSources, the training and the evaluation split: the trainer picks
// which examples go into a batch (its task's shard, model_evaluation.h's ranges) and the source
// encodes them into the model's own EncodedBatch, which the trainer hands back to the model
// without looking inside.
//
// Every task computes the same initial values (seeded), so whichever create reaches a server
// first, the model starts the same. The trainer adds `global_step` (kGlobalStepVariable) after the
// model's dense variables.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "base/status.h"
#include "ps/embedding_table.h"
#include "ps/parameter_server_client.h"

namespace cohort::train {

// TensorFlow's global step: a variable on the servers to which every push adds one (SGD at
// learning rate 1 of a gradient of -1), so the tasks agree on progress without talking to each
// other.
inline constexpr char kGlobalStepVariable[] = "global_step";

// The rows of one table a batch needs.
struct TableLookup {
  std::string table;
  int64_t row_width = 1;
  std::vector<int64_t> ids;     // distinct ids, the rows to pull
  std::vector<int64_t> index;   // per use in the batch: into `ids` (the model decides the layout)
  std::vector<float> rows;      // ids.size() * row_width pulled values
  std::vector<float> gradient;  // like rows: what to push
};

// Every table's lookup for one batch, in the order the model chooses.
struct BatchLookups {
  std::vector<TableLookup> tables;
};

// Distinct values of `ids` in first-seen order into lookup->ids, and each value's position among
// them into lookup->index.
void DeduplicateIds(std::span<const int64_t> ids, TableLookup* lookup);

// One batch of examples as a model's ExampleSource encoded it. The trainer only passes it on; the
// model that made it casts it back to its own type.
class EncodedBatch {
 public:
  virtual ~EncodedBatch() = default;
  // The number of examples in it.
  virtual int64_t size() const = 0;
};

// The examples of one split, encoded a batch at a time.
class ExampleSource {
 public:
  virtual ~ExampleSource() = default;
  virtual int64_t size() const = 0;
  // An empty batch for Encode to fill; one per loop, reused between steps.
  virtual std::unique_ptr<EncodedBatch> NewBatch() const = 0;
  // Encodes the examples at `indices` (each below size()), in that order, into `batch`.
  virtual void Encode(std::span<const int64_t> indices, EncodedBatch* batch) const = 0;
};

// What one training step reports besides its gradients.
struct GradientStepResult {
  double loss = 0;  // mean over the batch
  // Named means over the batch (e.g. {"accuracy", 0.9}); logged and summarised after the loss.
  std::vector<std::pair<std::string, double>> metrics;
};

// What the forward pass over one evaluation batch gives.
struct BatchEvaluation {
  double loss_sum = 0;  // summed over the batch's examples
  // Named values summed over the batch's examples; the evaluation reports their means.
  std::vector<std::pair<std::string, double>> metric_sums;
  // A binary classifier's probability of the positive class for each example and its label (0 or
  // 1); the evaluation then reports "auc" over the whole split. Empty for other models.
  std::vector<double> scores;
  std::vector<uint8_t> labels;
};

// The facts a saved model's manifest records about the model (model_manifest.h).
struct ModelDescription {
  std::string name;
  std::vector<std::string> classes;
  std::string optimizer;
  double learning_rate = 0;
  uint64_t seed = 0;
};

class ParameterServerModel {
 public:
  virtual ~ParameterServerModel() = default;

  virtual ModelDescription Describe() const = 0;
  // The dense variables with their initial values (without global_step).
  virtual std::vector<ps::DenseVariable> DenseVariables() const = 0;
  virtual std::vector<ps::EmbeddingTableSpec> Tables() const = 0;

  // The distinct ids of each table that `batch` uses (rows and gradients left empty).
  virtual BatchLookups Lookups(const EncodedBatch& batch) const = 0;

  // Forward and backward over `batch`: fills each lookup's `gradient` and `dense_gradients` (one
  // buffer per dense variable, in DenseVariables() order). `dense` holds the dense values in the
  // same order, each lookup its pulled rows.
  virtual StatusOr<GradientStepResult> ComputeGradients(
      const EncodedBatch& batch, const std::vector<std::vector<float>>& dense,
      BatchLookups& lookups, std::vector<std::vector<float>>* dense_gradients) const = 0;

  // The forward pass alone over `batch`, with the same inputs.
  virtual StatusOr<BatchEvaluation> Evaluate(const EncodedBatch& batch,
                                             const std::vector<std::vector<float>>& dense,
                                             const BatchLookups& lookups) const = 0;
};

}  // namespace cohort::train
