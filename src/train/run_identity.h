// RunIdentity: a name for one run of a job, for the markers a run leaves in directories that
// outlive it (the parameter-server chief's final_checkpoint, BackupAndRestore's
// training_complete), so that a run never takes the marker an earlier run left in the same
// directory for its own.
//
// Derived from the job secret (COHORT_JOB_SECRET), which every run of a job gets anew and every
// restart of a task within the run keeps, without revealing it:
//
//   const std::string run = RunIdentity(net::JobSecret::FromEnvironment());
//
// "" in open mode (no secret), where runs cannot be told apart.
#pragma once

#include <string>

#include "net/auth.h"

namespace cohort::train {

// 16 hex digits, or "" in open mode.
std::string RunIdentity(const net::JobSecret& secret);

}  // namespace cohort::train
