// The read model of jobs on a cluster: a job of any kind of the registry, its pods and
// their Events, as read from an API server, shown in the same shapes as a local job
// (view/job_view.h), so that `cohort get` and `cohort describe --kubernetes` print the columns they
// print locally and kubectl prints.
//
//   KubeJobStore store;
//   Status added = store.Add({job, pods, events});  // objects as the server sent them
//   std::cout << view::JobTable(store, store.ListJobs(), /*wide=*/false, false);
//   std::cout << *view::DescribeJob(store, {"default", "mnist"});
//   std::cout << PodTable(pods, /*wide=*/false, /*show_namespace=*/false, Clock::now());
//
// What is carried over: the spec (metadata name, namespace, labels, annotations and spec, read
// with job/spec_writer.h's JobFromJson), the status (job/status_json.h), one replica row per pod
// (its phase, the main container's restarts, exit code, start and end times, the port named by
// the job's kind), and the Events of the job and of its pods (those of a pod prefixed "pod/NAME: ";
// an Event seen `count` times becomes that many, so describe aggregates it as kubectl does).
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "base/status.h"
#include "base/time.h"
#include "exec/memory_job_store.h"

namespace cohort::kube {

// The labels the Kubeflow operator (and Cohort's) put on a job's pods.
inline constexpr char kJobNameLabel[] = "training.kubeflow.org/job-name";
inline constexpr char kReplicaTypeLabel[] = "training.kubeflow.org/replica-type";
inline constexpr char kReplicaIndexLabel[] = "training.kubeflow.org/replica-index";

// "training.kubeflow.org/job-name=NAME": the label selector of a job's pods.
std::string JobPodSelector(const std::string& job_name);

// One job as a cluster holds it.
struct ClusterJobObjects {
  nlohmann::json job;                  // the job's object, of any kind of the registry
  std::vector<nlohmann::json> pods;    // labelled with the job's name
  std::vector<nlohmann::json> events;  // involvedObject the job or one of its pods
};

// A JobStateStore (exec/job_state_store.h) filled from cluster objects, for the view's
// functions to read; nothing is written back to the cluster.
class KubeJobStore : public exec::MemoryJobStore {
 public:
  // InvalidArgument naming the object when the job's spec or status cannot be read;
  // AlreadyExists when the store holds a job of that namespace and name (of another kind).
  Status Add(const ClusterJobObjects& objects);
  // Where a replica's log is read from: "pod/mnist-worker-0".
  std::string LogLocation(const exec::JobKey& key, const std::string& replica) const override;
};

// The replica a pod runs ("worker-0") from its labels; empty when it has none.
std::string ReplicaOfPod(const nlohmann::json& pod);

// The main container's status (the container of a registered kind, "tensorflow" or "pytorch",
// else the first), or null.
const nlohmann::json* MainContainerStatus(const nlohmann::json& pod);

// kubectl's STATUS of a pod: the waiting or terminated reason of its container when there is one
// (ContainerCreating, CrashLoopBackOff, Completed, Error, OOMKilled), else its phase;
// Terminating when it is being deleted.
std::string PodStatusText(const nlohmann::json& pod);

// `get pods`: NAME READY STATUS RESTARTS AGE (NAMESPACE first with `show_namespace`), with `wide`
// IP NODE NOMINATED NODE READINESS GATES, as kubectl prints them.
std::string PodTable(const std::vector<nlohmann::json>& pods, bool wide, bool show_namespace,
                     Time now);

}  // namespace cohort::kube
