#include "testing/scratch_directory.h"

#include <stdlib.h>

#include <cstdio>
#include <cstdlib>
#include <vector>

namespace cohort::testing {

ScratchDirectory::ScratchDirectory(const std::string& prefix) {
  const char* tmpdir = std::getenv("TMPDIR");
  std::string pattern =
      (std::filesystem::path(tmpdir != nullptr && *tmpdir != '\0' ? tmpdir : "/tmp") /
       (prefix + "-XXXXXX"))
          .string();
  std::vector<char> buffer(pattern.begin(), pattern.end());
  buffer.push_back('\0');
  if (mkdtemp(buffer.data()) == nullptr) {
    std::perror(("ScratchDirectory: mkdtemp " + pattern).c_str());
    std::abort();
  }
  path_ = buffer.data();
}

ScratchDirectory::~ScratchDirectory() {
  std::error_code ignored;
  std::filesystem::remove_all(path_, ignored);
}

}  // namespace cohort::testing
