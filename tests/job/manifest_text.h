// What the job tests share to vary a manifest written out in a test: tests/job/*_test.cc.
#pragma once

#include <gtest/gtest.h>

#include <string>

namespace cohort::job {

// `text` with the first `from` replaced by `to`; a `from` that is not there fails the test.
inline std::string Replace(std::string text, const std::string& from, const std::string& to) {
  size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos) text.replace(at, from.size(), to);
  return text;
}

}  // namespace cohort::job
