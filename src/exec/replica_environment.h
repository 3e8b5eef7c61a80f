// What a local replica runs and is told about itself and its job: the one place in exec that knows
// which container of a replica's pod template is the job's (`tensorflow` for a TFJob, `pytorch`
// for a PyTorchJob) and builds a replica's environment (the kind's, TF_CONFIG or MASTER_ADDR...,
// included), so that a job kind's own hooks replace these two functions and nothing else.
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

// The environment of one replica: the supervisor's own (less every variable the kind may set),
// then the container's env, then the kind's environment (a TFJob's TF_CONFIG when the job has more
// than one replica; a PyTorchJob's MASTER_ADDR, MASTER_PORT, RANK...) with "localhost:<port>" for
// every replica's endpoint and "localhost" for its host, and COHORT_JOB_NAME,
// COHORT_REPLICA_TYPE, COHORT_REPLICA_INDEX and COHORT_JOB_SECRET. `ports` maps short replica
// names to their ports.
//
// A local run starts only the kind's container (ReplicaContainer), so a kind whose environment
// goes into every container of a pod (KindFacts::environment_in_every_container) has nothing more
// to reach here: the one process gets it either way.
std::map<std::string, std::string> ReplicaEnvironment(const job::Job& job,
                                                      const std::string& replica_type, int index,
                                                      const std::map<std::string, int>& ports,
                                                      const std::string& secret);

// The variables that $(NAME) references in the replica's command and args may name
// (job/variable_references.h): those its pod's container would have on Kubernetes, that is the
// container's env (literal values), the kind's environment and COHORT_JOB_NAME, which the
// operator gives every pod too. Not the supervisor's own environment, which a pod does not see,
// nor Cohort's local-only variables: a reference that works here works on a cluster.
std::map<std::string, std::string> ArgumentVariables(const job::Job& job,
                                                     const std::string& replica_type, int index,
                                                     const std::map<std::string, int>& ports);

}  // namespace cohort::exec
