// The Kubernetes objects of a job, exactly as Kubeflow's training operator creates them.
//
// One pod and one headless service per replica index, named <job>-<type>-<index>, with the
// operator's labels, its single controller ownerReference, the replica's pod template copied with
// only the restart policy mapped (ExitCode -> Never), the port default, the kind's environment
// last in the job's main container (a TFJob's TF_CONFIG) or, for a kind whose environment goes
// into every container (a PyTorchJob's MASTER_ADDR, RANK...), last in each container, and the
// init containers the kind's operator adds after the template's own (a PyTorchJob worker's
// init-pytorch); and, with gang scheduling, a PodGroup. The operator (kube/operator) creates
// them; `cohort manifests FILE` prints them.
//
// Cohort's additions to Kubeflow's objects:
//   - COHORT_TERMINATION_MESSAGE_PATH, just before the kind's environment in the main container
//     only, naming the container's terminationMessagePath (/dev/termination-log, the default,
//     unless the template sets one), so that a task that gives up on a hung or dead peer leaves
//     its report where the kubelet reads it (cluster/peer_report.h) and the operator finds it in
//     the pod's status;
//   - the job secret (job/job_secret.h): one Secret per job, <job>-<kind>-secret ("mnist-tfjob-
//     secret"), owned by the job like its pods (so the garbage collector deletes it with the job),
//     holding a fresh random value under the key COHORT_JOB_SECRET; every container that gets the
//     kind's environment (the main one, or each for a kind whose environment goes into every
//     container) gets COHORT_JOB_SECRET from it through env valueFrom.secretKeyRef, just before
//     the kind's environment, so that its tasks authenticate each other (net/auth.h) and refuse
//     any other job's. A container whose template already sets COHORT_JOB_SECRET keeps its own.
//
// What the operator leaves out, these leave out too: a pod's or service's metadata.namespace (the
// namespace is in the request path; the PodGroup alone carries it), hostname, subdomain,
// serviceAccountName and, without gang scheduling, schedulerName; a service's targetPort and
// protocol (the API server defaults them). Only the template's labels, annotations and finalizers
// reach a pod's metadata. Events the operator emits on the way (a template restartPolicy or
// schedulerName overridden) are the caller's: these functions only build.
//
//   StatusOr<std::string> secret = job::NewJobSecret();
//   StatusOr<std::vector<nlohmann::json>> objects = BuildJobObjects(job, owner, {}, *secret);
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "job/common_types.h"
#include "job/job_kind.h"
#include "kube/client/api.h"

namespace cohort::kube {

// The job object on the server that owns the pods and services (their ownerReference). Without a
// uid (a job not on a server yet, as `cohort manifests` prints it) the objects get no
// ownerReferences at all: the API server refuses a reference without one. An empty apiVersion or
// kind is the job's kind's ("kubeflow.org/v1", "TFJob" for a TFJob).
struct Owner {
  std::string api_version;
  std::string kind;
  std::string name;
  std::string uid;  // empty when the job is not on a server yet (`cohort manifests`)
};

// Where the kubelet reads a container's termination message when its terminationMessagePath is
// not set.
inline constexpr char kDefaultTerminationMessagePath[] = "/dev/termination-log";

struct ObjectOptions {
  // Appended to the hosts of TF_CONFIG (<job>-<type>-<i>.<ns>.svc.<cluster_domain>:<port>) when
  // not empty, like the operator's cluster-domain option.
  std::string cluster_domain;
  // Gang scheduling, like the operator's --gang-scheduler-name: "" (none), "volcano" (a Volcano
  // PodGroup), or any other name: a scheduler-plugins PodGroup, with that name as the pods'
  // schedulerName (usually "scheduler-plugins" or "scheduler-plugins-scheduler").
  std::string gang_scheduler;
};

// The key of the job secret in its Secret, also the variable it becomes in the replicas.
inline constexpr char kJobSecretKey[] = "COHORT_JOB_SECRET";

// Where the jobs of `kind` live on the server: its group, version and plural ("kubeflow.org",
// "v1", "tfjobs"), as its CustomResourceDefinition (crd.h) declares them.
Resource JobResource(const job::JobKind& kind);

// `job` must be defaulted and valid. Errors name the replica and field.
StatusOr<nlohmann::json> BuildPod(const job::Job& job, const Owner& owner,
                                  const std::string& replica_type, int index,
                                  const ObjectOptions& options);
StatusOr<nlohmann::json> BuildService(const job::Job& job, const Owner& owner,
                                      const std::string& replica_type, int index,
                                      const ObjectOptions& options);
// The name of the job's Secret: <job>-<lowercase kind>-secret ("mnist-tfjob-secret"), so that a
// TFJob and a PyTorchJob of one name in one namespace each have their own.
std::string JobSecretName(const job::Job& job);
// The job's Secret (type Opaque, immutable: a replica that starts later must read what the
// others read), with the job's operator-name and job-name labels and its controller
// ownerReference, holding `secret` (job::NewJobSecret's) base64-encoded under kJobSecretKey.
StatusOr<nlohmann::json> BuildJobSecret(const job::Job& job, const Owner& owner,
                                        const std::string& secret);
// nullopt without gang scheduling.
StatusOr<std::optional<nlohmann::json>> BuildPodGroup(const job::Job& job, const Owner& owner,
                                                      const ObjectOptions& options);

// Every object of the job in the order `cohort manifests` prints them: the job's Secret holding
// `job_secret` (first, so that it exists when the pods that read it are applied), the pods
// (replica types in the job's key order, indices ascending), then their services, then the
// PodGroup if any.
StatusOr<std::vector<nlohmann::json>> BuildJobObjects(const job::Job& job, const Owner& owner,
                                                      const ObjectOptions& options,
                                                      const std::string& job_secret);

// The labels the operator puts on every pod and service of a replica (and the services'
// selector): operator-name, job-name, replica-type, replica-index under training.kubeflow.org/.
std::map<std::string, std::string> ReplicaLabels(const job::Job& job,
                                                 const std::string& replica_type, int index);

}  // namespace cohort::kube
