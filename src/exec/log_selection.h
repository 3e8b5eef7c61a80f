// Choosing which lines of a replica's log `cohort logs` prints, as kubectl's flags do:
// --tail N (the last N lines of each replica), --since DURATION and --previous (the run before
// the last restart); `logs POD` shows the last run, as kubectl shows the current container.
//
// A replica's log file holds every run of it: the supervisor writes a line
// "===== cohort: restart N of worker-1 at TIME (previous exit code E) =====" before each restart
// (local_process_backend.h). The log lines themselves carry no time, so --since keeps whole runs:
// those still writing within the duration (a run ends when the next begins; the last one when
// its file was last written).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/file.h"
#include "base/status.h"
#include "base/time.h"

namespace cohort::exec {

struct LogSelection {
  std::optional<size_t> tail;                 // the last N lines of each replica
  std::optional<std::chrono::seconds> since;  // runs that wrote within this duration
  bool previous = false;                      // the run before the last restart only
  bool latest = false;                        // the last run only (kubectl's current container)
  bool Everything() const { return !tail && !since && !previous && !latest; }
};

struct LogLine {
  std::string replica;  // "worker-1"
  std::string text;
};

// The start time of the run that a restart line begins, or nullopt for any other line.
std::optional<Time> RestartLineTime(const std::string& line);

// The lines of `lines` (of any number of replicas, in the order written) that `selection` keeps,
// grouped by replica in the order the replicas first appear.
// `last_written` is when each replica's log was last written (missing: `now`). With `previous`,
// FailedPrecondition for a replica that has not been restarted, as kubectl says when there is no
// previous container.
StatusOr<std::vector<LogLine>> SelectLogLines(const std::vector<LogLine>& lines,
                                              const LogSelection& selection,
                                              const std::map<std::string, Time>& last_written,
                                              Time now);

// The same selection on one replica's log file, found without reading the file whole: the bytes
// [begin, end) that SelectLogLines would keep of it (restart lines and --tail counted as there),
// found by reading backwards from the end in 64 KiB pieces, so that `--tail 10` of a 1 GiB log
// reads a few kilobytes. `end` is the file's size when it was opened. `skip_first_line` is set
// when the span begins with the restart line that --previous leaves out.
struct LogSpan {
  uint64_t begin = 0;
  uint64_t end = 0;
};
StatusOr<LogSpan> SelectLogSpan(const FileReader& file, const std::string& replica,
                                const LogSelection& selection, Time last_written, Time now);

// The longest line passed whole: a longer one (a progress bar without newlines, binary output)
// is passed in pieces of this size, so that no line costs more memory than this.
inline constexpr size_t kMaxLogLineBytes = size_t{1} << 20;

// Passes each line of [span.begin, span.end) of `file` to `on_line`, without its newline, reading
// in 64 KiB pieces. A last line without a newline is passed only with `flush_partial`. Returns
// where the lines passed end (after the newline of the last one passed), which is where a reader
// that follows the file goes on.
StatusOr<uint64_t> StreamLogLines(const FileReader& file, LogSpan span, bool flush_partial,
                                  const std::function<void(std::string_view line)>& on_line);

// Reads kubectl's durations: "30s", "5m", "2h", "1h30m". InvalidArgument otherwise.
StatusOr<std::chrono::seconds> ParseDuration(const std::string& text);

}  // namespace cohort::exec
