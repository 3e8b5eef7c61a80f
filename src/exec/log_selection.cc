#include "exec/log_selection.h"

namespace cohort::exec {
namespace {

constexpr char kRestartPrefix[] = "===== cohort: restart ";

// One replica's lines, split into runs at its restart lines (each run after the first starts
// with its restart line).
struct Run {
  std::vector<const LogLine*> lines;
  std::optional<Time> started_at;
};

}  // namespace

std::optional<Time> RestartLineTime(const std::string& line) {
  if (line.rfind(kRestartPrefix, 0) != 0) return std::nullopt;
  size_t at = line.find(" at ");
  size_t end = line.find(" (previous exit code");
  if (at == std::string::npos || end == std::string::npos || end < at) return std::nullopt;
  return ParseTime(line.substr(at + 4, end - at - 4));
}

StatusOr<std::vector<LogLine>> SelectLogLines(const std::vector<LogLine>& lines,
                                              const LogSelection& selection,
                                              const std::map<std::string, Time>& last_written,
                                              Time now) {
  std::vector<std::string> order;
  std::map<std::string, std::vector<Run>> runs;
  for (const LogLine& line : lines) {
    auto [it, inserted] = runs.try_emplace(line.replica);
    if (inserted) order.push_back(line.replica);
    std::optional<Time> restart = RestartLineTime(line.text);
    if (it->second.empty() || restart) it->second.push_back(Run{{}, restart});
    it->second.back().lines.push_back(&line);
  }
  std::vector<LogLine> selected;
  for (const std::string& replica : order) {
    std::vector<Run>& replica_runs = runs[replica];
    std::vector<const LogLine*> kept;
    if (selection.previous) {
      if (replica_runs.size() < 2) {
        return Status::FailedPrecondition("previous terminated container of " + replica +
                                          " not found: it has not been restarted");
      }
      for (const LogLine* line : replica_runs[replica_runs.size() - 2].lines) {
        if (!RestartLineTime(line->text)) kept.push_back(line);
      }
    } else {
      auto written = last_written.find(replica);
      Time last = written == last_written.end() ? now : written->second;
      size_t first = selection.latest ? replica_runs.size() - 1 : 0;
      for (size_t i = first; i < replica_runs.size(); ++i) {
        Time ended = i + 1 < replica_runs.size() && replica_runs[i + 1].started_at
                         ? *replica_runs[i + 1].started_at
                         : last;
        if (selection.since && ended < now - *selection.since) continue;
        kept.insert(kept.end(), replica_runs[i].lines.begin(), replica_runs[i].lines.end());
      }
    }
    if (selection.tail && kept.size() > *selection.tail) {
      kept.erase(kept.begin(), kept.end() - static_cast<long>(*selection.tail));
    }
    for (const LogLine* line : kept) selected.push_back(*line);
  }
  return selected;
}

StatusOr<std::chrono::seconds> ParseDuration(const std::string& text) {
  std::chrono::seconds total{0};
  size_t i = 0;
  bool any = false;
  while (i < text.size()) {
    size_t start = i;
    while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) ++i;
    if (start == i || i == text.size()) {
      any = false;
      break;
    }
    long value = std::stol(text.substr(start, i - start));
    char unit = text[i++];
    if (unit == 's') {
      total += std::chrono::seconds(value);
    } else if (unit == 'm') {
      total += std::chrono::minutes(value);
    } else if (unit == 'h') {
      total += std::chrono::hours(value);
    } else {
      return Status::InvalidArgument("invalid duration \"" + text +
                                     "\": use a number with s, m or h, e.g. 30s, 5m, 1h30m");
    }
    any = true;
  }
  if (!any || i != text.size()) {
    return Status::InvalidArgument("invalid duration \"" + text +
                                   "\": use a number with s, m or h, e.g. 30s, 5m, 1h30m");
  }
  return total;
}

}  // namespace cohort::exec
