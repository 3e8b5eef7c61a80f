// EventFileScalars: the scalar curves of one TensorBoard event file, read as the file grows.
//
// A reader of event files that may still be written (a dashboard following a training job):
// each Refresh() reads only what was appended since the last one, in chunks, and keeps the
// points of every tag in memory. It trusts nothing in the file:
//   - both CRCs of every record are checked (tfrecord.h); the first corrupt record stops the
//     reading of the file, and what came before it stays;
//   - an incomplete last record (a writer mid-record, or one killed there) is left for the next
//     Refresh, not an error;
//   - a record may hold at most `max_record_bytes` and the file at most `max_file_bytes`, both
//     checked before anything is read, so no input can make the reader allocate without bound;
//   - a file that shrank or was replaced is read again from its start.
// The path may also name an object (s3://, gs://; base/storage.h), read by ranged GETs: a run
// in a bucket is a series of closed event files (summary_run_writer.h).
// Records are read with ParseScalarEvent (scalar_event.h), which keeps only what a curve needs.
// Scalars are Summary values with simple_value (what EventFileWriter writes); other values are
// skipped. SessionLog START at step S drops this file's points at steps >= S, as TensorBoard
// purges a restarted run's lost steps; `earliest_session_start()` lets the caller apply the same
// rule to the run's earlier files (a resumed run writes a new file that starts with START).
//
// Not thread-safe: the caller serialises access.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace cohort::train {

// One point of a curve: the value of a tag at a global step, with the event's wall time.
struct ScalarPoint {
  int64_t step = 0;
  double wall_time = 0;  // seconds since the Unix epoch
  double value = 0;
};

struct EventFileLimits {
  uint64_t max_record_bytes = uint64_t{1} << 20;  // a scalar event is under 1 KiB
  uint64_t max_file_bytes = uint64_t{1} << 30;
  // The most points one file may hold in memory, over all its tags; points past it are dropped
  // (counted in `dropped_points()`, with records whose CRC holds but that are no Event).
  size_t max_points = size_t{32} << 20;
};

// Every tag's points, in the file's order.
using SeriesByTag = std::map<std::string, std::vector<ScalarPoint>, std::less<>>;

class EventFileScalars {
 public:
  explicit EventFileScalars(std::string path, EventFileLimits limits = {});
  EventFileScalars(const EventFileScalars&) = delete;
  EventFileScalars& operator=(const EventFileScalars&) = delete;

  // Reads what was appended since the last call. Returns the reason when the file cannot be
  // read any further (too large, corrupt, unreadable); the points read so far stay.
  Status Refresh();

  const std::string& path() const { return path_; }
  const SeriesByTag& series() const { return series_; }
  // Whether the points of `tag` are in non-decreasing step order (as every writer writes them),
  // so that a reader may search them by step.
  bool StepsAscending(const std::string& tag) const { return !unordered_tags_.count(tag); }
  // The smallest step of a SessionLog START in this file, if it has one.
  std::optional<int64_t> earliest_session_start() const { return earliest_start_; }
  size_t point_count() const { return point_count_; }
  size_t dropped_points() const { return dropped_points_; }
  // The memory the points take: every series' capacity, and its tag and map entry; what a cache
  // of files counts against its budget.
  size_t held_bytes() const { return point_bytes_ + series_bytes_; }
  // The file's size and modification time when it was last read (to skip unchanged files).
  uint64_t size_read() const { return size_seen_; }

 private:
  void Reset();
  Status ReadAppended(uint64_t file_size);
  void AddRecord(std::string_view record);
  void DropFrom(int64_t step);

  std::string path_;
  EventFileLimits limits_;
  uint64_t offset_ = 0;  // where the next unread record starts
  uint64_t size_seen_ = 0;
  int64_t mtime_seen_ns_ = -1;
  uint64_t inode_seen_ = 0;
  Status stopped_;  // set once the file cannot be read further
  SeriesByTag series_;
  // The series of the last point added, and its tag (the map's key), found again only when a
  // record names another tag.
  std::string_view last_tag_;
  std::vector<ScalarPoint>* last_series_ = nullptr;
  std::set<std::string> unordered_tags_;
  std::optional<int64_t> earliest_start_;
  size_t point_count_ = 0;
  size_t point_bytes_ = 0;   // the capacity of every series
  size_t series_bytes_ = 0;  // tags and map entries
  size_t dropped_points_ = 0;
};

}  // namespace cohort::train
