// The TFJob kind (kubeflow.org/v1, kind TFJob): its facts and hooks (job_kind.h) and the accessors
// of its own spec fields. Everything else a TFJob has is the kind-independent Job of
// common_types.h.
//
// The facts, as Kubeflow's training operator defines them (pkg/apis/kubeflow.org/v1/
// tensorflow_types.go and tensorflow_defaults.go): plural "tfjobs"; replica specs under
// spec.tfReplicaSpecs; the container named "tensorflow", whose port "tfjob-port" defaults to 2222;
// replica types Chief, Evaluator, Master, PS and Worker, in that (status) order; Chief or Master
// as the chief, at most one of them; reasons "TFJobCreated", "TFJobRunning"... The hooks
// (pkg/controller.v1/tensorflow):
//  - success: the chief decides when there is one; otherwise worker 0 exiting 0 succeeds the job,
//    unless spec.successPolicy is "AllWorkers", which waits for every worker;
//  - spec.enableDynamicWorker: a failed Worker does not fail the job (and TF_CONFIG is sparse);
//  - environment: TF_CONFIG (below, as the operator builds it) in every replica of a distributed
//    job, none when the job has exactly one replica of the five types.
// docs/behaviour.md states each of these facts with its source: the API in §1, TF_CONFIG in §2,
// success and failure in §3.5 and §3.6.
#pragma once

#include <optional>
#include <string>

#include "cluster/cluster_spec.h"
#include "cluster/tf_config.h"
#include "job/job_kind.h"

namespace cohort::job {

// The five replica types, in the order the operator iterates them for status.
inline constexpr const char* kChief = "Chief";
inline constexpr const char* kEvaluator = "Evaluator";
inline constexpr const char* kMaster = "Master";
inline constexpr const char* kPS = "PS";
inline constexpr const char* kWorker = "Worker";

// The TFJob's own spec fields (Job::kind_spec keys) and the one non-default successPolicy.
inline constexpr const char* kSuccessPolicyField = "successPolicy";
inline constexpr const char* kEnableDynamicWorkerField = "enableDynamicWorker";
inline constexpr const char* kSuccessPolicyAllWorkers = "AllWorkers";

// Cohort's own per-job option, as an annotation so that the manifest stays a valid TFJob:
// "false" leaves the evaluator out of TF_CONFIG's cluster, as TF1 Estimator expects.
inline constexpr const char* kEvaluatorInClusterAnnotation = "cohort.dev/evaluator-in-cluster";

// The TFJob kind, one static object.
const JobKind& TFJobKind();

// TFJobKind().NewJob(): an empty TFJob.
Job NewTFJob();

// spec.successPolicy: "" (the default rules) or "AllWorkers" once validated.
std::string TFJobSuccessPolicy(const Job& job);

// spec.enableDynamicWorker (default false).
bool DynamicWorkerEnabled(const Job& job);

// ---- TF_CONFIG, as Kubeflow's TFJob operator builds it ----
//
// The operator gives every replica of a distributed job the same cluster (every replica type,
// lower-cased, each with one endpoint per replica index) and the replica's own task, and appends
// it as TF_CONFIG to the tensorflow container. What an endpoint is depends on the executor: a
// Kubernetes service name (replica_endpoints.h) or a local address chosen by a local executor;
// so the builder takes it as a function and knows nothing of either.

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
