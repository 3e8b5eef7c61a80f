// Wall-clock time as Kubernetes shows it: RFC 3339 timestamps and kubectl-style ages.
#pragma once

#include <chrono>
#include <optional>
#include <string>

namespace cohort {

using Clock = std::chrono::system_clock;
using Time = Clock::time_point;

// "2021-09-06T11:49:30Z" (UTC, whole seconds, as Kubernetes writes metav1.Time).
std::string FormatTime(Time time);

// Parses what FormatTime writes (fractional seconds are accepted and dropped). nullopt if
// malformed or outside the years the clock can hold (1678 to 2261).
std::optional<Time> ParseTime(const std::string& text);

// kubectl's human duration: "45s", "5m", "5m9s" under 10 minutes, "3h", "2d"...
std::string FormatAge(std::chrono::seconds age);

}  // namespace cohort
