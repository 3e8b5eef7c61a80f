// The job secret: a fresh random value that every replica of one job shares in COHORT_JOB_SECRET,
// with which Cohort's transport (net/auth.h) proves that two tasks belong to the same job, so that
// a task of another job (or any other program) that reaches a replica's port is refused.
//
// Both executors make one per job: the local one keeps it in the job's directory
// (exec/job_store.h) and puts it in each replica's environment; the Kubernetes operator keeps it
// in a Secret owned by the job (kube/objects/objects.h) that every replica's container reads
// through env valueFrom.secretKeyRef.
//
//   StatusOr<std::string> secret = NewJobSecret();  // 64 lowercase hex digits
#pragma once

#include <string>

#include "base/status.h"

namespace cohort::job {

// The environment variable that carries the job secret to a replica.
inline constexpr char kJobSecretVariable[] = "COHORT_JOB_SECRET";

// The number of random bytes in a job secret (256 bits), written as twice as many hex digits.
inline constexpr size_t kJobSecretBytes = 32;

// A new job secret: kJobSecretBytes from the kernel's CSPRNG (getrandom(2), which blocks only
// until the pool is first seeded at boot), hex-encoded. Internal only when the kernel gives no
// randomness (a kernel without getrandom).
StatusOr<std::string> NewJobSecret();

}  // namespace cohort::job
