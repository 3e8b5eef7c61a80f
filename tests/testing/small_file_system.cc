#include "testing/small_file_system.h"

#include <sys/mount.h>

#include <cerrno>
#include <cstring>

namespace cohort::testing {

SmallFileSystem::SmallFileSystem(size_t bytes) {
  const std::string options = "size=" + std::to_string(bytes) + ",mode=0777";
  if (mount("tmpfs", path().c_str(), "tmpfs", MS_NOSUID | MS_NODEV, options.c_str()) == 0) {
    mounted_ = true;
    return;
  }
  why_not_ = "cannot mount a " + std::to_string(bytes) + "-byte tmpfs on " + path().string() +
             ": " + std::strerror(errno) + " (the test needs root or CAP_SYS_ADMIN)";
}

SmallFileSystem::~SmallFileSystem() {
  if (mounted_) umount2(path().c_str(), MNT_DETACH);
}

}  // namespace cohort::testing
