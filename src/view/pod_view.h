// Pods: each replica of a job shown as the pod the Kubeflow operator would create for it
// ("mnist-worker-0"), so that `cohort get pods` and `cohort logs mnist-worker-0` work as kubectl's
// do.
//
//   StatusOr<PodRef> pod = FindPod(store, "default", "mnist-worker-0");  // {default/mnist,
//   worker-0} std::cout << PodTable(store, store.ListJobs("default"), /*wide=*/false, false);
//
// A pod's STATUS is what kubectl prints for a container in that state: Pending, Running,
// Completed (exit code 0) or Error; READY is 1/1 while it runs.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "base/status.h"
#include "base/time.h"
#include "exec/job_state_store.h"

namespace cohort::view {

struct PodRef {
  exec::JobKey job;
  std::string replica;  // "worker-0"
  std::string PodName() const { return job.name + "-" + replica; }
};

// The pods of a job, one per replica of its spec, in the spec's order of types. Once the job has
// finished, replicas without a row in its replica table (removed by cleanPodPolicy) are left out,
// as Kubernetes no longer lists a deleted pod, unless `with_removed`.
std::vector<PodRef> JobPods(const exec::JobStateStore& store, const exec::JobKey& key,
                            bool with_removed = false);

// The pod named `pod_name` in `namespace_name`, removed or not; NotFound naming the pods there are
// otherwise.
StatusOr<PodRef> FindPod(const exec::JobStateStore& store, const std::string& namespace_name,
                         const std::string& pod_name);

// kubectl's STATUS for a replica row's phase and exit code.
std::string PodStatus(const exec::ReplicaRow& row);

// `cohort get pods`: NAME READY STATUS RESTARTS AGE (NAMESPACE first with `show_namespace`), and
// with `wide` IP NODE NOMINATED NODE READINESS GATES as kubectl adds them.
std::string PodTable(const exec::JobStateStore& store, const std::vector<PodRef>& pods, bool wide,
                     bool show_namespace, Time now = Clock::now());

// `cohort get pod NAME -o json|yaml|jsonpath`: a v1 Pod object with the fields a script reads
// (metadata.name, namespace, labels; status.phase, containerStatuses with restartCount).
nlohmann::json PodObject(const exec::JobStateStore& store, const PodRef& pod);

}  // namespace cohort::view
