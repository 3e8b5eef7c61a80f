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
//  - environment: TF_CONFIG (cluster_builder.h) in every replica of a distributed job, none when
//    the job has exactly one replica of the five types.
// docs/behaviour.md states each of these facts with its source: the API in §1, TF_CONFIG in §2,
// success and failure in §3.5 and §3.6.
#pragma once

#include <string>

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

}  // namespace cohort::job
