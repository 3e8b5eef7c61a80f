#include "binary_auc.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>
#include <vector>

namespace cohort::taxi {

StatusOr<double> AreaUnderRocCurve(std::span<const double> scores,
                                   std::span<const uint8_t> labels) {
  if (scores.size() != labels.size()) {
    return Status::InvalidArgument("AUC: " + std::to_string(scores.size()) + " scores but " +
                                   std::to_string(labels.size()) + " labels");
  }
  for (size_t i = 0; i < scores.size(); ++i) {
    if (std::isnan(scores[i])) {
      return Status::InvalidArgument("AUC: score " + std::to_string(i) + " is NaN");
    }
  }
  const size_t n = scores.size();
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), size_t{0});
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return scores[a] < scores[b]; });
  // Mann-Whitney: the sum of the positives' ranks, tied scores sharing their mean rank.
  double positive_rank_sum = 0;
  size_t positives = 0;
  for (size_t i = 0; i < n;) {
    size_t j = i;
    while (j < n && scores[order[j]] == scores[order[i]]) ++j;
    const double mean_rank = (static_cast<double>(i + 1) + static_cast<double>(j)) / 2;
    for (size_t k = i; k < j; ++k) {
      if (labels[order[k]] != 0) {
        positive_rank_sum += mean_rank;
        ++positives;
      }
    }
    i = j;
  }
  const size_t negatives = n - positives;
  if (positives == 0 || negatives == 0) {
    return Status::InvalidArgument("AUC: " + std::to_string(positives) + " positive and " +
                                   std::to_string(negatives) +
                                   " negative examples; both classes are needed");
  }
  const double p = static_cast<double>(positives);
  return (positive_rank_sum - p * (p + 1) / 2) / (p * static_cast<double>(negatives));
}

}  // namespace cohort::taxi
