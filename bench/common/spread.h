// Spread: the minimum, median and maximum of a benchmark's repeated measurements, which every
// benchmark reports instead of one number (a shared machine's load swings single measurements).
#pragma once

#include <algorithm>
#include <vector>

namespace cohort::bench {

struct Spread {
  double min = 0;
  double median = 0;
  double max = 0;
  int count = 0;
};

// The spread of `samples`; all zero when there are none. An even count takes the mean of the two
// middle samples as the median.
inline Spread SpreadOf(std::vector<double> samples) {
  Spread spread;
  if (samples.empty()) return spread;
  std::sort(samples.begin(), samples.end());
  const size_t n = samples.size();
  spread.min = samples.front();
  spread.max = samples.back();
  spread.median = n % 2 == 1 ? samples[n / 2] : (samples[n / 2 - 1] + samples[n / 2]) / 2;
  spread.count = static_cast<int>(n);
  return spread;
}

}  // namespace cohort::bench
