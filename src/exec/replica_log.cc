#include "exec/replica_log.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <optional>
#include <string>
#include <utility>

#include "base/file.h"

namespace cohort::exec {
namespace fs = std::filesystem;

namespace {

fs::path WithSuffix(const fs::path& path, const std::string& suffix) {
  fs::path result = path;
  result += suffix;
  return result;
}

// "4096", "64K", "64M", "1G": the number of bytes, or nullopt.
std::optional<uint64_t> ParseBytes(const std::string& text) {
  if (text.empty() || text.size() > 20) return std::nullopt;
  size_t digits = 0;
  while (digits < text.size() && text[digits] >= '0' && text[digits] <= '9') ++digits;
  if (digits == 0) return std::nullopt;
  const uint64_t number = std::strtoull(text.substr(0, digits).c_str(), nullptr, 10);
  const std::string unit = text.substr(digits);
  int shift = 0;
  if (unit == "K" || unit == "Ki") {
    shift = 10;
  } else if (unit == "M" || unit == "Mi") {
    shift = 20;
  } else if (unit == "G" || unit == "Gi") {
    shift = 30;
  } else if (!unit.empty()) {
    return std::nullopt;
  }
  if (number > (uint64_t{1} << 40) >> shift) return std::nullopt;
  return number << shift;
}

}  // namespace

StatusOr<LogRotation> LogRotation::FromEnvironment() {
  LogRotation rotation;
  if (const char* text = std::getenv("COHORT_LOG_MAX_BYTES"); text != nullptr && *text != '\0') {
    std::optional<uint64_t> bytes = ParseBytes(text);
    if (!bytes || *bytes < 4096) {
      return Status::InvalidArgument(
          "COHORT_LOG_MAX_BYTES=\"" + std::string(text).substr(0, 40) +
          "\": must be a size of at least 4096 bytes, e.g. 1048576, 64M or 1G");
    }
    rotation.max_bytes = *bytes;
  }
  if (const char* text = std::getenv("COHORT_LOG_MAX_FILES"); text != nullptr && *text != '\0') {
    const std::string value(text);
    if (value.size() > 3 || value.find_first_not_of("0123456789") != std::string::npos ||
        std::atoi(text) > 100) {
      return Status::InvalidArgument("COHORT_LOG_MAX_FILES=\"" + value.substr(0, 40) +
                                     "\": must be a number of files from 0 to 100");
    }
    rotation.max_files = std::atoi(text);
  }
  return rotation;
}

StatusOr<ReplicaLog> ReplicaLog::Open(fs::path path, LogRotation rotation) {
  const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) {
    return Status::IOError("cannot open log " + path.string() + ": " + ErrnoMessage(errno));
  }
  struct stat info {};
  const uint64_t size = fstat(fd, &info) == 0 ? static_cast<uint64_t>(info.st_size) : 0;
  ReplicaLog log(std::move(path), rotation, fd, size);
  log.BeginRun();
  return log;
}

ReplicaLog::ReplicaLog(ReplicaLog&& other) noexcept
    : path_(std::move(other.path_)),
      rotation_(other.rotation_),
      fd_(std::exchange(other.fd_, -1)),
      size_(other.size_),
      run_start_(other.run_start_) {}

ReplicaLog& ReplicaLog::operator=(ReplicaLog&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) close(fd_);
    path_ = std::move(other.path_);
    rotation_ = other.rotation_;
    fd_ = std::exchange(other.fd_, -1);
    size_ = other.size_;
    run_start_ = other.run_start_;
  }
  return *this;
}

ReplicaLog::~ReplicaLog() {
  if (fd_ >= 0) close(fd_);
}

Status ReplicaLog::Append(std::string_view data) {
  while (!data.empty()) {
    if (size_ >= rotation_.max_bytes) COHORT_RETURN_IF_ERROR(Rotate());
    const size_t room =
        static_cast<size_t>(std::min<uint64_t>(rotation_.max_bytes - size_, data.size()));
    size_t written = 0;
    while (written < room) {
      const ssize_t n = write(fd_, data.data() + written, room - written);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0)
        return Status::IOError("cannot write " + path_.string() + ": " + ErrnoMessage(errno));
      written += static_cast<size_t>(n);
    }
    size_ += room;
    data.remove_prefix(room);
  }
  return Status::OK();
}

Status ReplicaLog::Rotate() {
  close(fd_);
  fd_ = -1;
  std::error_code ignored;  // a rotated file that is missing is not kept, whatever happened to it
  std::error_code error;    // moving the current file out of the way must work
  const fs::path start = WithSuffix(path_, ".start");
  if (!fs::exists(start, ignored)) {
    fs::rename(path_, start, error);  // the first file: the job's start, kept for good
  } else {
    // .N-1 -> .N ... .1 -> .2, the oldest dropped, then the current file becomes .1.
    fs::remove(WithSuffix(path_, "." + std::to_string(rotation_.max_files)), ignored);
    for (int i = rotation_.max_files - 1; i >= 1; --i) {
      const fs::path older = WithSuffix(path_, "." + std::to_string(i));
      if (fs::exists(older, ignored)) {
        fs::rename(older, WithSuffix(path_, "." + std::to_string(i + 1)), ignored);
      }
    }
    if (rotation_.max_files > 0) {
      fs::rename(path_, WithSuffix(path_, ".1"), error);
    } else {
      fs::remove(path_, error);
    }
  }
  if (error) return Status::IOError("cannot rotate " + path_.string() + ": " + error.message());
  fd_ = open(path_.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_TRUNC | O_CLOEXEC, 0644);
  if (fd_ < 0) {
    return Status::IOError("cannot open log " + path_.string() + ": " + ErrnoMessage(errno));
  }
  size_ = 0;
  run_start_ = 0;
  return Status::OK();
}

}  // namespace cohort::exec
