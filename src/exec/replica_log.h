// ReplicaLog: a replica's log file, written by its supervisor, with a bound on its size.
//
// A replica's stdout and stderr go into a pipe (LocalProcessBackend), and the supervisor appends
// what comes out of it here, as a container runtime's log driver does; so a replica cannot fill
// the disk. When the next write would take logs/<type>-<index>.log past `max_bytes`, the file is
// rotated, as the kubelet rotates container logs:
//
//   <type>-<index>.log         the current file, what `cohort logs` and the dashboard read
//   <type>-<index>.log.start   the first file ever rotated out: the job's start, kept for good
//   <type>-<index>.log.1 ... .N  the files rotated out after it, newest first; older ones dropped
//
// so a replica keeps at most (max_files + 2) x max_bytes of log: its start, its last files and
// its current one. The limits come from $COHORT_LOG_MAX_BYTES and $COHORT_LOG_MAX_FILES
// (LogRotation::FromEnvironment), read by the supervisor when the job starts.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string_view>

#include "base/status.h"

namespace cohort::exec {

struct LogRotation {
  uint64_t max_bytes = uint64_t{64} << 20;  // per file; at least 4096
  int max_files = 3;                        // rotated files kept besides .start; 0 to 100
  // The defaults, with $COHORT_LOG_MAX_BYTES (a byte count, or a number with K, M or G: "64M")
  // and $COHORT_LOG_MAX_FILES where set. InvalidArgument naming the variable for a bad value.
  static StatusOr<LogRotation> FromEnvironment();
};

class ReplicaLog {
 public:
  // Opens (creates) `path` for appending; its current size counts towards the bound.
  static StatusOr<ReplicaLog> Open(std::filesystem::path path, LogRotation rotation);
  ReplicaLog(ReplicaLog&& other) noexcept;
  ReplicaLog& operator=(ReplicaLog&& other) noexcept;
  ReplicaLog(const ReplicaLog&) = delete;
  ReplicaLog& operator=(const ReplicaLog&) = delete;
  ~ReplicaLog();

  // Appends `data`, rotating first when it would take the current file past max_bytes (a piece
  // larger than a whole file is cut at the bound, across files).
  Status Append(std::string_view data);

  // Marks where a new run's output begins: its offset in the current file, until a rotation
  // makes it the start of the new file.
  void BeginRun() { run_start_ = size_; }
  uint64_t run_start() const { return run_start_; }
  uint64_t size() const { return size_; }
  const std::filesystem::path& path() const { return path_; }

 private:
  ReplicaLog(std::filesystem::path path, LogRotation rotation, int fd, uint64_t size)
      : path_(std::move(path)), rotation_(rotation), fd_(fd), size_(size) {}
  Status Rotate();

  std::filesystem::path path_;
  LogRotation rotation_;
  int fd_ = -1;
  uint64_t size_ = 0;
  uint64_t run_start_ = 0;
};

}  // namespace cohort::exec
