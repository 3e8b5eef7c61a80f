// The directories a job declares as its own, for `cohort delete --purge`.
//
// A job declares a directory as its own by naming it, in its replicas' command or args, as an
// absolute path with $(COHORT_JOB_NAME) as one whole component (job/variable_references.h):
// `--checkpoint_path=/tmp/cohort-taxi/$(COHORT_JOB_NAME)/checkpoints` declares
// /tmp/cohort-taxi/taxi for job taxi, the path up to and including the job's name. An argument
// counts whole (`/out/$(COHORT_JOB_NAME)`) or as the value of a `-flag=value`. Nothing else is
// declared, so nothing else is removed: not a path where the name is only part of a component
// (/tmp/run-$(COHORT_JOB_NAME)), a relative path, one with `.` or `..` components or another
// $(VAR) reference before the name, one directly under `/`, a path inside a shell script, a
// variable's value, or a program's default. A directory named after the job under a path of the
// manifest's is the job's alone: another job of another name writes elsewhere.
#pragma once

#include <filesystem>
#include <functional>
#include <vector>

#include "base/status.h"
#include "job/common_types.h"

namespace cohort::exec {

// The job's own directories, as declared above, each once, in the order first named.
std::vector<std::filesystem::path> JobOutputDirectories(const job::Job& job);

// Removes each of `directories` that exists (with what it holds; a symbolic link is removed, not
// followed) and calls `on_removed` with it. Stops at the first that cannot be removed: IOError
// naming it and why.
Status RemoveJobOutputs(const std::vector<std::filesystem::path>& directories,
                        const std::function<void(const std::filesystem::path&)>& on_removed);

}  // namespace cohort::exec
