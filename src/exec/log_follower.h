// LogFollower: reads the replicas' log files of a job as they grow, line by line, in bounded
// memory.
//
// Used by `cohort run` (replica output streamed with a "[worker-1] " prefix) and `cohort logs -f`.
// It reads files rather than pipes, so the supervisor only ever writes files and any number of
// readers can follow a job from any shell. Each poll reads at most 64 KiB at a time, and a line
// longer than kMaxLogLineBytes is passed in pieces, so a replica that writes a gigabyte costs the
// reader no more memory than one that writes a line. A file replaced by rotation (replica_log.h;
// a new inode) is read from its start, after the rest of the file it replaced (now .log.start or
// .log.1), so no line is lost between polls.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>

#include "base/file.h"

namespace cohort::exec {

class LogFollower {
 public:
  // Follows logs/<replica>.log under `logs_directory`; `replica` "" means every replica.
  LogFollower(std::filesystem::path logs_directory, std::string replica = "");

  // Calls `on_line(replica, line)` for every complete line written since the last call (files
  // that appear later are picked up). With `flush_partial`, a last line without a newline is
  // delivered too (use it once the writers are gone).
  void Poll(const std::function<void(const std::string&, const std::string&)>& on_line,
            bool flush_partial = false);

  // Starts `replica`'s file at `offset` (what a reader already printed) instead of its start.
  void StartAt(const std::string& replica, uint64_t offset) { offsets_[replica] = offset; }

  // Passes on at most `bytes_per_second` of each replica's output (and a burst of as much): what
  // a replica writes faster is skipped, whole lines at a time (never the last complete line), and a
  // line
  //   [cohort: skipped N bytes of worker-0's output, written faster than M bytes/s; all of it is in
  //   PATH]
  // says so in its place. 0: no limit (the default).
  void LimitRate(uint64_t bytes_per_second) { bytes_per_second_ = bytes_per_second; }

 private:
  // Passes on `file`'s lines (at `path`) from `offset` to its end, within the rate limit, and
  // moves `offset` past them.
  void Deliver(const std::string& replica, const std::filesystem::path& path, FileReader& file,
               uint64_t& offset, bool flush_partial,
               const std::function<void(const std::string&, const std::string&)>& on_line);
  // The rotated file (<replica>.log.start or .log.1) that is the file of `inode`, if any.
  std::optional<std::filesystem::path> RotatedFile(const std::string& replica, ino_t inode) const;

  struct Budget {
    double bytes = 0;
    std::chrono::steady_clock::time_point refilled_at{};
  };

  std::filesystem::path logs_directory_;
  std::string replica_;
  std::map<std::string, uint64_t> offsets_;  // replica -> bytes already delivered
  std::map<std::string, ino_t> inodes_;      // replica -> the file those bytes were in
  uint64_t bytes_per_second_ = 0;
  std::map<std::string, Budget> budgets_;
};

}  // namespace cohort::exec
