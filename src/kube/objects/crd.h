// The CustomResourceDefinition of a job kind (TFJob: tfjobs.kubeflow.org; PyTorchJob:
// pytorchjobs.kubeflow.org), generated from Cohort's own job types, as `cohort crd` prints it and
// deploy/kubernetes/crd.yaml holds it (every kind's, one document each).
//
// It is schema-compatible with Kubeflow's v1 CRD, so every TFJob that Kubeflow's CRD admits is
// admitted here and keeps its fields: the same names (kind, listKind, plural, singular, no short
// names), one version v1 served and stored, the status subresource, the State and Age printer
// columns, and a structural openAPIV3Schema whose spec is built from the job layer:
//
//   runPolicy       the fields of job::RunPolicy (schedulingPolicy's queue immutable, by CEL)
//   <kind fields>   the kind's SpecField table (TFJob: successPolicy, enableDynamicWorker;
//                   PyTorchJob: nprocPerNode, and elasticPolicy with each nested field typed)
//   tfReplicaSpecs  a map of job::ReplicaSpec {replicas, restartPolicy, template}; the template's
//                   metadata has the fields the operator copies (labels, annotations,
//                   finalizers, name, namespace) and its spec keeps every field
//                   (x-kubernetes-preserve-unknown-fields): the API server's own Pod validation
//                   checks it when the operator creates the pod.
//
// One deliberate difference: spec.cleanPodPolicy, where tf-operator v1.1 and older manifests put
// it, is in the schema too, so that the API server keeps it instead of pruning it and Cohort's
// parser can honour it as it does locally.
#pragma once

#include <nlohmann/json.hpp>

#include "job/job_kind.h"

namespace cohort::kube {

nlohmann::json CustomResourceDefinition(const job::JobKind& kind);

}  // namespace cohort::kube
