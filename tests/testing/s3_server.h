// The real S3 server of the ctest fixture s3_server (scripts/s3-server.sh, tests/CMakeLists.txt),
// as the tests that use it find it.
#pragma once

#include <cstdlib>
#include <map>
#include <optional>
#include <string>

#include "base/file.h"

namespace cohort::testing {

// The server's settings (AWS_ENDPOINT_URL, AWS_ACCESS_KEY_ID, ...) from the KEY=VALUE lines of
// $COHORT_S3_SERVER_DIR/s3.env, or nullopt when the fixture did not run (a binary started by hand
// without COHORT_S3_SERVER_DIR) or left no readable file.
inline std::optional<std::map<std::string, std::string>> S3ServerEnvironment() {
  const char* directory = std::getenv("COHORT_S3_SERVER_DIR");
  if (directory == nullptr) return std::nullopt;
  StatusOr<std::string> text = ReadWholeFile(std::string(directory) + "/s3.env", 1 << 16);
  if (!text.ok()) return std::nullopt;
  std::map<std::string, std::string> variables;
  size_t at = 0;
  while (at < text->size()) {
    size_t end = text->find('\n', at);
    if (end == std::string::npos) end = text->size();
    const std::string line = text->substr(at, end - at);
    const size_t equals = line.find('=');
    if (equals != std::string::npos) variables[line.substr(0, equals)] = line.substr(equals + 1);
    at = end + 1;
  }
  return variables;
}

}  // namespace cohort::testing
