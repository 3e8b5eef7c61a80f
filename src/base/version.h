// What a Cohort program is, for its `--version`: Cohort's version (project(VERSION ...) in the top
// CMakeLists.txt) and what the program was built with.
//
//   app.set_version_flag("--version", VersionText("cohort"));
//   // cohort 0.1.0
//   // built with GCC 12.2.0 (RelWithDebInfo)
//
// A program built on more than Cohort's own code names that too, e.g. a training program its
// libtorch: VersionText("cohort-train", "libtorch 1.13.0").
#pragma once

#include <string>
#include <string_view>

namespace cohort {

// Cohort's version, "MAJOR.MINOR.PATCH".
std::string_view CohortVersion();

// Two lines without a trailing newline: "<program> <version>" and "built with <compiler> (<build
// type>)", followed by ", <also_built_with>" when that is not empty.
std::string VersionText(std::string_view program, std::string_view also_built_with = "");

}  // namespace cohort
