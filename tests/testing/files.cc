#include "testing/files.h"

#include <fstream>
#include <sstream>

#include "testing/wait.h"

namespace cohort::testing {

std::string ReadText(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

void WriteText(const std::filesystem::path& path, const std::string& contents) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << contents;
}

bool WaitForFile(const std::filesystem::path& path, std::chrono::milliseconds timeout) {
  return WaitUntil(
      [&] {
        std::error_code ignored;
        return std::filesystem::exists(path, ignored);
      },
      timeout);
}

}  // namespace cohort::testing
