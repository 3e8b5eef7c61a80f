// Compiled, not run, by the tests status_dropped_does_not_build and
// status_ignored_on_purpose_builds (tests/CMakeLists.txt): with COHORT_DROP_RESULT defined it
// drops a Status and a StatusOr, which the build's flags must refuse; without, it drops them
// through IgnoreError, which must compile. The pair shows that the refusal is for the dropped
// results and nothing else.
#include "base/status.h"

namespace {

cohort::Status Flush() { return cohort::Status::IOError("disk full"); }
cohort::StatusOr<int> Count() { return 3; }

}  // namespace

void Caller() {
#ifdef COHORT_DROP_RESULT
  Flush();
  Count();
#else
  cohort::IgnoreError(Flush(), "a test of the rule");
  cohort::IgnoreError(Count(), "a test of the rule");
#endif
}
