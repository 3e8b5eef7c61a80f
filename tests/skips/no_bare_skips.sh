#!/usr/bin/env bash
# The ctest test no_bare_skips: no test under tests/ calls GTEST_SKIP itself. A test that cannot run
# here uses COHORT_SKIP_OR_FAIL_IN_CI (tests/testing/host.h), which skips on a developer's machine
# and fails in CI, so that a CI machine never passes a test by skipping it.
# Usage: no_bare_skips.sh SOURCE_DIR
set -uo pipefail
cd "$1" || exit 1
found="$(grep -rn --include='*.cc' --include='*.h' 'GTEST_SKIP' tests | grep -v '^tests/testing/host\.h:')"
if [ -n "$found" ]; then
  echo "no_bare_skips: GTEST_SKIP outside tests/testing/host.h; use COHORT_SKIP_OR_FAIL_IN_CI:" >&2
  echo "$found" >&2
  exit 1
fi
echo "no_bare_skips: every skip goes through COHORT_SKIP_OR_FAIL_IN_CI"
