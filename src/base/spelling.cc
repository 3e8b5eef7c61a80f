#include "base/spelling.h"

#include <algorithm>
#include <utility>

namespace cohort {

size_t EditDistance(const std::string& a, const std::string& b) {
  std::vector<size_t> previous(b.size() + 1), current(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) previous[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    current[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t substitution = previous[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1);
      current[j] = std::min({previous[j] + 1, current[j - 1] + 1, substitution});
    }
    std::swap(previous, current);
  }
  return previous[b.size()];
}

std::string ClosestWord(const std::string& word, const std::vector<std::string>& candidates) {
  std::string closest;
  size_t best = std::max<size_t>(2, word.size() / 3) + 1;
  for (const std::string& candidate : candidates) {
    size_t distance = EditDistance(word, candidate);
    if (word.size() >= 2 && candidate.rfind(word, 0) == 0) distance = std::min<size_t>(distance, 1);
    if (distance < best) {
      best = distance;
      closest = candidate;
    }
  }
  return closest;
}

}  // namespace cohort
