// The exact area under the ROC curve of a binary classifier's scores.
//
// AUC is the probability that a randomly chosen positive example scores above a randomly chosen
// negative one, a tie counting one half (the Mann-Whitney U statistic divided by
// positives x negatives). It is computed exactly by sorting, not by bucketing scores into
// thresholds as tf.keras.metrics.AUC does (that one is an approximation that depends on its
// number of thresholds), so that "the model is within 0.02 of the best achievable AUC" compares
// two exact numbers. Ties matter here: a model that only sees the payment type gives every cash
// trip the same score, and counting those ties as wins or losses would misstate its AUC by a lot.
#pragma once

#include <cstdint>
#include <span>

#include "base/status.h"

namespace cohort::train {

// `labels[i]` nonzero marks example i as positive. Fails when the spans differ in length, when a
// score is NaN, or when there is no positive or no negative example (AUC is undefined).
StatusOr<double> AreaUnderRocCurve(std::span<const double> scores, std::span<const uint8_t> labels);

}  // namespace cohort::train
