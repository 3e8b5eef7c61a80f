// Where a replica of a job of any kind listens, and the names the Kubernetes operator gives it:
// what a kind's environment hook (job_kind.h: TF_CONFIG for a TFJob) writes as its peers'
// endpoints on a cluster, and what validation checks the longest environment against.
#pragma once

#include <string>

#include "job/common_types.h"
#include "job/job_kind.h"

namespace cohort::job {

// The port a replica of `kind` listens on: the containerPort named after the kind's port
// ("tfjob-port") on its main container, else the kind's default (2222 for a TFJob), as the
// operator reads it.
int ReplicaPort(const JobKind& kind, const ReplicaSpec& spec);

// Endpoints as the operator writes them for Kubernetes headless services:
// "<job>-<type>-<index>.<namespace>.svc[.<cluster_domain>]:<ReplicaPort>". The operator takes
// `cluster_domain` from its CUSTOM_CLUSTER_DOMAIN variable; empty leaves the suffix out (no
// "cluster.local" by default). The function keeps copies of what it needs from `job`, which must
// have its kind.
EndpointFunction KubernetesEndpoints(const Job& job, const std::string& cluster_domain = "");

}  // namespace cohort::job
