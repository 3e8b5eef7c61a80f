// Facts about the host a test runs on that decide between skipping and failing.
//
// Some tests need the kernel to let one process read another's memory (process_vm_readv, used by
// the same-host collectives and the parameter server's zero-copy pushes). A developer's machine
// may refuse it (Yama's ptrace_scope, a container without CAP_SYS_PTRACE), and such a test skips
// there, saying why. In CI (the CI environment variable set, as CI services do) the same refusal
// fails the test, so that a CI machine that cannot run it never passes it silently:
//
//   if (refused) {
//     if (RunningInCi()) FAIL() << CrossProcessReadsRefused();
//     GTEST_SKIP() << CrossProcessReadsRefused();
//   }
#pragma once

#include <string>

namespace cohort::testing {

// True when the CI environment variable is set to anything but "", "0" or "false".
bool RunningInCi();

// What the kernel refused and what decides it on this host: Yama's ptrace_scope and whether this
// process has CAP_SYS_PTRACE.
std::string CrossProcessReadsRefused();

}  // namespace cohort::testing
