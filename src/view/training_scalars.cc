#include "view/training_scalars.h"

#include <algorithm>
#include <limits>
#include <optional>
#include <set>
#include <system_error>
#include <utility>

#include "base/file.h"
#include "base/object_url.h"
#include "base/storage.h"
#include "train/summary/summary_run_writer.h"

namespace cohort::view {
namespace fs = std::filesystem;
namespace {

// The names of the entries of `directory` that `keep` accepts, sorted, looking at no more than
// kMaxDirectoryEntries entries; `notes` says when some were left unseen. A missing directory
// holds nothing.
template <typename Keep>
std::vector<std::string> ListDirectory(const fs::path& directory, Keep keep,
                                       std::vector<std::string>* notes) {
  std::vector<std::string> names;
  std::error_code error;
  fs::directory_iterator it(directory, error);
  if (error) {
    if (error != std::errc::no_such_file_or_directory && notes != nullptr) {
      notes->push_back("cannot list " + directory.string() + ": " + error.message());
    }
    return names;
  }
  size_t seen = 0;
  for (; it != fs::directory_iterator(); it.increment(error)) {
    if (error) break;
    if (++seen > kMaxDirectoryEntries) {
      if (notes != nullptr) {
        notes->push_back(directory.string() + " holds more than " +
                         std::to_string(kMaxDirectoryEntries) +
                         " entries: only the first ones listed were looked at");
      }
      break;
    }
    if (keep(it->path())) names.push_back(it->path().filename().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

bool IsDirectory(const fs::path& path) {
  std::error_code error;
  return fs::is_directory(path, error);  // follows a link to a run written elsewhere
}

bool IsEventFile(const fs::path& path) {
  std::error_code error;
  return path.filename().string().find("tfevents") != std::string::npos &&
         fs::is_regular_file(path, error);
}

// The event files of one run, oldest first, at most kMaxFilesPerRun (the newest).
std::vector<std::string> RunFiles(const fs::path& run_directory, std::vector<std::string>* notes) {
  std::vector<std::string> names = ListDirectory(run_directory, IsEventFile, notes);
  if (names.size() > kMaxFilesPerRun) {
    if (notes != nullptr) {
      notes->push_back(run_directory.string() + " holds " + std::to_string(names.size()) +
                       " event files: only the newest " + std::to_string(kMaxFilesPerRun) +
                       " are read");
    }
    names.erase(names.begin(), names.end() - kMaxFilesPerRun);
  }
  std::vector<std::string> paths;
  paths.reserve(names.size());
  for (const std::string& name : names) paths.push_back((run_directory / name).string());
  return paths;
}

bool IsRunUrlFile(const fs::path& path) {
  std::error_code error;
  return path.filename().string().ends_with(train::kRunUrlFileSuffix) &&
         fs::is_regular_file(path, error);
}

// The event files of a run in a bucket (summary_run_writer.h), oldest first, at most
// kMaxFilesPerRun (the newest). A listing that fails is a note.
std::vector<std::string> RunObjects(const std::string& run_url, std::vector<std::string>* notes) {
  std::vector<std::string> names;
  StatusOr<std::vector<StorageEntry>> entries = ListStorageDirectory(run_url);
  if (!entries.ok()) {
    if (notes != nullptr) notes->push_back(entries.status().message());
    return names;
  }
  for (const StorageEntry& entry : *entries) {
    if (names.size() >= kMaxDirectoryEntries) break;
    if (!entry.is_directory && entry.name.find("tfevents") != std::string::npos) {
      names.push_back(entry.name);
    }
  }
  if (names.size() > kMaxFilesPerRun) {
    if (notes != nullptr) {
      notes->push_back(run_url + " holds " + std::to_string(names.size()) +
                       " event files: only the newest " + std::to_string(kMaxFilesPerRun) +
                       " are read");
    }
    names.erase(names.begin(), names.end() - kMaxFilesPerRun);
  }
  std::vector<std::string> paths;
  for (const std::string& name : names) paths.push_back(JoinStoragePath(run_url, name));
  return paths;
}

// The runs of a replica: each directory (or link to one) and each <run>.url naming a run in a
// bucket, with their event files, by run name.
std::map<std::string, std::vector<std::string>> ReplicaRuns(const fs::path& replica_directory,
                                                            const ScalarQuery& query,
                                                            std::vector<std::string>* notes) {
  std::vector<std::string> runs = ListDirectory(replica_directory, IsDirectory, notes);
  for (const std::string& file : ListDirectory(replica_directory, IsRunUrlFile, notes)) {
    runs.push_back(file);
  }
  std::sort(runs.begin(), runs.end());
  if (runs.size() > kMaxRunsPerReplica) {
    if (notes != nullptr) {
      notes->push_back(replica_directory.string() + " holds " + std::to_string(runs.size()) +
                       " runs: only the first " + std::to_string(kMaxRunsPerReplica) + " are read");
    }
    runs.resize(kMaxRunsPerReplica);
  }
  std::map<std::string, std::vector<std::string>> files;
  const std::string suffix = train::kRunUrlFileSuffix;
  for (const std::string& entry : runs) {
    const bool in_bucket = entry.ends_with(suffix) && IsRunUrlFile(replica_directory / entry);
    const std::string run = in_bucket ? entry.substr(0, entry.size() - suffix.size()) : entry;
    if (!(query.run.empty() || query.run == run)) continue;
    if (!in_bucket) {
      files[run] = RunFiles(replica_directory / entry, notes);
      continue;
    }
    StatusOr<std::string> text = ReadWholeFile(replica_directory / entry, 4096);
    std::string url = text.ok() ? *text : "";
    while (!url.empty() && (url.back() == '\n' || url.back() == ' ')) url.pop_back();
    std::string problem = text.ok() ? "" : text.status().message();
    if (problem.empty() && !IsStorageUrl(url)) problem = "\"" + url + "\" is not a storage URL";
    if (Status valid = CheckStoragePath(url); problem.empty() && !valid.ok()) {
      problem = valid.message();
    }
    if (!problem.empty()) {
      if (notes != nullptr) {
        notes->push_back((replica_directory / entry).string() +
                         " names no run in a bucket: " + problem);
      }
      continue;
    }
    files[run] = RunObjects(url, notes);
  }
  return files;
}

bool Matches(const std::string& wanted, const std::string& name) {
  return wanted.empty() || wanted == name;
}

// The points of one series as ranges of the files' own vectors, in order, so that a read of a
// long series copies only what it returns.
class PointRanges {
 public:
  explicit PointRanges(size_t files) { copies_.reserve(files); }  // pointers into copies_ stay

  void AddRange(const ScalarPoint* begin, const ScalarPoint* end) {
    if (begin == end) return;
    ranges_.emplace_back(begin, end);
    size_ += static_cast<size_t>(end - begin);
  }
  void AddCopy(std::vector<ScalarPoint> points) {
    copies_.push_back(std::move(points));
    AddRange(copies_.back().data(), copies_.back().data() + copies_.back().size());
  }
  size_t size() const { return size_; }
  const ScalarPoint* last() const { return ranges_.empty() ? nullptr : ranges_.back().second - 1; }

  template <typename Visit>
  void ForEach(Visit visit) const {
    for (const auto& [begin, end] : ranges_) {
      for (const ScalarPoint* point = begin; point != end; ++point) visit(*point);
    }
  }

 private:
  std::vector<std::pair<const ScalarPoint*, const ScalarPoint*>> ranges_;
  std::vector<std::vector<ScalarPoint>> copies_;
  size_t size_ = 0;
};

// Downsample (see the header) in one pass over `points`.
std::vector<ScalarPoint> DownsampleRanges(const PointRanges& points, size_t max_points) {
  const size_t n = points.size();
  std::vector<ScalarPoint> kept;
  if (max_points == 0 || n <= max_points || max_points < 4) {
    const size_t skip = max_points == 0 || n <= max_points ? 0 : n - max_points;
    kept.reserve(n - skip);
    size_t index = 0;
    points.ForEach([&](const ScalarPoint& point) {
      if (index++ >= skip) kept.push_back(point);
    });
    return kept;
  }
  kept.reserve(max_points);
  const size_t buckets = (max_points - 2) / 2;
  const size_t interior = n - 2;
  size_t bucket = 0;
  size_t bucket_end = 1 + interior / buckets;
  bool open = false;
  ScalarPoint low{}, high{};
  size_t low_index = 0, high_index = 0;
  auto close_bucket = [&] {
    if (!open) return;
    kept.push_back(low_index <= high_index ? low : high);
    if (low_index != high_index) kept.push_back(low_index <= high_index ? high : low);
    open = false;
  };
  size_t index = 0;
  points.ForEach([&](const ScalarPoint& point) {
    if (index == 0) {
      kept.push_back(point);
    } else if (index == n - 1) {
      close_bucket();
      kept.push_back(point);
    } else {
      while (index >= bucket_end) {
        close_bucket();
        ++bucket;
        bucket_end = 1 + (bucket + 1) * interior / buckets;
      }
      if (!open) {
        low = high = point;
        low_index = high_index = index;
        open = true;
      } else {
        if (point.value < low.value) low = point, low_index = index;
        if (point.value > high.value) high = point, high_index = index;
      }
    }
    ++index;
  });
  return kept;
}

// One run's series from its files (oldest first): a file's points count up to the earliest
// SessionLog START of any later file.
void MergeRun(const std::string& replica, const std::string& run,
              const std::vector<const train::EventFileScalars*>& files, const ScalarQuery& query,
              std::vector<ScalarSeries>* out) {
  constexpr int64_t kNoLimit = std::numeric_limits<int64_t>::max();
  std::vector<int64_t> limit(files.size(), kNoLimit);
  for (size_t i = files.size(); i-- > 1;) {
    const std::optional<int64_t> start = files[i]->earliest_session_start();
    limit[i - 1] = std::min(limit[i], start ? *start : kNoLimit);
  }
  std::set<std::string> tags;
  for (const train::EventFileScalars* file : files) {
    for (const auto& [tag, points] : file->series()) {
      if (Matches(query.tag, tag)) tags.insert(tag);
    }
  }
  const auto step_below = [](const ScalarPoint& point, int64_t step) { return point.step < step; };
  const auto step_above = [](int64_t step, const ScalarPoint& point) { return step < point.step; };
  for (const std::string& tag : tags) {
    ScalarSeries series{replica, run, tag, {}, 0};
    PointRanges selected(files.size());
    for (size_t i = 0; i < files.size(); ++i) {
      auto it = files[i]->series().find(tag);
      if (it == files[i]->series().end()) continue;
      const std::vector<ScalarPoint>& points = it->second;
      if (files[i]->StepsAscending(tag)) {
        // Both cuts by binary search: a read of a long series touches only what it returns.
        const ScalarPoint* first = points.data();
        const ScalarPoint* end =
            std::lower_bound(first, first + points.size(), limit[i], step_below);
        series.total_points += static_cast<size_t>(end - first);
        selected.AddRange(std::upper_bound(first, end, query.after_step, step_above), end);
        continue;
      }
      std::vector<ScalarPoint> copy;
      for (const ScalarPoint& point : points) {
        if (point.step >= limit[i]) continue;
        ++series.total_points;
        if (point.step > query.after_step) copy.push_back(point);
      }
      selected.AddCopy(std::move(copy));
    }
    if (query.latest_only) {
      if (const ScalarPoint* last = selected.last()) series.points.push_back(*last);
    } else {
      series.points = DownsampleRanges(selected, query.max_points);
    }
    if (!series.points.empty() || query.after_step < 0) out->push_back(std::move(series));
  }
}

}  // namespace

std::vector<ScalarPoint> Downsample(const std::vector<ScalarPoint>& points, size_t max_points) {
  PointRanges ranges(0);
  ranges.AddRange(points.data(), points.data() + points.size());
  return DownsampleRanges(ranges, max_points);
}

ScalarCache::ScalarCache(train::EventFileLimits file_limits, size_t max_bytes)
    : file_limits_(file_limits), max_bytes_(max_bytes) {}

size_t ScalarCache::cached_files() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return files_.size();
}

size_t ScalarCache::held_bytes() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return HeldBytesLocked();
}

size_t ScalarCache::dropped_bytes() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return dropped_bytes_;
}

size_t ScalarCache::HeldBytesLocked() const {
  size_t held = 0;
  for (const auto& [path, entry] : files_) held += entry.file->held_bytes();
  return held;
}

const train::EventFileScalars* ScalarCache::Refreshed(const std::string& path,
                                                      std::vector<std::string>* notes) {
  Entry& entry = files_[path];
  if (!entry.file) entry.file = std::make_unique<train::EventFileScalars>(path, file_limits_);
  entry.last_used = ++clock_;
  Status refreshed = entry.file->Refresh();
  if (refreshed.code() == Status::Code::kNotFound) {
    dropped_bytes_ += entry.file->held_bytes();
    files_.erase(path);
    return nullptr;
  }
  if (!refreshed.ok() && notes != nullptr) {
    notes->push_back(refreshed.message() + " (the points before it are shown)");
  }
  return entry.file.get();
}

void ScalarCache::Trim() {
  size_t held = HeldBytesLocked();
  while (held > max_bytes_ && !files_.empty()) {
    auto oldest = std::min_element(files_.begin(), files_.end(), [](const auto& a, const auto& b) {
      return a.second.last_used < b.second.last_used;
    });
    held -= oldest->second.file->held_bytes();
    dropped_bytes_ += oldest->second.file->held_bytes();
    files_.erase(oldest);
  }
}

StatusOr<std::vector<ScalarSeries>> ReadScalarsIn(const fs::path& summaries_directory,
                                                  const ScalarQuery& query, ScalarCache* cache,
                                                  std::vector<std::string>* notes) {
  ScalarCache scratch;  // used when the caller keeps no cache
  ScalarCache& files = cache != nullptr ? *cache : scratch;
  std::lock_guard<std::mutex> lock(files.mutex_);
  std::vector<ScalarSeries> result;
  std::vector<std::string> replicas = ListDirectory(summaries_directory, IsDirectory, notes);
  if (replicas.size() > kMaxReplicaDirectories) replicas.resize(kMaxReplicaDirectories);
  for (const std::string& replica : replicas) {
    if (!Matches(query.replica, replica)) continue;
    const fs::path replica_directory = summaries_directory / replica;
    for (const auto& [run, paths] : ReplicaRuns(replica_directory, query, notes)) {
      std::vector<const train::EventFileScalars*> run_files;
      for (const std::string& path : paths) {
        if (const train::EventFileScalars* file = files.Refreshed(path, notes)) {
          run_files.push_back(file);
        }
      }
      MergeRun(replica, run, run_files, query, &result);
      files.Trim();  // the run's points are copied out: its files may go
    }
  }
  return result;
}

StatusOr<std::vector<ScalarSeries>> ReadJobScalars(const exec::JobStore& store,
                                                   const exec::JobKey& key,
                                                   const ScalarQuery& query, ScalarCache* cache,
                                                   std::vector<std::string>* notes) {
  if (!store.Exists(key)) return Status::NotFound("job " + key.ToString() + " not found");
  return ReadScalarsIn(store.JobDirectory(key) / exec::kSummariesDirectoryName, query, cache,
                       notes);
}

}  // namespace cohort::view
