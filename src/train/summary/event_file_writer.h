// EventFileWriter: one TensorBoard event file in a run directory.
//
// The file is named events.out.tfevents.<10-digit unix seconds>.<host>.<pid>.<n>, which is how
// TensorBoard's own writer names files: TensorBoard reads any file whose name contains "tfevents",
// in name order, so the zero-padded timestamp puts a restarted run's file after the first one.
// The first record is Event{file_version: "brain.Event:2"}; every later record is a scalar summary
// or a SessionLog, framed as TFRecords (tfrecord.h).
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "base/status.h"
#include "train/summary/tfrecord.h"

namespace cohort::train {

// A scalar to plot: its tag (e.g. "epoch_loss") and value.
using Scalar = std::pair<std::string, float>;

class EventFileWriter {
 public:
  // Creates `run_dir` (and parents) and a new event file in it, and writes and flushes the
  // file-version record so that TensorBoard recognises the file at once. When job control named
  // a summaries directory (COHORT_SUMMARY_DIR, cluster/summary_location.h) and `run_dir` is not
  // in it, links it there under its name (unless `link_into_summaries` is false: a staging copy
  // whose files move elsewhere), so that the dashboard finds it; a link that cannot be made is a
  // warning on stderr, never a reason not to write.
  static StatusOr<std::unique_ptr<EventFileWriter>> Create(const std::string& run_dir,
                                                           bool link_into_summaries = true);

  // One Event at `step` holding every scalar in `scalars`.
  Status WriteScalars(int64_t step, const std::vector<Scalar>& scalars);

  // SessionLog START at `step`: TensorBoard then discards events at or after `step` that an
  // earlier, interrupted run wrote, so a resumed run does not plot the lost steps twice.
  Status WriteSessionStart(int64_t step);

  Status Flush() { return records_->Flush(); }
  const std::string& path() const { return records_->path(); }

 private:
  explicit EventFileWriter(std::unique_ptr<TfRecordWriter> records)
      : records_(std::move(records)) {}
  std::unique_ptr<TfRecordWriter> records_;
};

}  // namespace cohort::train
