// Checking a defaulted job of any kind, as the Kubeflow operator's validating webhook does, and
// listing what a local run of it cannot honour. The job's kind (job_kind.h) supplies the names
// that the rules and messages use; below they are TFJob's.
//
// Validation runs after ApplyDefaults (defaults.h): it expects canonical replica type keys.
// Every message has the form "<file>:<line>:<column>: <field path>: <problem>" (see
// FieldMessage in spec_parser.h); a field that is missing is reported at its nearest enclosing
// field that was written.
//
// The webhook's rules (Kubeflow: pkg/apis/kubeflow.org/v1/tensorflow_validation.go for TFJob):
// metadata.name is a DNS-1035 label; spec.tfReplicaSpecs is required; every replica has at least
// one container, every container an image, and one container is named tensorflow; at most one Chief
// or Master; runPolicy's numbers are in range and managedBy names a known controller. Cohort adds
// what the API server would reject when it creates the pods (replicas >= 0, a valid namespace,
// container names present and unique, ports in range, env names present) and the replica-type
// collisions that the operator's defaulting resolves silently ("ps" and "PS" in one manifest). The
// kind's own spec fields are checked by its ValidateSpecFields hook (TFJob: successPolicy "" or
// AllWorkers), and the rules only its webhook has on replica specs by its ValidateReplicaSpecs
// hook (PyTorchJob: Master and Worker only, exactly one Master, at least one Worker). Cohort also
// checks what would stop every replica from starting: the environment the kind gives a replica
// (TF_CONFIG, through its ReplicaEnvironment hook), measured with the longest endpoints a replica
// may get (a local run's "localhost:65535" and the Kubernetes service names
// "<job>-<type>-<i>.<namespace>.svc:<port>"), must fit in kMaxEnvironmentStringBytes; the message
// says how many replicas of the largest type would fit.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "base/status.h"
#include "job/common_types.h"

namespace cohort::job {

// The two values runPolicy.managedBy may take; any other is rejected.
inline constexpr const char* kManagedByTrainingOperator = "kubeflow.org/training-operator";
inline constexpr const char* kManagedByMultiKueue = "kueue.x-k8s.io/multikueue";

// Linux's MAX_ARG_STRLEN (32 pages of 4 KiB): execve fails with "Argument list too long" when one
// argument or environment string, "NAME=value" with its terminating NUL, is longer.
inline constexpr size_t kMaxEnvironmentStringBytes = 32 * 4096;

// Every problem with `job`, in document order; empty when it is valid.
std::vector<std::string> ValidationErrors(const Job& job);

// OK, or InvalidArgument whose message is ValidationErrors joined by newlines (the first 20,
// then how many more).
Status ValidateJob(const Job& job);

// The fields of a valid job that a local run cannot honour, one message per kind of field (the
// first place it is written, with the count of the others), for example
//   job.yaml:21:15: spec.tfReplicaSpecs.Worker.template.spec.containers[0].resources: ignored by
//   a local run: requests and limits are not enforced (also in 1 other place)
// Covers resources, volumes and volumeMounts, envFrom, nodeSelector, tolerations, affinity,
// topologySpreadConstraints, imagePullSecrets, serviceAccountName, initContainers, liveness,
// readiness and startup probes, lifecycle hooks, pod and container securityContext, hostNetwork,
// ports[].hostPort, schedulerName, priorityClassName, runtimeClassName, dnsPolicy, dnsConfig,
// hostAliases, containers other than the kind's (tensorflow), env valueFrom, a template
// restartPolicy, runPolicy.schedulingPolicy, a managedBy naming an external controller,
// replica types that are not the kind's, and URLs other than http(s) and grpc ("gs://bucket/m",
// "--checkpoint_path=s3://b/c") in the kind's container's command and args, which a local
// replica cannot write to. None of these fail validation: a manifest written for
// Kubernetes runs locally as it is.
std::vector<std::string> LocalRunWarnings(const Job& job);

// Warnings that hold wherever the job runs, for a valid job whose settings undo each other: a
// replica type whose restartPolicy is Never (Kubeflow's default for TFJob) while its program
// backs up (--checkpoint_path in the kind's container's command or args, as BackupAndRestore
// takes it), so a failed replica is never restarted and its backups are never restored. One
// message per job, at the first such type's restartPolicy (or its replica spec when the policy is
// defaulted), naming every such type.
std::vector<std::string> UnrestoredBackupWarnings(const Job& job);

}  // namespace cohort::job
