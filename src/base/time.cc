#include "base/time.h"

#include <cstdio>
#include <ctime>

namespace cohort {
namespace {
constexpr int kFirstRepresentableYear = 1678;
constexpr int kLastRepresentableYear = 2261;
}  // namespace

std::string FormatTime(Time time) {
  std::time_t seconds = Clock::to_time_t(time);
  std::tm utc{};
  gmtime_r(&seconds, &utc);
  char buffer[32];
  std::strftime(buffer, sizeof buffer, "%Y-%m-%dT%H:%M:%SZ", &utc);
  return buffer;
}

std::optional<Time> ParseTime(const std::string& text) {
  std::tm utc{};
  int consumed = 0;
  if (std::sscanf(text.c_str(), "%4d-%2d-%2dT%2d:%2d:%2d%n", &utc.tm_year, &utc.tm_mon,
                  &utc.tm_mday, &utc.tm_hour, &utc.tm_min, &utc.tm_sec, &consumed) != 6) {
    return std::nullopt;
  }
  size_t rest = static_cast<size_t>(consumed);
  if (rest < text.size() && text[rest] == '.') {
    ++rest;
    while (rest < text.size() && text[rest] >= '0' && text[rest] <= '9') ++rest;
  }
  if (rest + 1 != text.size() || text[rest] != 'Z') return std::nullopt;
  if (utc.tm_mon < 1 || utc.tm_mon > 12 || utc.tm_mday < 1 || utc.tm_mday > 31 ||
      utc.tm_hour > 23 || utc.tm_min > 59 || utc.tm_sec > 60) {
    return std::nullopt;
  }
  // The clock counts nanoseconds in 64 bits: it reaches from 1677 to 2262.
  if (utc.tm_year < kFirstRepresentableYear || utc.tm_year > kLastRepresentableYear) {
    return std::nullopt;
  }
  utc.tm_year -= 1900;
  utc.tm_mon -= 1;
  return Clock::from_time_t(timegm(&utc));
}

std::string FormatAge(std::chrono::seconds age) {
  long long s = age.count() < 0 ? 0 : age.count();
  if (s < 120) return std::to_string(s) + "s";
  long long m = s / 60;
  if (m < 10) return std::to_string(m) + "m" + (s % 60 ? std::to_string(s % 60) + "s" : "");
  if (m < 180) return std::to_string(m) + "m";
  long long h = m / 60;
  if (h < 48) return std::to_string(h) + "h";
  return std::to_string(h / 24) + "d";
}

}  // namespace cohort
