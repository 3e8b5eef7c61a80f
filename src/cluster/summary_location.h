// Where a task's TensorBoard event files are to be found: the second half of the contract between
// job control and the training runtime, beside TF_CONFIG.
//
// Job control may name a directory for each replica in COHORT_SUMMARY_DIR (locally
// `$COHORT_HOME/jobs/<ns>/<job>/summaries/<type>-<index>`, empty at first, the replica's alone).
// The runtime then:
//   - without a TensorBoard directory of its own (no --tensorboard_dir), writes its runs there:
//     <COHORT_SUMMARY_DIR>/train, /validation, /eval, each holding event files;
//   - with one, writes where it was told and places, for each run directory it writes, a
//     symbolic link <COHORT_SUMMARY_DIR>/<run> -> that directory (absolute), replacing an older
//     link of that name, so that the reader finds every run without being told where.
// A reader (the dashboard, view/training_scalars.h) looks only there: each entry of a replica's
// directory that is a directory, or a link to one, holding event files is a run. Replicas that do
// not get the variable (a Kubernetes pod: no disk shared with job control) write only where
// their flags say.
#pragma once

#include <cstdlib>
#include <string>

namespace cohort::cluster {

inline constexpr char kSummaryDirectoryVariable[] = "COHORT_SUMMARY_DIR";

// The directory job control named for this task, or "" when it named none.
inline std::string SummaryDirectoryFromEnvironment() {
  const char* value = std::getenv(kSummaryDirectoryVariable);
  return value != nullptr ? value : "";
}

}  // namespace cohort::cluster
