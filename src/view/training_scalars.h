// Training curves of a job, read from the TensorBoard event files its replicas write: what the
// dashboard's curves and the training figures of /metrics show.
//
// Where: each local replica is told its own directory in COHORT_SUMMARY_DIR
// (cluster/summary_location.h), `<job dir>/summaries/<type>-<index>`; every entry there that is a
// directory, or a symbolic link to one (the runtime links the runs it writes elsewhere, under
// --tensorboard_dir), and holds event files ("tfevents" in the name) is a run: "train",
// "validation", "eval". A run written to object storage (--tensorboard_dir s3://..., gs://...) is
// named there by a file "<run>.url" holding its URL (train/summary/summary_run_writer.h), and its
// closed event files are listed and read from the bucket through base/storage.h. Nothing else is
// read, and nobody has to say where.
//
// How: files are read with train/summary's EventFileScalars (CRCs checked, a torn last record
// skipped until it is whole, record and file sizes bounded) and kept in a ScalarCache by path, so
// that a later read costs only what was appended. Within a run, files are taken in name order
// (their names start with the creation time) and a SessionLog START at step S in a later file
// hides the earlier files' points at steps >= S, as TensorBoard purges a resumed run's lost
// steps. A series longer than `max_points` is downsampled: the first and last points stay and
// each bucket between keeps its lowest and its highest value, so spikes survive.
//
// Bounds: at most kMaxReplicaDirectories replica directories, kMaxRunsPerReplica runs per
// replica and kMaxFilesPerRun event files per run (the newest) are read; what is left out, and
// files that cannot be read (too large, corrupt), are named in `notes`, never fatal.
//
//   view::ScalarCache cache;   // one per process; thread-safe
//   auto series = view::ReadJobScalars(store, key, {.tag = "batch_loss"}, &cache, &notes);
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "base/status.h"
#include "exec/job_store.h"
#include "train/summary/event_file_scalars.h"

namespace cohort::view {

// {step, wall_time (seconds since the Unix epoch), value}.
using ScalarPoint = train::ScalarPoint;

struct ScalarSeries {
  std::string replica;              // "worker-0", "evaluator-0"
  std::string run;                  // "train", "validation", "eval"
  std::string tag;                  // "epoch_loss", "batch_loss", "samples_per_second"...
  std::vector<ScalarPoint> points;  // by step, as written
  size_t total_points = 0;          // before downsampling and `after_step`
};

struct ScalarQuery {
  std::string replica;      // empty: every replica
  std::string run;          // empty: every run
  std::string tag;          // empty: every tag
  int64_t after_step = -1;  // only points at later steps (a dashboard asking for what is new)
  // Downsample beyond this many points per series; 0: every point.
  size_t max_points = 2000;
  // Only the last point of each series (the latest figures, for /metrics).
  bool latest_only = false;
};

inline constexpr size_t kMaxReplicaDirectories = 1024;
inline constexpr size_t kMaxRunsPerReplica = 16;
inline constexpr size_t kMaxFilesPerRun = 64;
// Entries looked at in one directory before the rest is left out (a directory of thousands of
// files costs a bounded listing).
inline constexpr size_t kMaxDirectoryEntries = 4096;

class ScalarCache;

// The scalars of the job whose summaries directory is `summaries_directory` (a job directory's
// `summaries/`), filtered by `query`, sorted by replica, run and tag. A directory that does not
// exist holds no scalars. `cache` may be null (everything is read afresh); `notes`, when not
// null, gets a line for each file or directory left out and why.
StatusOr<std::vector<ScalarSeries>> ReadScalarsIn(const std::filesystem::path& summaries_directory,
                                                  const ScalarQuery& query, ScalarCache* cache,
                                                  std::vector<std::string>* notes = nullptr);

// The same for the job `key` of `store` ($COHORT_HOME): NotFound when there is no such job.
StatusOr<std::vector<ScalarSeries>> ReadJobScalars(const exec::JobStore& store,
                                                   const exec::JobKey& key,
                                                   const ScalarQuery& query, ScalarCache* cache,
                                                   std::vector<std::string>* notes = nullptr);

// Reduces `points` to at most `max_points`: the first and last points, and the lowest and highest
// value of each of (max_points - 2) / 2 equal buckets between them, in order. Below 4 (too few
// for one bucket's extremes besides the ends), the last `max_points` points.
std::vector<ScalarPoint> Downsample(const std::vector<ScalarPoint>& points, size_t max_points);

// Event files by path, each read only as far as it grew since its last read. Thread-safe: reads
// of jobs are serialised on its lock (a read from the cache takes milliseconds). The memory the
// files' points take (EventFileScalars::held_bytes) is bounded by `max_bytes`: after each run a
// read merged, the least recently read files are dropped (and read again when asked for) until
// the rest fits, so between reads the cache holds at most `max_bytes`, and during one at most
// that plus the files of the run being merged. A file that disappeared is dropped at its next
// read.
inline constexpr size_t kDefaultScalarCacheBytes = size_t{256} << 20;

class ScalarCache {
 public:
  explicit ScalarCache(train::EventFileLimits file_limits = {},
                       size_t max_bytes = kDefaultScalarCacheBytes);
  ScalarCache(const ScalarCache&) = delete;
  ScalarCache& operator=(const ScalarCache&) = delete;

  size_t max_bytes() const { return max_bytes_; }
  // The bytes the cached files' points take now.
  size_t held_bytes() const;
  // The bytes of the files dropped so far, to stay within the budget or because they are gone
  // (a caller may hand that memory back to the system once it grew by much).
  size_t dropped_bytes() const;
  size_t cached_files() const;

 private:
  friend StatusOr<std::vector<ScalarSeries>> ReadScalarsIn(const std::filesystem::path&,
                                                           const ScalarQuery&, ScalarCache*,
                                                           std::vector<std::string>*);
  struct Entry {
    std::unique_ptr<train::EventFileScalars> file;
    uint64_t last_used = 0;
  };
  // With mutex_ held: the file of `path`, refreshed; null when it is gone.
  const train::EventFileScalars* Refreshed(const std::string& path,
                                           std::vector<std::string>* notes);
  // With mutex_ held: drops the least recently used files while over the bound.
  void Trim();
  size_t HeldBytesLocked() const;

  train::EventFileLimits file_limits_;
  size_t max_bytes_;
  mutable std::mutex mutex_;
  std::map<std::string, Entry> files_;
  uint64_t clock_ = 0;
  size_t dropped_bytes_ = 0;
};

}  // namespace cohort::view
