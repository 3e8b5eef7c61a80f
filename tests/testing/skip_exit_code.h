// The exit status by which a test binary tells ctest that it skipped a test.
//
// gtest's own main exits 0 when a test skips, so a binary that ctest runs whole (cohort_test's
// WHOLE_BINARY, an add_test of a gtest binary) would be reported Passed although a test in it never
// ran. Every Cohort test binary's main (gtest_main.cc) exits with kSkippedExitCode instead when at
// least one test skipped and none failed, and those tests are registered with SKIP_RETURN_CODE
// kSkippedExitCode (cmake/CohortModule.cmake), so ctest reports them as skipped; ./run-tests.sh
// then fails unless tests/skip-allowlist.txt names them with a reason.
#pragma once

namespace cohort::testing {

// 77, the "skipped" status of automake's test harness, which ctest's SKIP_RETURN_CODE and
// bench/common/smoke.sh use too.
inline constexpr int kSkippedExitCode = 77;

}  // namespace cohort::testing
