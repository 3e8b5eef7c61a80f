// Evaluation: the loss and metrics of a model over part of a data set.
//
// Sums rather than averages come back, so that the parts several workers evaluated can be added
// up (Strategy::SumAcrossWorkers) before dividing.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "base/status.h"
#include "train/callback.h"
#include "train/data/batch_source.h"
#include "train/trainable_model.h"

namespace cohort::train {

struct EvaluationSums {
  double loss_sum = 0;  // each batch's mean loss times its samples
  std::map<std::string, double> metric_sums;
  double samples = 0;

  // Every figure in a fixed order (loss, samples, then the metrics by name), for summing across
  // workers; FromVector reads such a list back into sums with the same metric names. The lists
  // line up because every worker's model reports the same names and every worker evaluates at
  // least one sample (Trainer::Create checks the test source has a sample per worker).
  std::vector<double> ToVector() const;
  void FromVector(const std::vector<double>& values);

  EvaluationResult Averages() const;
};

// Evaluates samples [begin, end) of `source` in batches of `batch`, without gradients and with
// the model in eval mode (restored to its previous mode afterwards). Returns the source's error
// if a batch cannot be gathered. May throw c10::Error; callers inside src/train catch it.
StatusOr<EvaluationSums> EvaluateRange(TrainableModel& model, const BatchSource& source,
                                       int64_t begin, int64_t end, int64_t batch);

}  // namespace cohort::train
