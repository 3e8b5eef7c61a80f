// What a local replica is told about itself and its job: the one place that builds a replica's
// environment (TF_CONFIG included), so that a job kind's own environment can replace it here.
#pragma once

#include <map>
#include <string>

#include "job/tfjob.h"

namespace cohort::exec {

// The replica's short name, "worker-1": the log file's name, its endpoint's key and the
// `--replica` flag's value.
std::string ShortReplicaName(const std::string& replica_type, int index);

// The environment of one replica: the supervisor's own, then the container's env, then TF_CONFIG
// (when the job has more than one replica) with "localhost:<port>" for every replica's endpoint,
// and COHORT_JOB_NAME, COHORT_REPLICA_TYPE, COHORT_REPLICA_INDEX and COHORT_JOB_SECRET.
// `ports` maps short replica names to their ports.
std::map<std::string, std::string> ReplicaEnvironment(const job::TFJob& job,
                                                      const std::string& replica_type, int index,
                                                      const std::map<std::string, int>& ports,
                                                      const std::string& secret);

}  // namespace cohort::exec
