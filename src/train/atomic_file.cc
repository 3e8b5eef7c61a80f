#include "train/atomic_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

namespace cohort::train {
namespace {

Status SyncPath(const std::string& path, bool directory) {
  const int fd = ::open(path.c_str(), (directory ? O_DIRECTORY : 0) | O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Status::IOError("cannot open " + path + ": " + std::strerror(errno));
  const int result = ::fsync(fd);
  const int error = errno;
  ::close(fd);
  if (result != 0) return Status::IOError("cannot fsync " + path + ": " + std::strerror(error));
  return Status::OK();
}

}  // namespace

Status ReplaceFileAtomically(const std::string& path,
                             const std::function<Status(const std::string& temp_path)>& write) {
  const std::filesystem::path target(path);
  const std::string temp = (target.parent_path() / ("." + target.filename().string() + ".tmp" +
                                                    std::to_string(::getpid())))
                               .string();
  Status status = write(temp);
  if (status.ok()) status = SyncPath(temp, /*directory=*/false);
  if (status.ok() && std::rename(temp.c_str(), path.c_str()) != 0) {
    status = Status::IOError("cannot rename " + temp + " to " + path + ": " + std::strerror(errno));
  }
  if (!status.ok()) {
    std::error_code ignored;
    std::filesystem::remove(temp, ignored);
    return status;
  }
  const std::string dir = target.has_parent_path() ? target.parent_path().string() : ".";
  return SyncPath(dir, /*directory=*/true);
}

Status WriteFileAtomically(const std::string& path, std::string_view content) {
  return ReplaceFileAtomically(path, [&](const std::string& temp) {
    std::FILE* file = std::fopen(temp.c_str(), "wb");
    if (file == nullptr) {
      return Status::IOError("cannot create " + temp + ": " + std::strerror(errno));
    }
    const bool written = std::fwrite(content.data(), 1, content.size(), file) == content.size();
    const bool closed = std::fclose(file) == 0;
    if (!written || !closed) return Status::IOError("cannot write " + temp);
    return Status::OK();
  });
}

}  // namespace cohort::train
