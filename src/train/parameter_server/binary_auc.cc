#include "train/parameter_server/binary_auc.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>
#include <vector>

namespace cohort::train {

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
  std::vector<size_t> order(scores.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return scores[a] < scores[b]; });

  // Walk groups of equal scores from the lowest up. Each positive in a group beats every negative
  // below the group and ties with the group's own negatives.
  double wins = 0;  // doubled, so that half a win for a tie stays an integer until the end
  double positives = 0, negatives_below = 0;
  for (size_t begin = 0; begin < order.size();) {
    size_t end = begin;
    double group_positives = 0, group_negatives = 0;
    while (end < order.size() && scores[order[end]] == scores[order[begin]]) {
      (labels[order[end]] != 0 ? group_positives : group_negatives) += 1;
      ++end;
    }
    wins += group_positives * (2 * negatives_below + group_negatives);
    positives += group_positives;
    negatives_below += group_negatives;
    begin = end;
  }
  const double negatives = negatives_below;
  if (positives == 0 || negatives == 0) {
    return Status::InvalidArgument("AUC: undefined with " + std::to_string(int64_t(positives)) +
                                   " positive and " + std::to_string(int64_t(negatives)) +
                                   " negative examples");
  }
  return wins / (2 * positives * negatives);
}

}  // namespace cohort::train
