#include "view/table.h"

#include <algorithm>
#include <chrono>
#include <sstream>

namespace cohort::view {

std::string FormatTable(const std::vector<Row>& rows, const std::string& indent, size_t gap) {
  std::vector<size_t> widths;
  for (const Row& row : rows) {
    widths.resize(std::max(widths.size(), row.size()));
    for (size_t i = 0; i < row.size(); ++i) widths[i] = std::max(widths[i], row[i].size());
  }
  std::ostringstream out;
  for (const Row& row : rows) {
    std::string line = indent;
    for (size_t i = 0; i < row.size(); ++i) {
      line += row[i];
      if (i + 1 < row.size()) line += std::string(widths[i] - row[i].size() + gap, ' ');
    }
    out << line << "\n";
  }
  return out.str();
}

std::string Age(Time since, Time now) {
  return FormatAge(std::chrono::duration_cast<std::chrono::seconds>(now - since));
}

}  // namespace cohort::view
