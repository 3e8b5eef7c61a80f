// The exact area under the ROC curve of a binary classifier's scores, for the taxi example's
// data set (its ceiling AUC: the true tip probability's) and its model (wide_deep_net.h).
//
// AUC is the probability that a randomly chosen positive example scores above a randomly chosen
// negative one, a tie counting one half (the Mann-Whitney U statistic divided by
// positives x negatives), computed exactly by sorting. Ties matter here: a model that only sees
// the payment type gives every cash trip the same score.
//
//   StatusOr<double> auc = AreaUnderRocCurve(probabilities, labels);
#pragma once

#include <cstdint>
#include <span>

#include "status.h"

namespace cohort::taxi {

// `labels[i]` nonzero marks example i as positive. Fails when the spans differ in length, when a
// score is NaN, or when there is no positive or no negative example (AUC is undefined).
StatusOr<double> AreaUnderRocCurve(std::span<const double> scores, std::span<const uint8_t> labels);

}  // namespace cohort::taxi
