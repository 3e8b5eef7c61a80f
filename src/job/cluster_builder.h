// From a TFJob to each replica's TF_CONFIG, as Kubeflow's TFJob operator builds it: the
// environment hook of the TFJob kind (tfjob.h).
//
// The operator gives every replica of a distributed job the same cluster (every replica type,
// lower-cased, each with one endpoint per replica index) and the replica's own task, and appends
// it as TF_CONFIG to the tensorflow container. What an endpoint is depends on the executor: a
// Kubernetes service name (KubernetesEndpoints) or a local address chosen by a local executor;
// so the builder takes it as a function and knows nothing of either.
#pragma once

#include <functional>
#include <optional>
#include <string>

#include "cluster/cluster_spec.h"
#include "cluster/tf_config.h"
#include "job/common_types.h"
#include "job/job_kind.h"

namespace cohort::job {

// The port a replica listens on: the containerPort named "tfjob-port" on its tensorflow container,
// else 2222, the operator's default.
int ReplicaPort(const ReplicaSpec& spec);

// Endpoints as the operator writes them for Kubernetes headless services:
// "<job>-<type>-<index>.<namespace>.svc[.<cluster_domain>]:<ReplicaPort>". The operator takes
// `cluster_domain` from its CUSTOM_CLUSTER_DOMAIN variable; empty leaves the suffix out (no
// "cluster.local" by default). The function keeps copies of what it needs from `job`.
EndpointFunction KubernetesEndpoints(const Job& job, const std::string& cluster_domain = "");

// Whether the job gets TF_CONFIG at all: false when its Chief, Evaluator, Master, PS and Worker
// replicas add up to exactly one (issue #1078: a single process must not wait for a cluster).
// Other replica types do not count, as in the operator.
bool IsDistributed(const Job& job);

// False when the job's kEvaluatorInClusterAnnotation is "false": then the evaluator is left out of
// the cluster, as TF1 Estimator expects (and as the operator did before v1). By default it is in,
// as the current operator and TF2 strategies expect.
bool EvaluatorInCluster(const Job& job);

// The cluster every replica of `job` (defaulted: canonical type keys, replica counts set) sees:
// each replica type lower-cased, unknown ones included, with endpoints 0..replicas-1; the
// evaluator only when EvaluatorInCluster.
cluster::ClusterSpec BuildClusterSpec(const Job& job, const EndpointFunction& endpoint);

// The TF_CONFIG of replica `index` of `replica_type` (any case; the task type is written
// lower-cased), which must be a replica of `job`. With enable_dynamic_worker it is the sparse
// form: a ps sees itself, a worker itself and every ps, anyone else nobody; otherwise the whole
// cluster and environment "cloud". An evaluator left out of the cluster keeps task type evaluator.
cluster::TfConfig BuildTfConfig(const Job& job, const std::string& replica_type, int index,
                                const EndpointFunction& endpoint);

// FormatTfConfig(BuildTfConfig(...)): the TF_CONFIG value to set for that replica, or nullopt
// when the job is not distributed and the replica gets no TF_CONFIG.
std::optional<std::string> TfConfigForReplica(const Job& job, const std::string& replica_type,
                                              int index, const EndpointFunction& endpoint);

}  // namespace cohort::job
