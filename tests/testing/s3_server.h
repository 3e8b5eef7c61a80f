// The real S3 server of the ctest fixture s3_server (scripts/s3-server.sh, tests/CMakeLists.txt),
// as the tests that use it find it.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <map>
#include <optional>
#include <string>

#include "base/file.h"
#include "testing/processes.h"
#include "testing/scratch_directory.h"

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

// Runs a Python snippet with Debian's boto3, `s3` bound to a client of the server whose settings
// are `server` (S3ServerEnvironment's); sys, json, hashlib and boto3 are imported. Expects it to
// exit 0 within 60 s and returns its output: the independent client that reads back what Cohort
// wrote and writes what Cohort must read.
inline std::string RunBoto3(const std::map<std::string, std::string>& server,
                            const std::string& snippet) {
  const std::string program =
      "import sys, json, hashlib, boto3\n"
      "s3 = boto3.client('s3', endpoint_url='" +
      server.at("AWS_ENDPOINT_URL") + "', aws_access_key_id='" + server.at("AWS_ACCESS_KEY_ID") +
      "', aws_secret_access_key='" + server.at("AWS_SECRET_ACCESS_KEY") +
      "', region_name='us-east-1')\n" + snippet;
  ScratchDirectory scratch("s3-boto3");
  const std::string script = (scratch.path() / "snippet.py").string();
  EXPECT_TRUE(WriteFileAtomically(script, program).ok());
  const CommandResult result = RunCommand("timeout 60 /usr/bin/python3 " + ShellQuote(script));
  EXPECT_EQ(result.exit_code, 0) << result.output;
  return result.output;
}

}  // namespace cohort::testing
