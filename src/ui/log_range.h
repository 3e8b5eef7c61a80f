// Which bytes of a replica's log the dashboard serves, found without reading the log whole.
//
// A replica's log file holds every run of it, each run after the first beginning with the
// supervisor's restart line ("===== cohort: restart N of worker-1 at ..."; exec/log_selection.h).
// RunIndex finds where those lines are by scanning the file once in bounded chunks, and then only
// what was appended since; SelectLogRange turns a query (kubectl's previous, tailLines, limitBytes,
// and Cohort's allRuns) into a byte range that the server streams in chunks:
//
//   StatusOr<FileReader> log = FileReader::Open(path);
//   RunIndex runs;
//   runs.Update(*log);
//   StatusOr<LogRange> range = SelectLogRange(*log, runs, LogQuery{.tail_lines = 100});
//   ForEachChunk(*log, *range, [&](std::string_view chunk) { return Send(chunk); });
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string_view>
#include <vector>

#include "base/file.h"
#include "base/status.h"

namespace cohort::ui {

// The size of the pieces a log is read and sent in.
inline constexpr size_t kLogChunkBytes = size_t{1} << 16;

struct LogQuery {
  bool previous = false;  // the run before the last restart, without its restart line
  bool all_runs = false;  // every run, restart lines included (default: the last run, as kubectl)
  std::optional<uint64_t> tail_lines;   // then only the last N lines of that
  std::optional<uint64_t> limit_bytes;  // then at most N bytes from its start
};

struct LogRange {
  uint64_t begin = 0;
  uint64_t end = 0;
};

// Where the restart lines of a log begin, kept up to date by scanning only what was appended.
class RunIndex {
 public:
  // Scans the file from where the last scan stopped (the end of its last complete line). A file
  // shorter than that was replaced: it is scanned again from the start.
  Status Update(const FileReader& file);

  // Byte offsets of the restart lines, in order.
  const std::vector<uint64_t>& restart_offsets() const { return restart_offsets_; }
  uint64_t scanned() const { return scanned_; }

 private:
  uint64_t scanned_ = 0;
  std::vector<uint64_t> restart_offsets_;
};

// The bytes of `file` that `query` asks for. FailedPrecondition for `previous` when the replica
// has not been restarted, as kubectl says when there is no previous container.
StatusOr<LogRange> SelectLogRange(const FileReader& file, const RunIndex& runs,
                                  const LogQuery& query);

// Reads `range` of `file` in chunks of at most kLogChunkBytes and passes each to `sink`, until
// the range is done or `sink` returns false (the client went away).
Status ForEachChunk(const FileReader& file, LogRange range,
                    const std::function<bool(std::string_view)>& sink);

// Where the last `lines` lines of [begin, end) start, reading backwards in chunks. A last line
// without a newline counts as a line.
StatusOr<uint64_t> StartOfLastLines(const FileReader& file, uint64_t begin, uint64_t end,
                                    uint64_t lines);

}  // namespace cohort::ui
