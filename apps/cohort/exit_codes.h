// The exit status of every `cohort` command, documented in `cohort --help`, docs/cli.md and the
// README, and the one mapping from a Status to it: every command, local or --kubernetes, exits
// through ExitCodeFor.
#pragma once

#include "base/status.h"
#include "job/common_types.h"
#include "job/reconciler.h"

namespace cohort::cli {

inline constexpr int kExitSucceeded = 0;     // command done; for run/wait: the job Succeeded
inline constexpr int kExitJobFailed = 1;     // run/wait: the job Failed
inline constexpr int kExitInvalidInput = 2;  // bad spec or job file, flags, name taken, unmapped
                                             // image, a request the job cannot take
inline constexpr int kExitError = 3;         // not found, I/O error, wait timed out, the
                                             // cluster unreachable or refusing

// InvalidArgument and AlreadyExists are the user's input (2); everything else, NotFound
// included, is 3.
inline int ExitCodeFor(const Status& status) {
  switch (status.code()) {
    case Status::Code::kOk:
      return kExitSucceeded;
    case Status::Code::kInvalidArgument:
    case Status::Code::kAlreadyExists:
      return kExitInvalidInput;
    default:
      return kExitError;
  }
}

// run and wait: 0 when the job Succeeded, 1 when it Failed.
inline int ExitCodeForJob(const job::JobStatus& status) {
  return job::IsSucceeded(status) ? kExitSucceeded : kExitJobFailed;
}

}  // namespace cohort::cli
