// EvaluateModel: a parameter-server model's figures over a whole split, with its values from the
// servers or a checkpoint (parameter_sources.h). The chief evaluates the final model with it, the
// evaluator side-car every checkpoint, and a program's --evaluate a saved model.
//
// The figures, in this order: "auc" when the model is a binary classifier (BatchEvaluation's
// scores; binary_auc.h), "loss" (the mean over the examples), then the means of the model's own
// metric sums.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "base/status.h"
#include "train/parameter_server/parameter_server_model.h"
#include "train/parameter_server/parameter_sources.h"

namespace cohort::train {

struct Evaluation {
  int64_t examples = 0;
  std::vector<std::pair<std::string, double>> metrics;

  // The named figure; NotFound when the evaluation has none of that name.
  StatusOr<double> Metric(const std::string& name) const;
  // "auc 0.9012 loss 0.3120": every figure with four decimals, as the logs print them.
  std::string ToString() const;
};

// The model over every example of `examples`, in batches of `batch_size`.
StatusOr<Evaluation> EvaluateModel(const ParameterServerModel& model, ParameterSource& source,
                                   const ExampleSource& examples, int64_t batch_size);

}  // namespace cohort::train
