#include "view/pod_view.h"

#include <set>

#include "job/common_types.h"
#include "job/job_kind.h"
#include "job/reconciler.h"
#include "view/table.h"

namespace cohort::view {
namespace {

// The replica's row in the job's table; a replica not started yet is Pending.
exec::ReplicaRow RowOf(const exec::JobStateStore& store, const PodRef& pod) {
  for (const exec::ReplicaRow& row : store.ReadReplicas(pod.job)) {
    if (row.name == pod.replica) return row;
  }
  exec::ReplicaRow pending;
  pending.name = pod.replica;
  pending.phase = "Pending";
  return pending;
}

// The Kubernetes pod phase (Succeeded, Failed, Running, Pending).
std::string PodPhase(const exec::ReplicaRow& row) {
  if (row.phase == "Succeeded" || row.phase == "Failed" || row.phase == "Running") return row.phase;
  if (row.phase == "Terminating") return "Running";  // a pod being deleted still runs
  return "Pending";
}

}  // namespace

std::vector<PodRef> JobPods(const exec::JobStateStore& store, const exec::JobKey& key,
                            bool with_removed) {
  std::vector<PodRef> pods;
  StatusOr<job::Job> spec = store.ReadSpec(key);
  if (!spec.ok()) return pods;
  StatusOr<job::JobStatus> status = store.ReadStatus(key);
  std::set<std::string> rows;
  for (const exec::ReplicaRow& row : store.ReadReplicas(key)) {
    if (!row.removed) rows.insert(row.name);
  }
  bool finished = status.ok() && job::IsFinished(*status);
  for (const auto& [type, replica_spec] : spec->replica_specs) {
    for (int index = 0; index < replica_spec.replicas; ++index) {
      std::string replica = job::LowerCase(type) + "-" + std::to_string(index);
      if (finished && !with_removed && rows.count(replica) == 0) continue;
      pods.push_back({key, replica});
    }
  }
  return pods;
}

StatusOr<PodRef> FindPod(const exec::JobStateStore& store, const std::string& namespace_name,
                         const std::string& pod_name) {
  std::string known;
  for (const exec::JobKey& key : store.ListJobs(namespace_name)) {
    for (const PodRef& pod : JobPods(store, key, /*with_removed=*/true)) {
      if (pod.PodName() == pod_name) return pod;
      known += (known.empty() ? "" : ", ") + pod.PodName();
    }
  }
  return Status::NotFound("pod " + namespace_name + "/" + pod_name + " not found" +
                          (known.empty()
                               ? " (there are no jobs in namespace " + namespace_name + ")"
                               : "; the pods there are " + known));
}

std::string PodStatus(const exec::ReplicaRow& row) {
  if (row.phase == "Terminating") return "Terminating";
  std::string phase = PodPhase(row);
  if (phase == "Succeeded") return "Completed";
  if (phase == "Failed") return "Error";
  return phase;
}

std::string PodTable(const exec::JobStateStore& store, const std::vector<PodRef>& pods, bool wide,
                     bool show_namespace, Time now) {
  std::vector<Row> rows;
  Row header = {"NAME", "READY", "STATUS", "RESTARTS", "AGE"};
  if (show_namespace) header.insert(header.begin(), "NAMESPACE");
  if (wide) header.insert(header.end(), {"IP", "NODE", "NOMINATED NODE", "READINESS GATES"});
  rows.push_back(header);
  for (const PodRef& pod : pods) {
    exec::ReplicaRow row = RowOf(store, pod);
    Time created = row.started_at.value_or(store.CreationTime(pod.job));
    Row line = {pod.PodName(), PodPhase(row) == "Running" ? "1/1" : "0/1", PodStatus(row),
                std::to_string(row.restarts), Age(created, now)};
    if (show_namespace) line.insert(line.begin(), pod.job.namespace_name);
    if (wide) {
      line.insert(line.end(),
                  {row.started_at ? "127.0.0.1" : "<none>", "localhost", "<none>", "<none>"});
    }
    rows.push_back(line);
  }
  return FormatTable(rows);
}

nlohmann::json PodObject(const exec::JobStateStore& store, const PodRef& pod) {
  exec::ReplicaRow row = RowOf(store, pod);
  // The kind's container; the first kind's when the spec cannot be read.
  std::string container = job::KindRegistry::Default().kinds().front()->facts().container_name;
  if (StatusOr<job::Job> spec = store.ReadSpec(pod.job); spec.ok()) {
    container = spec->job_kind->facts().container_name;
  }
  size_t dash = pod.replica.rfind('-');
  nlohmann::json container_status = {
      {"name", container}, {"ready", PodPhase(row) == "Running"}, {"restartCount", row.restarts}};
  if (row.exit_code) container_status["state"] = {{"terminated", {{"exitCode", *row.exit_code}}}};
  nlohmann::json status = {{"phase", PodPhase(row)},
                           {"containerStatuses", nlohmann::json::array({container_status})}};
  if (row.started_at) status["startTime"] = FormatTime(*row.started_at);
  return {{"apiVersion", "v1"},
          {"kind", "Pod"},
          {"metadata",
           {{"name", pod.PodName()},
            {"namespace", pod.job.namespace_name},
            {"labels",
             {{"training.kubeflow.org/job-name", pod.job.name},
              {"training.kubeflow.org/replica-type", pod.replica.substr(0, dash)},
              {"training.kubeflow.org/replica-index", pod.replica.substr(dash + 1)}}}}},
          {"status", status}};
}

}  // namespace cohort::view
