#include "net/shared_memory_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <string>

#include "base/file.h"

namespace cohort::net {

StatusOr<std::unique_ptr<SharedMemory>> MemoryFileSharedMemory::Create(size_t bytes) {
  if (bytes == 0 || bytes > kMaxBytes) {
    return Status::InvalidArgument("shared memory of " + std::to_string(bytes) + " bytes: 1 to " +
                                   std::to_string(kMaxBytes) + " bytes");
  }
  int fd = memfd_create("cohort-staging", MFD_CLOEXEC);
  if (fd < 0) return Status::Unavailable("memfd_create for shared memory: " + ErrnoMessage(errno));
  if (ftruncate(fd, static_cast<off_t>(bytes)) != 0) {
    Status failed = Status::Unavailable("sizing shared memory to " + std::to_string(bytes) +
                                        " bytes: " + ErrnoMessage(errno));
    close(fd);
    return failed;
  }
  void* base = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (base == MAP_FAILED) {
    Status failed = Status::Unavailable("mapping shared memory: " + ErrnoMessage(errno));
    close(fd);
    return failed;
  }
  // A fresh memory file reads as zeros.
  return std::unique_ptr<SharedMemory>(
      new MemoryFileSharedMemory(fd, static_cast<uint8_t*>(base), bytes));
}

StatusOr<std::unique_ptr<SharedMemory>> MemoryFileSharedMemory::Open(const Invitation& invitation,
                                                                     size_t bytes) {
  if (invitation[0] <= 0 || invitation[1] < 0 || bytes == 0 || bytes > kMaxBytes) {
    return Status::InvalidArgument(
        "no shared memory to open (process " + std::to_string(invitation[0]) + ", descriptor " +
        std::to_string(invitation[1]) + ", " + std::to_string(bytes) + " bytes)");
  }
  const std::string path =
      "/proc/" + std::to_string(invitation[0]) + "/fd/" + std::to_string(invitation[1]);
  int own = open(path.c_str(), O_RDWR | O_CLOEXEC);
  if (own < 0) {
    return Status::Unavailable("opening the shared memory " + path + ": " + ErrnoMessage(errno));
  }
  struct stat info {};
  if (fstat(own, &info) != 0 || static_cast<size_t>(info.st_size) != bytes) {
    close(own);
    return Status::FailedPrecondition("the shared memory " + path + " is not " +
                                      std::to_string(bytes) + " bytes long");
  }
  void* base = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, own, 0);
  close(own);
  if (base == MAP_FAILED) {
    return Status::Unavailable("mapping the shared memory " + path + ": " + ErrnoMessage(errno));
  }
  return std::unique_ptr<SharedMemory>(
      new MemoryFileSharedMemory(-1, static_cast<uint8_t*>(base), bytes));
}

MemoryFileSharedMemory::~MemoryFileSharedMemory() {
  munmap(base_, bytes_);
  Seal();
}

SharedMemory::Invitation MemoryFileSharedMemory::invitation() const {
  if (fd_ < 0) return {-1, -1};
  return {static_cast<int64_t>(getpid()), fd_};
}

void MemoryFileSharedMemory::Seal() {
  if (fd_ >= 0) close(fd_);
  fd_ = -1;
}

}  // namespace cohort::net
