// The main of every Cohort gtest binary (library cohort_testing_main): gtest's, except that a run
// in which a test skipped and none failed exits with kSkippedExitCode (skip_exit_code.h) instead
// of 0, so that ctest does not report a binary it runs whole as Passed when a test in it skipped.
#include <gtest/gtest.h>

#include "testing/skip_exit_code.h"

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  const int failed = RUN_ALL_TESTS();
  if (failed != 0) return failed;
  if (::testing::UnitTest::GetInstance()->skipped_test_count() > 0) {
    return cohort::testing::kSkippedExitCode;
  }
  return 0;
}
