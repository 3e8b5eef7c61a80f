#include "exec/supervisor_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <utility>

#include "base/file.h"

namespace cohort::exec {
namespace {

std::filesystem::path LockPath(const std::filesystem::path& job_directory) {
  return job_directory / "supervisor.lock";
}

}  // namespace

SupervisorLock::~SupervisorLock() { Close(); }

SupervisorLock::SupervisorLock(SupervisorLock&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)) {}

SupervisorLock& SupervisorLock::operator=(SupervisorLock&& other) noexcept {
  if (this != &other) {
    Close();
    fd_ = std::exchange(other.fd_, -1);
  }
  return *this;
}

// Closing, never LOCK_UN: a supervisor started by `cohort submit` shares this open file
// description, and an explicit unlock would drop the lock for it too.
void SupervisorLock::Close() {
  if (fd_ >= 0) close(fd_);
  fd_ = -1;
}

Status SupervisorLock::Acquire(const std::filesystem::path& job_directory) {
  Close();
  std::filesystem::path path = LockPath(job_directory);
  fd_ = open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd_ < 0) return Status::IOError("cannot open " + path.string() + ": " + ErrnoMessage(errno));
  if (flock(fd_, LOCK_EX | LOCK_NB) != 0) {
    Close();
    return Status::FailedPrecondition("another supervisor already runs the job in " +
                                      job_directory.string());
  }
  return Status::OK();
}

Status SupervisorLock::Adopt(int fd, const std::filesystem::path& job_directory) {
  Close();
  std::filesystem::path path = LockPath(job_directory);
  struct stat inherited {};
  struct stat expected {};
  if (fd < 0 || fstat(fd, &inherited) != 0 || stat(path.c_str(), &expected) != 0 ||
      inherited.st_dev != expected.st_dev || inherited.st_ino != expected.st_ino) {
    return Status::InvalidArgument("descriptor " + std::to_string(fd) + " is not open on " +
                                   path.string());
  }
  // On the open file description that already holds the lock this succeeds at once; it fails only
  // when someone else holds it.
  if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
    return Status::FailedPrecondition("descriptor " + std::to_string(fd) +
                                      " does not hold the lock " + path.string());
  }
  fcntl(fd, F_SETFD, FD_CLOEXEC);
  fd_ = fd;
  return Status::OK();
}

bool SupervisorLock::IsHeld(const std::filesystem::path& job_directory) {
  int fd = open(LockPath(job_directory).c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  bool held = flock(fd, LOCK_SH | LOCK_NB) != 0 && errno == EWOULDBLOCK;
  close(fd);
  return held;
}

}  // namespace cohort::exec
