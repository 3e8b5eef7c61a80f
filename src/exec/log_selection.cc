#include "exec/log_selection.h"

#include <algorithm>
#include <optional>

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

namespace {

constexpr size_t kChunkBytes = size_t{1} << 16;
// Enough of a line's start to read a restart line whole (they are about 90 bytes).
constexpr size_t kLineHeadBytes = 256;

// Visits the lines of [0, end) of `file` from the last to the first: `visit(start, head)` gets
// where each line starts and its first bytes (at most kLineHeadBytes, without the newline), and
// returns false to stop. Memory: one chunk.
Status ForEachLineBackwards(const FileReader& file, uint64_t end,
                            const std::function<bool(uint64_t, std::string_view)>& visit) {
  if (end == 0) return Status::OK();
  // A final newline ends the last line; it does not begin another.
  uint64_t position = end;
  std::string chunk;
  uint64_t chunk_begin = end;
  auto head_at = [&](uint64_t start) -> StatusOr<std::string> {
    std::string head;
    if (start >= chunk_begin && start - chunk_begin + kLineHeadBytes <= chunk.size()) {
      head = chunk.substr(static_cast<size_t>(start - chunk_begin), kLineHeadBytes);
    } else {
      StatusOr<std::string> read = file.ReadAt(start, kLineHeadBytes);
      if (!read.ok()) return read.status();
      head = std::move(*read);
    }
    if (start + head.size() > end) head.resize(static_cast<size_t>(end - start));
    head.resize(std::min(head.size(), head.find('\n')));
    return head;
  };
  while (position > 0) {
    chunk_begin = position - std::min<uint64_t>(kChunkBytes, position);
    StatusOr<std::string> read =
        file.ReadAt(chunk_begin, static_cast<size_t>(position - chunk_begin));
    if (!read.ok()) return read.status();
    chunk = std::move(*read);
    for (size_t i = chunk.size(); i > 0; --i) {
      if (chunk[i - 1] != '\n') continue;
      const uint64_t start = chunk_begin + i;  // the line after this newline
      if (start >= end) continue;
      StatusOr<std::string> head = head_at(start);
      if (!head.ok()) return head.status();
      if (!visit(start, *head)) return Status::OK();
    }
    position = chunk_begin;
  }
  StatusOr<std::string> head = head_at(0);
  if (!head.ok()) return head.status();
  visit(0, *head);
  return Status::OK();
}

}  // namespace

StatusOr<LogSpan> SelectLogSpan(const FileReader& file, const std::string& replica,
                                const LogSelection& selection, Time last_written, Time now) {
  const uint64_t size = file.Size();
  LogSpan span{0, size};
  if (selection.Everything()) return span;
  size_t lines_kept = 0;
  auto tail_full = [&] { return selection.tail && lines_kept >= *selection.tail; };
  if (selection.previous) {
    // The last restart line ends the previous run; the one before it (or the file's start)
    // begins it, and is left out.
    std::optional<uint64_t> last_restart;
    uint64_t following_start = size;  // the start of the line visited before this one
    bool done = false;
    COHORT_RETURN_IF_ERROR(
        ForEachLineBackwards(file, size, [&](uint64_t start, std::string_view head) {
          const bool restart = RestartLineTime(std::string(head)).has_value();
          if (!last_restart) {
            // A restart line that is the file's first line begins no second run.
            if (restart && start > 0) {
              last_restart = start;
              span.end = start;
            }
            following_start = start;
            return true;
          }
          if (restart) {  // the previous run's own restart line: left out
            span.begin = following_start;
            done = true;
            return false;
          }
          if (tail_full()) {
            span.begin = following_start;
            done = true;
            return false;
          }
          ++lines_kept;
          following_start = start;
          return true;
        }));
    if (!last_restart) {
      return Status::FailedPrecondition("previous terminated container of " + replica +
                                        " not found: it has not been restarted");
    }
    if (!done) span.begin = following_start;
    return span;
  }
  if (selection.tail && *selection.tail == 0) return LogSpan{size, size};
  // Going back from the end: the run being read ended at `ended` (the log's last write for the
  // last run, the next restart line's time for the others); --since drops a run that ended
  // before its window, --latest stops at the last run's restart line, --tail after N lines.
  Time ended = last_written;
  if (selection.since && ended < now - *selection.since) return LogSpan{size, size};
  uint64_t following_start = size;
  bool stopped = false;
  COHORT_RETURN_IF_ERROR(
      ForEachLineBackwards(file, size, [&](uint64_t start, std::string_view head) {
        if (tail_full()) {
          stopped = true;
          return false;
        }
        ++lines_kept;
        following_start = start;
        std::optional<Time> restart = RestartLineTime(std::string(head));
        if (!restart) return true;
        // This line begins a run: the one before it ended when this one started.
        if (selection.latest) {
          stopped = true;
          return false;
        }
        ended = *restart;
        if (selection.since && ended < now - *selection.since) {
          stopped = true;
          return false;
        }
        return true;
      }));
  span.begin = stopped ? following_start : 0;
  return span;
}

StatusOr<uint64_t> StreamLogLines(const FileReader& file, LogSpan span, bool flush_partial,
                                  const std::function<void(std::string_view line)>& on_line) {
  uint64_t at = span.begin;         // the next byte to read
  uint64_t delivered = span.begin;  // where the lines passed so far end
  std::string pending;              // the start of a line whose newline has not come yet
  while (at < span.end) {
    StatusOr<std::string> chunk =
        file.ReadAt(at, static_cast<size_t>(std::min<uint64_t>(kChunkBytes, span.end - at)));
    if (!chunk.ok()) return chunk.status();
    if (chunk->empty()) break;  // truncated meanwhile
    at += chunk->size();
    size_t begin = 0;
    size_t newline;
    while ((newline = chunk->find('\n', begin)) != std::string::npos) {
      if (pending.empty()) {
        on_line(std::string_view(*chunk).substr(begin, newline - begin));
      } else {
        pending.append(*chunk, begin, newline - begin);
        on_line(pending);
        pending.clear();
      }
      begin = newline + 1;
      delivered = at - chunk->size() + begin;
    }
    pending.append(*chunk, begin, std::string::npos);
    // A line longer than the bound goes out in pieces.
    while (pending.size() > kMaxLogLineBytes) {
      on_line(std::string_view(pending).substr(0, kMaxLogLineBytes));
      pending.erase(0, kMaxLogLineBytes);
      delivered += kMaxLogLineBytes;
    }
  }
  if (flush_partial && !pending.empty()) {
    on_line(pending);
    delivered += pending.size();
  }
  return delivered;
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
