#include "base/version.h"

#include <gtest/gtest.h>

#include <regex>

namespace cohort {
namespace {

TEST(VersionTest, CohortVersionIsMajorMinorPatch) {
  EXPECT_TRUE(std::regex_match(std::string(CohortVersion()), std::regex(R"(\d+\.\d+\.\d+)")))
      << CohortVersion();
}

TEST(VersionTest, TextNamesProgramVersionAndCompiler) {
  const std::string text = VersionText("cohort");
  EXPECT_EQ(text.rfind("cohort " + std::string(CohortVersion()) + "\nbuilt with ", 0), 0u) << text;
  EXPECT_TRUE(std::regex_search(text, std::regex(R"(built with (GCC|Clang) \S+.* \(\w+\)$)")))
      << text;
}

TEST(VersionTest, TextAppendsWhatElseTheProgramWasBuiltWith) {
  const std::string text = VersionText("cohort-train", "libtorch 1.13.0");
  EXPECT_EQ(text.substr(text.size() - std::string(", libtorch 1.13.0").size()), ", libtorch 1.13.0")
      << text;
  EXPECT_EQ(text.find('\n'), std::string("cohort-train ").size() + CohortVersion().size());
}

}  // namespace
}  // namespace cohort
