// What a local replica runs and is told about itself and its job: the one place in exec that knows
// which container of a replica's pod template is the job's (`tensorflow` for a TFJob) and builds
// a replica's environment (TF_CONFIG included), so that a job kind's own hooks replace these two
// functions and nothing else.
#pragma once

#include <map>
#include <string>

#include "base/status.h"
#include "job/common_types.h"

namespace cohort::exec {

// The replica's short name, "worker-1": the log file's name, its endpoint's key and the
// `--replica` flag's value.
std::string ShortReplicaName(const std::string& replica_type, int index);

// The container of replica type `replica_type` that runs the job's code. InvalidArgument ("no
// container named tensorflow") when the pod template has none.
StatusOr<const job::Container*> ReplicaContainer(const job::Job& job,
                                                 const std::string& replica_type);

// The environment of one replica: the supervisor's own, then the container's env, then TF_CONFIG
// (when the job has more than one replica) with "localhost:<port>" for every replica's endpoint,
// and COHORT_JOB_NAME, COHORT_REPLICA_TYPE, COHORT_REPLICA_INDEX and COHORT_JOB_SECRET.
// `ports` maps short replica names to their ports.
std::map<std::string, std::string> ReplicaEnvironment(const job::Job& job,
                                                      const std::string& replica_type, int index,
                                                      const std::map<std::string, int>& ports,
                                                      const std::string& secret);

}  // namespace cohort::exec
