// ScratchDirectory: a fresh directory for one test's files, removed with everything in it when the
// object goes away.
//
// Every run gets its own directory (mkdtemp under $TMPDIR, or /tmp), so that runs side by side,
// or a run after one that crashed, never meet each other's files:
//
//   ScratchDirectory scratch("cohort-store-test");
//   WriteText(scratch.path() / "job.yaml", manifest);
#pragma once

#include <filesystem>
#include <string>

namespace cohort::testing {

class ScratchDirectory {
 public:
  // `prefix` names the directory (prefix-XXXXXX) so that a leftover says which test made it.
  explicit ScratchDirectory(const std::string& prefix = "cohort-test");
  ~ScratchDirectory();
  ScratchDirectory(const ScratchDirectory&) = delete;
  ScratchDirectory& operator=(const ScratchDirectory&) = delete;

  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

}  // namespace cohort::testing
