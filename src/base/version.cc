#include "base/version.h"

// COHORT_VERSION and COHORT_BUILD_TYPE come from src/CMakeLists.txt, for this file alone.
#ifndef COHORT_VERSION
#error "COHORT_VERSION must be defined by the build (src/CMakeLists.txt)"
#endif

namespace cohort {
namespace {

constexpr std::string_view kCompiler =
#if defined(__clang__)
    "Clang " __clang_version__;
#elif defined(__GNUC__)
    "GCC " __VERSION__;
#else
    "an unknown compiler";
#endif

}  // namespace

std::string_view CohortVersion() { return COHORT_VERSION; }

std::string VersionText(std::string_view program, std::string_view also_built_with) {
  std::string text;
  text.append(program).append(" ").append(CohortVersion()).append("\nbuilt with ");
  text.append(kCompiler).append(" (").append(COHORT_BUILD_TYPE).append(")");
  if (!also_built_with.empty()) text.append(", ").append(also_built_with);
  return text;
}

}  // namespace cohort
