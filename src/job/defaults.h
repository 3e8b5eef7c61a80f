// The Kubeflow operator's defaulting of a job (SetDefaults_TFJob, SetDefaults_PyTorchJob), which it
// applies on create and on every reconcile; Cohort applies it once, between parsing and validation.
// The job's kind (job_kind.h) supplies the names; the rules are the same for every kind.
//
// The operator's defaults, and where Cohort applies each:
//  - runPolicy.cleanPodPolicy None and replicas 1: the initial values of the fields in
//    common_types.h, so a parsed job that does not set them already has them. restartPolicy: the
//    kind's default (TFJob Never, PyTorchJob OnFailure; also for restartPolicy ""), which the
//    parser starts every replica from. The kind's own spec fields (TFJob's successPolicy "") read
//    as their SpecField default when absent.
//  - spec.cleanPodPolicy and its siblings from pre-runPolicy manifests move to spec.runPolicy:
//    done by the parser (spec_parser.h), because Job has no field for the old location.
//  - Replica type keys are matched case-insensitively and rewritten to the kind's replica types
//    (TFJob: Chief, Evaluator, Master, PS or Worker): ApplyDefaults.
//  - The kind's container (container 0 when none has its name; TFJob: tensorflow) gets the
//    kind's port (TFJob: containerPort 2222 named tfjob-port) unless it has a port of that name:
//    ApplyDefaults.
//  - metadata.namespace "default" when empty, as kubectl does: ApplyDefaults.
//  - The kind's own defaults that depend on other fields (PyTorchJob's nprocPerNode and
//    elasticPolicy bounds): its ApplySpecFieldDefaults hook, last, from ApplyDefaults.
//
// The operator silently lets "ps" overwrite "PS" when a manifest has both; ApplyDefaults leaves
// such a key as written, and ValidateJob reports the collision.
#pragma once

#include "job/common_types.h"

namespace cohort::job {

inline constexpr const char* kDefaultNamespace = "default";

// Applies the defaults above to a job whose job_kind is set. Idempotent. Keeps Job::positions
// keyed by the new replica type names, so that later messages still point at the lines as
// written.
void ApplyDefaults(Job& job);

}  // namespace cohort::job
