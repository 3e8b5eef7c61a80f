#include "train/summary/summary_run_writer.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <system_error>

#include "base/checksum.h"
#include "base/file.h"
#include "base/object_url.h"
#include "base/storage.h"
#include "cluster/summary_location.h"

namespace cohort::train {

namespace fs = std::filesystem;

namespace {

// Names the run at `run_url` in the summaries directory job control gave this task, if any, for
// the dashboard; a file that cannot be written is a warning, never a reason not to train.
void NameRunInSummaryDirectory(const std::string& run_url) {
  const std::string summaries = cluster::SummaryDirectoryFromEnvironment();
  if (summaries.empty()) return;
  const std::string name = run_url.substr(run_url.rfind('/') + 1);
  std::error_code error;
  fs::create_directories(summaries, error);
  Status written =
      WriteFileAtomically(fs::path(summaries) / (name + kRunUrlFileSuffix), run_url + "\n");
  if (!written.ok()) {
    std::fprintf(stderr, "TensorBoard: %s: the dashboard will not show %s\n",
                 written.message().c_str(), run_url.c_str());
  }
}

}  // namespace

StatusOr<std::unique_ptr<SummaryRunWriter>> SummaryRunWriter::Create(const std::string& run_dir,
                                                                     SummaryRunOptions options) {
  std::string local_dir = run_dir;
  if (IsStorageUrl(run_dir)) {
    COHORT_RETURN_IF_ERROR(CheckStoragePath(run_dir));
    std::error_code error;
    fs::path temporary = fs::temp_directory_path(error);
    if (error) temporary = "/tmp";
    // Its own per process and run: two runs of one process, or two processes, never share one.
    local_dir = (temporary / ("cohort-summaries-" + Sha256Hex(run_dir).substr(0, 16) + "-" +
                              std::to_string(::getpid())))
                    .string();
    fs::remove_all(local_dir, error);
    if (options.publish) NameRunInSummaryDirectory(run_dir);
  }
  std::unique_ptr<SummaryRunWriter> run(
      new SummaryRunWriter(run_dir, std::move(local_dir), std::move(options)));
  COHORT_RETURN_IF_ERROR(run->Open());
  return run;
}

SummaryRunWriter::~SummaryRunWriter() {
  writer_.reset();
  if (in_bucket()) {
    std::error_code error;
    fs::remove_all(local_dir_, error);
  }
}

Status SummaryRunWriter::Open() {
  // A staging copy is not linked into the dashboard's directory: its files move to the bucket.
  auto writer = EventFileWriter::Create(local_dir_, /*link_into_summaries=*/!in_bucket());
  if (!writer.ok()) return writer.status();
  writer_ = std::move(writer).value();
  opened_ = options_.now();
  written_ = false;
  return Status::OK();
}

Status SummaryRunWriter::WriteScalars(int64_t step, const std::vector<Scalar>& scalars) {
  if (!writer_)
    return Status::FailedPrecondition("summaries written to " + run_dir_ + " after Close");
  written_ = true;
  return writer_->WriteScalars(step, scalars);
}

Status SummaryRunWriter::WriteSessionStart(int64_t step) {
  if (!writer_)
    return Status::FailedPrecondition("summaries written to " + run_dir_ + " after Close");
  written_ = true;
  return writer_->WriteSessionStart(step);
}

Status SummaryRunWriter::Upload() {
  COHORT_RETURN_IF_ERROR(writer_->Flush());
  const std::string local = writer_->path();
  writer_.reset();  // closes the file: what is uploaded is never appended to again
  if (!options_.publish) return Status::OK();
  StatusOr<std::string> bytes = ReadWholeFile(local);
  if (!bytes.ok()) return bytes.status();
  const std::string object = JoinStoragePath(run_dir_, fs::path(local).filename().string());
  COHORT_RETURN_IF_ERROR(WriteStorageFileAtomically(object, *bytes));
  std::error_code error;
  fs::remove(local, error);
  return Status::OK();
}

Status SummaryRunWriter::Flush() {
  if (!writer_) return Status::OK();
  if (!in_bucket()) return writer_->Flush();
  const auto interval =
      std::max<std::chrono::steady_clock::duration>(options_.upload_every, std::chrono::seconds(1));
  if (!written_ || options_.now() - opened_ < interval) return writer_->Flush();
  COHORT_RETURN_IF_ERROR(Upload());
  return Open();
}

Status SummaryRunWriter::Close() {
  if (!writer_) return Status::OK();
  if (!in_bucket()) {
    Status flushed = writer_->Flush();
    writer_.reset();
    return flushed;
  }
  Status uploaded = Upload();
  writer_.reset();
  std::error_code error;
  fs::remove_all(local_dir_, error);
  return uploaded;
}

}  // namespace cohort::train
