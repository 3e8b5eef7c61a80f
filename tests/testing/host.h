// Facts about the host a test runs on that decide between skipping and failing.
//
// Some tests need what a developer's machine may lack: root (network namespaces, a tmpfs to fill,
// a memory cgroup), the kernel letting one process read another's memory (process_vm_readv: Yama's
// ptrace_scope, CAP_SYS_PTRACE), the Kubernetes servers scripts/build-kube-apiserver.sh builds.
// Such a test skips there, saying why. CI (the CI environment variable set, as CI services do)
// runs ./run-tests.sh as root on Debian 12 with everything scripts/setup.sh installs, so there the
// same lack fails the test: a CI machine that cannot run a test never passes it silently.
// COHORT_SKIP_OR_FAIL_IN_CI is the one way a test skips (tests/skips/no_bare_skips.sh checks):
//
//   if (refused) COHORT_SKIP_OR_FAIL_IN_CI(CrossProcessReadsRefused());
//
// What ctest still reports as skipped is checked against tests/skip-allowlist.txt by
// ./run-tests.sh (scripts/check-skipped-tests.sh).
#pragma once

#include <gtest/gtest.h>

#include <string>

namespace cohort::testing {

// True when the CI environment variable is set to anything but "", "0" or "false".
bool RunningInCi();

// What the kernel refused and what decides it on this host: Yama's ptrace_scope and whether this
// process has CAP_SYS_PTRACE.
std::string CrossProcessReadsRefused();

}  // namespace cohort::testing

// Skips the calling test outside CI, saying `reason` (a std::string); fails it with the same
// reason when RunningInCi(). Returns from the calling function (a TEST body or SetUp) either way,
// as GTEST_SKIP and FAIL do.
#define COHORT_SKIP_OR_FAIL_IN_CI(reason)                                              \
  do {                                                                                 \
    const std::string cohort_skip_reason = (reason);                                   \
    if (::cohort::testing::RunningInCi()) {                                            \
      FAIL() << cohort_skip_reason                                                     \
             << " (CI is set: a CI machine must run this test; tests/testing/host.h)"; \
    }                                                                                  \
    GTEST_SKIP() << cohort_skip_reason;                                                \
  } while (false)
