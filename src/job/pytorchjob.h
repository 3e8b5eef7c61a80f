// The PyTorchJob kind (kubeflow.org/v1, kind PyTorchJob): its facts and hooks (job_kind.h) and the
// accessors of its own spec fields. Everything else a PyTorchJob has is the kind-independent Job
// of common_types.h.
//
// The facts, as Kubeflow's training operator defines them (pkg/apis/kubeflow.org/v1/
// pytorch_types.go and pytorch_defaults.go): plural "pytorchjobs"; replica specs under
// spec.pytorchReplicaSpecs; the container named "pytorch", whose port "pytorchjob-port" defaults
// to 23456; replica types Master and Worker, no other; Master as the chief; a replica's
// restartPolicy OnFailure when unset; reasons "PyTorchJobCreated", "PyTorchJobRunning"...; its own
// spec fields nprocPerNode (a string, "auto" by default unless elasticPolicy.nProcPerNode is set)
// and elasticPolicy (torchrun's elastic launch: replica bounds, rendezvous, restarts; minReplicas
// and maxReplicas default from each other, or both from Worker.replicas). The hooks
// (pkg/controller.v1/pytorch and the webhook pkg/webhooks/pytorch):
//  - validation: only Master and Worker; a Master of exactly 1 replica; Workers at least 1; a
//    Worker spec when elasticPolicy is set; elasticPolicy.nProcPerNode (deprecated) not together
//    with nprocPerNode;
//  - success: the master decides when there is one; otherwise every worker must succeed, or, with
//    elasticPolicy, any one worker;
//  - environment (below), in EVERY container of the pod, not only the pytorch one;
//  - on Kubernetes, workers of a job with a Master get the init container init-pytorch, which
//    waits until the master's service name resolves;
//  - a peer report's "rank:<r>" (Cohort's torch.distributed backend) is the replica whose RANK
//    covers r, with a Master and no elasticPolicy, so that its peers' restarts are one group
//    restart (Cohort's own: the operator has no peer reports);
//  - condition messages worded as the PyTorchJob reconciler words them ("PyTorchJob mnist is
//    running." with a Master, "PyTorchJob default/mnist is running." without one).
// docs/behaviour.md §7 states each of these facts.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "job/job_kind.h"

namespace cohort::job {

// The two replica types, in the order the operator iterates them for status.
inline constexpr const char* kPyTorchMaster = "Master";
inline constexpr const char* kPyTorchWorker = "Worker";

// The PyTorchJob's own spec fields (Job::kind_spec keys).
inline constexpr const char* kNprocPerNodeField = "nprocPerNode";
inline constexpr const char* kElasticPolicyField = "elasticPolicy";

// What spec.nprocPerNode defaults to, and torchrun's "one process per GPU, else per CPU".
inline constexpr const char* kDefaultNprocPerNode = "auto";
// The rendezvous backend when elasticPolicy names none.
inline constexpr const char* kDefaultRendezvousBackend = "c10d";

// The task type of a peer report (cluster/peer_report.h) that Cohort's torch.distributed backend
// leaves: "peer rank:2 died (...)" names the process of rank 2 (JobKind::ReplicaOfTask).
inline constexpr const char* kPeerRankTaskType = "rank";

// The init container's image and the times it looks the master up (2 s apart), the operator's
// defaults for its --pytorch-init-container-image and --pytorch-init-container-max-tries.
inline constexpr const char* kInitContainerImage = "alpine:3.10";
inline constexpr int kInitContainerMaxTries = 100;

// The PyTorchJob kind, one static object.
const JobKind& PyTorchJobKind();

// PyTorchJobKind().NewJob(): an empty PyTorchJob.
Job NewPyTorchJob();

// spec.elasticPolicy, typed. Absent fields are nullopt.
struct ElasticPolicy {
  std::optional<int32_t> min_replicas;
  std::optional<int32_t> max_replicas;
  std::optional<std::string> rdzv_backend;
  std::optional<int32_t> rdzv_port;
  std::optional<std::string> rdzv_host;
  std::optional<std::string> rdzv_id;
  // rdzvConf's key/value pairs in order; nullopt when the field is absent.
  std::optional<std::vector<std::pair<std::string, std::string>>> rdzv_conf;
  std::optional<bool> standalone;
  std::optional<int32_t> nproc_per_node;  // deprecated: spec.nprocPerNode replaces it
  std::optional<int32_t> max_restarts;
  // metrics (autoscaling/v2 MetricSpecs for a HorizontalPodAutoscaler) are kept in kind_spec as
  // written; nothing in Cohort acts on them.
};

// spec.elasticPolicy, or nullopt when the job has none.
std::optional<ElasticPolicy> PyTorchElasticPolicy(const Job& job);

// spec.nprocPerNode as written or defaulted ("auto", "4"...), or nullopt when unset.
std::optional<std::string> PyTorchNprocPerNode(const Job& job);

// ---- The environment, as the operator's setPodEnv builds it ----
//
// Every container of replica `index` of `replica_type` gets, in this order:
//   PYTHONUNBUFFERED=1;
//   with a Master: MASTER_PORT and PET_MASTER_PORT (the master's port), MASTER_ADDR and
//     PET_MASTER_ADDR (the master's host), WORLD_SIZE (all replicas times nprocPerNode, a
//     non-number such as "auto" counting 1), RANK and PET_NODE_RANK (0 for the master, index + 1
//     for a worker);
//   PET_NPROC_PER_NODE=<nprocPerNode> when it is set;
//   with elasticPolicy: PET_RDZV_ENDPOINT (rdzvHost, else worker 0's host, ':', rdzvPort, else
//     worker 0's port), PET_RDZV_BACKEND (rdzvBackend, else c10d), PET_NNODES ("min:max"; Worker
//     replicas when neither bound is set), then when set PET_MAX_RESTARTS, PET_NPROC_PER_NODE
//     (elasticPolicy.nProcPerNode), PET_RDZV_ID, PET_RDZV_CONF ("k1=v1,k2=v2") and PET_STANDALONE
//     (empty, when standalone is true);
//   without elasticPolicy: PET_NNODES=<all replicas>.
// Hosts and ports come from `endpoint`: on Kubernetes the short service name "<job>-master-0" and
// the replica's pytorchjob-port, as the operator writes them; locally the host and port of the
// replica's local endpoint.
std::vector<EnvVar> PyTorchEnvironment(const Job& job, const std::string& replica_type, int index,
                                       const EndpointFunction& endpoint);

}  // namespace cohort::job
