// SummaryRunWriter: one TensorBoard run (a directory of event files), in a local directory or
// under an object storage prefix (s3://bucket/logs/train, gs://...; base/storage.h).
//
// A local run is one EventFileWriter, appended to and flushed as it goes. An object cannot be
// appended to, so a run in a bucket is written as a series of closed event files: the writer
// writes to a local staging directory and, at a Flush at least `upload_every` after its file was
// opened (and only when something was written since), closes the file, uploads it whole as
// <prefix>/<its name> and opens the next one; Close uploads the last. Each file's name is stamped
// with the whole second it was opened (event_file_writer.h), and files are at least a second
// apart, so TensorBoard, which reads a run's files in name order, reads the series as one run.
// A process killed loses at most what it wrote since its last upload; no reader ever sees part of
// a file. When job control named a summaries directory (COHORT_SUMMARY_DIR), a published run in a
// bucket is named there by a file <run name>.url holding its URL, as a local run is linked there
// (event_file_writer.h), so that the dashboard finds it (view/training_scalars.h).
//
//   auto run = SummaryRunWriter::Create("s3://bucket/job/logs/train", {});
//   (*run)->WriteScalars(step, {{"epoch_loss", 0.3f}});
//   (*run)->Flush();   // in a bucket: uploads when upload_every has passed
//   (*run)->Close();   // the last file, uploaded; the staging copy removed
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "base/status.h"
#include "train/summary/event_file_writer.h"

namespace cohort::train {

// <COHORT_SUMMARY_DIR>/<run name><kRunUrlFileSuffix> holds the URL of a run in a bucket.
inline constexpr char kRunUrlFileSuffix[] = ".url";

struct SummaryRunOptions {
  // In a bucket: the least time between two uploads of the run's closed event file (at least
  // 1 s, so that each new file's name sorts after the last).
  std::chrono::milliseconds upload_every{30000};
  // In a bucket: false keeps the files in the staging copy only, removed at Close (a worker whose
  // summaries are not kept, worker_dirs.h).
  bool publish = true;
  // The clock `upload_every` is measured on.
  std::function<std::chrono::steady_clock::time_point()> now = std::chrono::steady_clock::now;
};

class SummaryRunWriter {
 public:
  // Opens the run's first event file (EventFileWriter::Create) at `run_dir`, a local directory
  // (created) or a storage URL (then in a staging directory of its own under $TMPDIR).
  static StatusOr<std::unique_ptr<SummaryRunWriter>> Create(const std::string& run_dir,
                                                            SummaryRunOptions options);
  // Removes the staging copy; what was not uploaded by Close is lost, as in a crash.
  ~SummaryRunWriter();

  Status WriteScalars(int64_t step, const std::vector<Scalar>& scalars);
  Status WriteSessionStart(int64_t step);

  // Flushes the file; in a bucket, uploads it and opens the next when `upload_every` has passed.
  Status Flush();

  // Flushes and closes the run; in a bucket, uploads the last file and removes the staging copy.
  // Nothing may be written after it.
  Status Close();

  // Where the run is: `run_dir` as given.
  const std::string& run_dir() const { return run_dir_; }

 private:
  SummaryRunWriter(std::string run_dir, std::string local_dir, SummaryRunOptions options)
      : run_dir_(std::move(run_dir)),
        local_dir_(std::move(local_dir)),
        options_(std::move(options)) {}

  bool in_bucket() const { return local_dir_ != run_dir_; }
  Status Open();
  Status Upload();  // closes the current file and uploads it

  std::string run_dir_;
  std::string local_dir_;  // where the files are written: run_dir_, or the staging copy
  SummaryRunOptions options_;
  std::unique_ptr<EventFileWriter> writer_;
  std::chrono::steady_clock::time_point opened_;
  bool written_ = false;  // a record beyond the file-version record since the file was opened
};

}  // namespace cohort::train
