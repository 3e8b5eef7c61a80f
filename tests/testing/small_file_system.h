// SmallFileSystem: a tmpfs of a few kilobytes or megabytes, mounted for one test, so that a
// write can run out of space for real (ENOSPC from the kernel, not a fake writer).
//
// Mounting needs root (or CAP_SYS_ADMIN). Where the mount is refused the test skips, saying why;
// in CI (testing/host.h) the same refusal fails the test, so a CI machine never passes it silently:
//
//   SmallFileSystem disk(64 * 1024);
//   if (!disk.mounted()) COHORT_SKIP_OR_FAIL_IN_CI(disk.why_not());
//   ... write under disk.path() ...
#pragma once

#include <cstddef>
#include <filesystem>
#include <string>

#include "testing/scratch_directory.h"

namespace cohort::testing {

class SmallFileSystem {
 public:
  // Mounts a tmpfs of `bytes` (rounded up to whole pages by the kernel) on a fresh directory.
  explicit SmallFileSystem(size_t bytes);
  // Unmounts it (lazily, should a child process still hold a file open).
  ~SmallFileSystem();
  SmallFileSystem(const SmallFileSystem&) = delete;
  SmallFileSystem& operator=(const SmallFileSystem&) = delete;

  bool mounted() const { return mounted_; }
  // Why the mount was refused ("" when mounted).
  const std::string& why_not() const { return why_not_; }
  const std::filesystem::path& path() const { return scratch_.path(); }

 private:
  ScratchDirectory scratch_{"cohort-small-fs"};
  bool mounted_ = false;
  std::string why_not_;
};

}  // namespace cohort::testing
