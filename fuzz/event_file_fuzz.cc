// Fuzzes the reader of TensorBoard event files (train/summary/event_file_scalars.h), which the
// dashboard runs on files any replica may have written: on any bytes it must not crash, hold more
// points than its bound, or read a record over the size bound; a file read in two growing halves
// must give what the whole file gives (the torn-tail rule), and whole records must be consumed
// exactly up to the first incomplete or corrupt one.
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

#include "train/summary/event_file_scalars.h"
#include "train/summary/tfrecord.h"

namespace {

[[noreturn]] void Fail(const char* what) {
  std::fprintf(stderr, "event_file_fuzz: %s\n", what);
  std::abort();
}

void Write(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

size_t Points(const cohort::train::EventFileScalars& file) {
  size_t points = 0;
  for (const auto& [tag, series] : file.series()) points += series.size();
  return points;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string input(reinterpret_cast<const char*>(data), size);
  constexpr uint64_t kMaxRecord = 256;
  const cohort::train::TfRecordScan scan =
      cohort::train::ScanTfRecords(input, "input", 0, kMaxRecord);
  if (scan.consumed > input.size()) Fail("consumed more than the input");
  for (std::string_view record : scan.records) {
    if (record.size() > kMaxRecord) Fail("a record over the bound");
  }

  static const std::string directory = [] {
    char pattern[] = "/tmp/event-file-fuzz-XXXXXX";
    const char* made = mkdtemp(pattern);
    if (made == nullptr) Fail("mkdtemp failed");
    static std::string made_directory = made;
    std::atexit([] { rmdir(made_directory.c_str()); });  // emptied after each input
    return made_directory;
  }();
  const std::string path = directory + "/events.out.tfevents.1";
  const cohort::train::EventFileLimits limits{kMaxRecord, 1 << 20, 64};
  Write(path, input);
  cohort::train::EventFileScalars whole(path, limits);
  const cohort::Status whole_status = whole.Refresh();
  if (Points(whole) != whole.point_count() || whole.point_count() > limits.max_points) {
    Fail("the point count is off or over the bound");
  }

  // The same bytes arriving in two writes.
  Write(path, input.substr(0, size / 2));
  cohort::train::EventFileScalars grown(path, limits);
  (void)grown.Refresh();
  { std::ofstream(path, std::ios::binary | std::ios::app) << input.substr(size / 2); }
  const cohort::Status grown_status = grown.Refresh();
  if (grown_status.ok() && whole_status.ok() && Points(grown) != Points(whole)) {
    Fail("reading in two halves gave other points than reading the whole file");
  }
  unlink(path.c_str());
  return 0;
}
