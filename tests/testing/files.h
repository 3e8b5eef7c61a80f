// Whole files for tests: read one ("" when it is absent), write one, wait for one to appear.
#pragma once

#include <chrono>
#include <filesystem>
#include <string>

namespace cohort::testing {

// The whole file, or "" when it cannot be read.
std::string ReadText(const std::filesystem::path& path);

// Replaces `path` with `contents`.
void WriteText(const std::filesystem::path& path, const std::string& contents);

// Waits until `path` exists, at most `timeout`; false when it never appeared.
bool WaitForFile(const std::filesystem::path& path, std::chrono::milliseconds timeout);

}  // namespace cohort::testing
