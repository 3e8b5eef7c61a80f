// Where a worker writes: the chief writes to the real directory, every other worker to
// <dir>/workertemp_<task index>, which it removes after each write.
//
// This is TensorFlow's distributed_file_utils rule (write_dirpath / remove_temp_dirpath): every
// worker runs the same save code, but only one copy lands where users look. Cohort keeps the rule
// for TensorBoard logs (small, and written by each worker's own writer) and drops it for model
// weights: checkpoints, backups and saved models are written by the chief alone, since a
// non-chief's full copy of every weight, deleted at once, would only multiply the disk space a
// save needs (and fill a disk sooner). The workers stay in step without it: the next collective
// waits for the chief.
#pragma once

#include <string>

#include "base/status.h"
#include "train/callback.h"

namespace cohort::train {

// `dir` for the chief or a single worker, else `dir`/workertemp_<plan.task_index>. Does not
// create anything.
std::string WriteDirPath(const std::string& dir, const FitPlan& plan);

// Creates `dir` and its parents.
Status MakeDirectories(const std::string& dir);

// Removes WriteDirPath(dir, plan) recursively when it is a worker's temporary directory; does
// nothing for the chief.
Status RemoveTempWriteDir(const std::string& dir, const FitPlan& plan);

}  // namespace cohort::train
