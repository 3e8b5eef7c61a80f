// Tables as kubectl and gcloud print them: each column padded to its widest cell, then three
// spaces (kubectl) or two (gcloud) before the next. Shared by every printed view.
#pragma once

#include <string>
#include <vector>

#include "base/time.h"

namespace cohort::view {

using Row = std::vector<std::string>;

// The rows as lines, each prefixed by `indent`, columns `gap` spaces apart at the least.
std::string FormatTable(const std::vector<Row>& rows, const std::string& indent = "",
                        size_t gap = 3);

// kubectl's AGE column: "45s", "3m12s", "2d"... from `since` to `now`.
std::string Age(Time since, Time now);

}  // namespace cohort::view
