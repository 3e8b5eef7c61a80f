#include "train/summary/event_file_scalars.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <utility>

#include "base/file.h"
#include "base/object_url.h"
#include "base/storage.h"
#include "train/summary/scalar_event.h"
#include "train/summary/tfrecord.h"

namespace cohort::train {
namespace {

// Bytes read per chunk: large enough for any record the limits allow, small enough that a big
// file never sits in memory whole.
constexpr uint64_t kChunkBytes = uint64_t{8} << 20;
// What a tag's map entry costs besides its name and its points: the node, its string and vector.
constexpr size_t kSeriesOverheadBytes = 128;

}  // namespace

EventFileScalars::EventFileScalars(std::string path, EventFileLimits limits)
    : path_(std::move(path)), limits_(limits) {}

void EventFileScalars::Reset() {
  offset_ = 0;
  size_seen_ = 0;
  stopped_ = Status::OK();
  series_.clear();
  unordered_tags_.clear();
  earliest_start_.reset();
  last_tag_ = {};
  last_series_ = nullptr;
  point_count_ = 0;
  point_bytes_ = 0;
  series_bytes_ = 0;
  dropped_points_ = 0;
}

Status EventFileScalars::Refresh() {
  if (IsStorageUrl(path_)) {
    // An object (summary_run_writer.h uploads closed event files): it changes only by being
    // replaced whole, which a different size shows.
    StatusOr<uint64_t> size = StorageFileSize(path_);
    if (!size.ok()) return size.status();  // NotFound: gone, dropped by the cache
    if (*size != size_seen_) Reset();
    if (*size == size_seen_) return stopped_;
    if (*size > limits_.max_file_bytes) {
      stopped_ = Status::InvalidArgument(
          path_ + " holds " + std::to_string(*size) + " bytes, more than the limit of " +
          std::to_string(limits_.max_file_bytes) + " for an event file");
      size_seen_ = *size;
      return stopped_;
    }
    Status read = ReadAppended(*size);
    size_seen_ = *size;
    if (!read.ok()) stopped_ = read;
    return read;
  }
  struct stat info {};
  if (stat(path_.c_str(), &info) != 0) {
    const int error = errno;
    const std::string message = "cannot read " + path_ + ": " + ErrnoMessage(error);
    return error == ENOENT ? Status::NotFound(message) : Status::IOError(message);
  }
  if (!S_ISREG(info.st_mode)) return Status::InvalidArgument(path_ + " is not a regular file");
  const auto size = static_cast<uint64_t>(info.st_size);
  const int64_t mtime_ns = int64_t{info.st_mtim.tv_sec} * 1000000000 + info.st_mtim.tv_nsec;
  const auto inode = static_cast<uint64_t>(info.st_ino);
  if (inode != inode_seen_ || size < size_seen_) Reset();  // replaced or truncated
  if (size == size_seen_ && mtime_ns == mtime_seen_ns_ && inode == inode_seen_) return stopped_;
  inode_seen_ = inode;
  mtime_seen_ns_ = mtime_ns;
  if (!stopped_.ok()) {
    size_seen_ = size;
    return stopped_;
  }
  if (size > limits_.max_file_bytes) {
    stopped_ = Status::InvalidArgument(
        path_ + " holds " + std::to_string(size) + " bytes, more than the limit of " +
        std::to_string(limits_.max_file_bytes) + " for an event file");
    size_seen_ = size;
    return stopped_;
  }
  Status read = ReadAppended(size);
  size_seen_ = size;
  if (!read.ok()) stopped_ = read;
  return read;
}

Status EventFileScalars::ReadAppended(uint64_t file_size) {
  const uint64_t chunk_bytes = std::max(kChunkBytes, limits_.max_record_bytes + 16);
  while (offset_ < file_size) {
    const uint64_t length = std::min<uint64_t>(chunk_bytes, file_size - offset_);
    StatusOr<std::string> chunk = IsStorageUrl(path_) ? ReadStorageFileRange(path_, offset_, length)
                                                      : ReadFileRange(path_, offset_, length);
    if (!chunk.ok()) return chunk.status();
    if (chunk->empty()) return Status::OK();  // truncated meanwhile: the next Refresh sees it
    const TfRecordScan scan = ScanTfRecords(*chunk, path_, offset_, limits_.max_record_bytes);
    for (std::string_view record : scan.records) AddRecord(record);
    offset_ += scan.consumed;
    if (!scan.corruption.ok()) return scan.corruption;
    if (scan.consumed == 0) return Status::OK();  // an incomplete record at the end
  }
  return Status::OK();
}

void EventFileScalars::AddRecord(std::string_view record) {
  // One event reused for every record: its vector keeps its memory between parses.
  thread_local ScalarEvent event;
  if (!ParseScalarEvent(record, &event)) {
    ++dropped_points_;  // the CRC held, yet it is no Event: nothing to plot
    return;
  }
  if (event.session_start) {
    earliest_start_ = earliest_start_ ? std::min(*earliest_start_, event.step) : event.step;
    DropFrom(event.step);
    return;
  }
  for (const ScalarValue& value : event.scalars) {
    if (point_count_ >= limits_.max_points) {
      ++dropped_points_;
      continue;
    }
    // Records of one file mostly alternate between few tags: the last one found is kept.
    if (last_series_ == nullptr || last_tag_ != value.tag) {
      auto it = series_.find(value.tag);
      if (it == series_.end()) {
        it = series_.emplace(std::string(value.tag), std::vector<ScalarPoint>()).first;
        series_bytes_ += kSeriesOverheadBytes + value.tag.size();
      }
      last_tag_ = it->first;
      last_series_ = &it->second;
    }
    std::vector<ScalarPoint>& points = *last_series_;
    if (!points.empty() && event.step < points.back().step) unordered_tags_.emplace(last_tag_);
    if (points.size() == points.capacity()) {
      point_bytes_ -= points.capacity() * sizeof(ScalarPoint);
      points.reserve(std::max<size_t>(points.capacity() * 2, 64));
      point_bytes_ += points.capacity() * sizeof(ScalarPoint);
    }
    points.push_back(ScalarPoint{event.step, event.wall_time, static_cast<double>(value.value)});
    ++point_count_;
  }
}

void EventFileScalars::DropFrom(int64_t step) {
  for (auto& [tag, points] : series_) {
    const size_t before = points.size();
    std::erase_if(points, [step](const ScalarPoint& point) { return point.step >= step; });
    point_count_ -= before - points.size();
  }
}

}  // namespace cohort::train
