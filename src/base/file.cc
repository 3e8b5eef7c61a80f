#include "base/file.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <system_error>
#include <utility>

namespace cohort {
namespace fs = std::filesystem;
namespace {

fs::path TemporaryPathFor(const fs::path& path) {
  return path.parent_path() / ("." + path.filename().string() + ".tmp" + std::to_string(getpid()));
}

Status SyncFile(const fs::path& path) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Status::IOError("cannot open " + path.string() + ": " + ErrnoMessage(errno));
  const int result = fsync(fd);
  const int error = errno;
  close(fd);
  if (result != 0)
    return Status::IOError("cannot fsync " + path.string() + ": " + ErrnoMessage(error));
  return Status::OK();
}

Status WriteAll(int fd, std::string_view contents, const fs::path& path) {
  size_t written = 0;
  while (written < contents.size()) {
    const ssize_t n = write(fd, contents.data() + written, contents.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Status::IOError("cannot write " + path.string() + ": " + ErrnoMessage(errno));
    written += static_cast<size_t>(n);
  }
  return Status::OK();
}

}  // namespace

std::string ErrnoMessage(int error_number) {
  char buffer[256];
  // GNU strerror_r returns the message, which may or may not be `buffer`.
  return strerror_r(error_number, buffer, sizeof(buffer));
}

Status SyncDirectory(const fs::path& directory) {
  const fs::path name = directory.empty() ? fs::path(".") : directory;
  const int fd = open(name.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) {
    return Status::IOError("cannot open directory " + name.string() + ": " + ErrnoMessage(errno));
  }
  const int result = fsync(fd);
  const int error = errno;
  close(fd);
  if (result != 0)
    return Status::IOError("cannot fsync " + name.string() + ": " + ErrnoMessage(error));
  return Status::OK();
}

Status ReplaceFileAtomically(const fs::path& path,
                             const std::function<Status(const fs::path& temporary_path)>& write) {
  const fs::path temporary = TemporaryPathFor(path);
  Status status = write(temporary);
  if (status.ok()) status = SyncFile(temporary);
  if (status.ok() && rename(temporary.c_str(), path.c_str()) != 0) {
    status = Status::IOError("cannot rename " + temporary.string() + " to " + path.string() + ": " +
                             ErrnoMessage(errno));
  }
  if (!status.ok()) {
    unlink(temporary.c_str());
    return status;
  }
  return SyncDirectory(path.parent_path());
}

Status WriteFileAtomically(const fs::path& path, std::string_view contents, mode_t permissions) {
  return ReplaceFileAtomically(path, [&](const fs::path& temporary) {
    // A leftover temporary file (of a killed writer with our pid) may have other permissions:
    // remove it, then create ours exclusively.
    unlink(temporary.c_str());
    const int fd = open(temporary.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, permissions);
    if (fd < 0) {
      return Status::IOError("cannot create " + temporary.string() + ": " + ErrnoMessage(errno));
    }
    Status written = WriteAll(fd, contents, temporary);
    if (close(fd) != 0 && written.ok()) {
      written = Status::IOError("cannot write " + temporary.string() + ": " + ErrnoMessage(errno));
    }
    return written;
  });
}

namespace {

// The pid in ".<name>.tmp<pid>", or -1 when `file` is not named like a temporary file.
pid_t TemporaryFileWriter(const std::string& file) {
  const size_t mark = file.rfind(".tmp");
  if (file.size() < 2 || file[0] != '.' || mark == std::string::npos || mark == 0) return -1;
  const std::string digits = file.substr(mark + 4);
  if (digits.empty() || digits.size() > 9) return -1;
  for (char c : digits) {
    if (c < '0' || c > '9') return -1;
  }
  return static_cast<pid_t>(std::stol(digits));
}

bool IsOtherLiveProcess(pid_t pid) {
  if (pid <= 0 || pid == getpid()) return false;
  return kill(pid, 0) == 0 || errno == EPERM;
}

}  // namespace

StatusOr<int> RemoveStaleTemporaryFiles(const fs::path& directory) {
  std::error_code error;
  fs::directory_iterator entries(directory, error);
  if (error == std::errc::no_such_file_or_directory) return 0;
  if (error) return Status::IOError("cannot list " + directory.string() + ": " + error.message());
  int removed = 0;
  for (const fs::directory_entry& entry : entries) {
    const pid_t writer = TemporaryFileWriter(entry.path().filename().string());
    if (writer < 0 || IsOtherLiveProcess(writer) || !entry.is_regular_file(error)) continue;
    if (unlink(entry.path().c_str()) != 0 && errno != ENOENT) {
      return Status::IOError("cannot remove " + entry.path().string() + ": " + ErrnoMessage(errno));
    }
    ++removed;
  }
  return removed;
}

Status WriteFileInPlace(const fs::path& path, std::string_view contents) {
  const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return Status::IOError("cannot open " + path.string() + ": " + ErrnoMessage(errno));
  Status written = WriteAll(fd, contents, path);
  if (close(fd) != 0 && written.ok()) {
    written = Status::IOError("cannot write " + path.string() + ": " + ErrnoMessage(errno));
  }
  return written;
}

StatusOr<std::string> ReadWholeFile(const fs::path& path, size_t max_bytes) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    const int error = errno;
    const std::string message = "cannot open " + path.string() + ": " + ErrnoMessage(error);
    return error == ENOENT ? Status::NotFound(message) : Status::IOError(message);
  }
  StatusOr<std::string> contents = ReadWholeDescriptor(fd, path.string(), max_bytes);
  close(fd);
  return contents;
}

