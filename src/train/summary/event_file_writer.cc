#include "train/summary/event_file_writer.h"

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <system_error>

#include "cluster/summary_location.h"
#include "train/summary/event.pb.h"

namespace cohort::train {
namespace {

double NowSeconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::string HostName() {
  char name[256] = {};
  if (gethostname(name, sizeof(name) - 1) != 0 || name[0] == '\0') return "localhost";
  return name;
}

// Distinguishes files a process opens within the same second (train/ and validation/ runs may
// share a directory in tests).
std::atomic<int> file_counter{0};

std::string EventFileName() {
  const auto seconds = static_cast<long long>(NowSeconds());
  char stamp[32];
  std::snprintf(stamp, sizeof(stamp), "%010lld", seconds);
  return std::string("events.out.tfevents.") + stamp + "." + HostName() + "." +
         std::to_string(getpid()) + "." + std::to_string(file_counter.fetch_add(1));
}

Status WriteEvent(TfRecordWriter& records, const proto::Event& event) {
  std::string bytes;
  if (!event.SerializeToString(&bytes)) {
    return Status::Internal("cannot serialize an event for " + records.path());
  }
  return records.Write(bytes);
}

// Places the link <COHORT_SUMMARY_DIR>/<run name> -> `run_dir` (cluster/summary_location.h),
// unless `run_dir` is in that directory already. The link is made beside and renamed over an older
// one, so a reader never finds it missing.
Status LinkIntoSummaryDirectory(const std::filesystem::path& run_dir) {
  namespace fs = std::filesystem;
  const std::string variable = cluster::SummaryDirectoryFromEnvironment();
  if (variable.empty()) return Status::OK();
  std::error_code error;
  const fs::path summaries = fs::absolute(variable, error).lexically_normal();
  const fs::path run = fs::absolute(run_dir, error).lexically_normal();
  if (error) return Status::IOError("cannot resolve " + run_dir.string() + ": " + error.message());
  fs::path name = run.filename();
  if (name.empty()) name = run.parent_path().filename();
  if (run.parent_path() == summaries || name.empty()) return Status::OK();
  const fs::path link = summaries / name;
  const fs::path temporary = summaries / ("." + name.string() + ".link" + std::to_string(getpid()));
  fs::create_directories(summaries, error);
  fs::remove(temporary, error);
  fs::create_directory_symlink(run, temporary, error);
  if (!error) fs::rename(temporary, link, error);
  if (error) {
    fs::remove(temporary, error);
    return Status::IOError("cannot link " + link.string() + " to " + run.string() + ": " +
                           error.message());
  }
  return Status::OK();
}

}  // namespace

StatusOr<std::unique_ptr<EventFileWriter>> EventFileWriter::Create(const std::string& run_dir,
                                                                   bool link_into_summaries) {
  std::error_code error;
  std::filesystem::create_directories(run_dir, error);
  if (error) return Status::IOError("cannot create " + run_dir + ": " + error.message());
  if (Status linked = link_into_summaries ? LinkIntoSummaryDirectory(run_dir) : Status::OK();
      !linked.ok()) {
    // The run is written all the same; only the dashboard will not find it.
    std::fprintf(stderr, "TensorBoard: %s: the dashboard will not show %s\n",
                 linked.message().c_str(), run_dir.c_str());
  }
  auto records =
      TfRecordWriter::Create((std::filesystem::path(run_dir) / EventFileName()).string());
  if (!records.ok()) return records.status();
  std::unique_ptr<EventFileWriter> writer(new EventFileWriter(std::move(records).value()));

  proto::Event version;
  version.set_wall_time(NowSeconds());
  version.set_file_version("brain.Event:2");
  COHORT_RETURN_IF_ERROR(WriteEvent(*writer->records_, version));
  COHORT_RETURN_IF_ERROR(writer->Flush());
  return writer;
}

Status EventFileWriter::WriteScalars(int64_t step, const std::vector<Scalar>& scalars) {
  proto::Event event;
  event.set_wall_time(NowSeconds());
  event.set_step(step);
  for (const auto& [tag, value] : scalars) {
    proto::Summary::Value* entry = event.mutable_summary()->add_value();
    entry->set_tag(tag);
    entry->set_simple_value(value);
  }
  return WriteEvent(*records_, event);
}

Status EventFileWriter::WriteSessionStart(int64_t step) {
  proto::Event event;
  event.set_wall_time(NowSeconds());
  event.set_step(step);
  event.mutable_session_log()->set_status(proto::SessionLog::START);
  return WriteEvent(*records_, event);
}

}  // namespace cohort::train
