// storage_bench: one checkpoint-sized upload and download through Cohort's object storage
// (base/storage.h, the code cohort-train's --checkpoint_path uses), timed inside the process so
// that start-up is not counted. bench/storage/storage_bench.py runs it in turns with boto3 against
// the same server and reports the ratio.
//
// Usage: storage_bench --url s3://bucket/key --bytes N
// Settings from the environment, as cohort-train reads them (AWS_ENDPOINT_URL, keys: s3.env of
// scripts/s3-server.sh). Prints one line:
//   cohort put <bytes> <seconds> get <seconds>
// and exits 1 with the error when an operation fails or the bytes read back differ.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>

#include "base/storage.h"

namespace {

int Fail(const std::string& message) {
  std::fprintf(stderr, "storage_bench: %s\n", message.c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  std::string url;
  size_t bytes = 0;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--url") {
      url = argv[i + 1];
    } else if (flag == "--bytes") {
      bytes = std::strtoull(argv[i + 1], nullptr, 10);
    } else {
      return Fail("unknown flag " + flag + " (usage: storage_bench --url URL --bytes N)");
    }
  }
  if (url.empty() || bytes == 0 || bytes > (size_t{4} << 30)) {
    return Fail("usage: storage_bench --url s3://bucket/key --bytes N (1 to 4 GiB)");
  }
  // Random bytes, as a checkpoint's floats are to a compressor.
  std::string contents(bytes, '\0');
  std::mt19937_64 random(42);
  for (size_t i = 0; i + 8 <= bytes; i += 8) {
    const uint64_t value = random();
    std::memcpy(contents.data() + i, &value, 8);
  }
  using Clock = std::chrono::steady_clock;
  const auto put_start = Clock::now();
  if (cohort::Status written = cohort::WriteStorageFileAtomically(url, contents); !written.ok()) {
    return Fail(written.ToString());
  }
  const double put_seconds = std::chrono::duration<double>(Clock::now() - put_start).count();
  const auto get_start = Clock::now();
  cohort::StatusOr<std::string> read = cohort::ReadStorageFile(url, bytes);
  const double get_seconds = std::chrono::duration<double>(Clock::now() - get_start).count();
  if (!read.ok()) return Fail(read.status().ToString());
  if (*read != contents) return Fail("the bytes read back from " + url + " differ");
  if (cohort::Status removed = cohort::RemoveStorageFile(url); !removed.ok()) {
    return Fail(removed.ToString());
  }
  std::printf("cohort put %zu %.6f get %.6f\n", bytes, put_seconds, get_seconds);
  return 0;
}