StatusOr<FileReader> FileReader::Open(const fs::path& path) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    const int error = errno;
    const std::string message = "cannot open " + path.string() + ": " + ErrnoMessage(error);
    return error == ENOENT ? Status::NotFound(message) : Status::IOError(message);
  }
  struct stat info {};
  if (fstat(fd, &info) != 0 || !S_ISREG(info.st_mode)) {
    close(fd);
    return Status::InvalidArgument("cannot read " + path.string() + ": not a regular file");
  }
  return FileReader(fd, path);
}

FileReader::FileReader(FileReader&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)), path_(std::move(other.path_)) {}

FileReader& FileReader::operator=(FileReader&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) close(fd_);
    fd_ = std::exchange(other.fd_, -1);
    path_ = std::move(other.path_);
  }
  return *this;
}

FileReader::~FileReader() {
  if (fd_ >= 0) close(fd_);
}

uint64_t FileReader::Size() const {
  struct stat info {};
  if (fstat(fd_, &info) != 0) return 0;
  return static_cast<uint64_t>(info.st_size);
}

StatusOr<std::string> FileReader::ReadAt(uint64_t offset, size_t max_bytes) const {
  const uint64_t size = Size();
  if (offset >= size) return std::string();
  std::string contents(static_cast<size_t>(std::min<uint64_t>(max_bytes, size - offset)), '\0');
  size_t done = 0;
  while (done < contents.size()) {
    const ssize_t n = pread(fd_, contents.data() + done, contents.size() - done,
                            static_cast<off_t>(offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Status::IOError("cannot read " + path_.string() + ": " + ErrnoMessage(errno));
    if (n == 0) break;  // the end of the file
    done += static_cast<size_t>(n);
  }
  contents.resize(done);
  return contents;
}

namespace {

// At most `max_bytes` of the regular file `path` past `offset`: its first ones, or its last ones
// when `from_end`. Fewer when the file ends sooner.
StatusOr<std::string> ReadRegularFileSpan(const fs::path& path, size_t offset, size_t max_bytes,
                                          bool from_end) {
  StatusOr<FileReader> file = FileReader::Open(path);
  if (!file.ok()) {
    return file.status().code() == Status::Code::kInvalidArgument
               ? Status::IOError(file.status().message())
               : file.status();
  }
  const uint64_t size = file->Size();
  uint64_t start = offset;
  if (from_end) start = std::max<uint64_t>(offset, size > max_bytes ? size - max_bytes : 0);
  return file->ReadAt(start, max_bytes);
}

}  // namespace

StatusOr<std::string> ReadFileTail(const fs::path& path, size_t offset, size_t max_bytes) {
  return ReadRegularFileSpan(path, offset, max_bytes, /*from_end=*/true);
}

StatusOr<std::string> ReadFileRange(const fs::path& path, size_t offset, size_t max_bytes) {
  return ReadRegularFileSpan(path, offset, max_bytes, /*from_end=*/false);
}

StatusOr<std::string> ReadWholeDescriptor(int fd, const std::string& name, size_t max_bytes) {
  struct stat info {};
  if (fstat(fd, &info) == 0 && S_ISDIR(info.st_mode)) {
    return Status::InvalidArgument(name + " is a directory, not a file");
  }
  std::string contents;
  if (S_ISREG(info.st_mode) && static_cast<size_t>(info.st_size) <= max_bytes) {
    contents.reserve(static_cast<size_t>(info.st_size));
  }
  char buffer[64 * 1024];
  while (true) {
    const ssize_t n = read(fd, buffer, sizeof(buffer));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int error = errno;
      return Status::IOError("cannot read " + name + ": " + ErrnoMessage(error));
    }
    if (n == 0) break;
    if (contents.size() + static_cast<size_t>(n) > max_bytes) {
      return Status::InvalidArgument(name + " holds more than " + std::to_string(max_bytes) +
                                     " bytes");
    }
    contents.append(buffer, static_cast<size_t>(n));
  }
  return contents;
}

}  // namespace cohort
