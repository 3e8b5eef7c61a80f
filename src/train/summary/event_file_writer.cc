#include "train/summary/event_file_writer.h"

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <system_error>

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

}  // namespace

StatusOr<std::unique_ptr<EventFileWriter>> EventFileWriter::Create(const std::string& run_dir) {
  std::error_code error;
  std::filesystem::create_directories(run_dir, error);
  if (error) return Status::IOError("cannot create " + run_dir + ": " + error.message());
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
