// What the operator tests share: a fake clock, a small factory of pods and services in the
// operator's shape (standing in for kube/objects' builders), the kubelet's part (running and
// exiting pods, restarting containers in place) and TFJob objects.
#pragma once

#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "fake_api.h"
#include "job/common_types.h"
#include "job/job_kind.h"
#include "kube/operator/operator.h"
#include "kube/operator/replica_objects.h"

namespace cohort::kube::testing {

class FakeClock {
 public:
  Time Now() const { return Time(Clock::duration(ticks_.load())); }
  void Advance(std::chrono::milliseconds duration) {
    ticks_.fetch_add(std::chrono::duration_cast<Clock::duration>(duration).count());
  }
  std::function<Time()> AsFunction() {
    return [this] { return Now(); };
  }

 private:
  // 2026-11-24T10:00:00Z
  std::atomic<Clock::rep> ticks_{
      std::chrono::duration_cast<Clock::duration>(std::chrono::seconds(1795514400)).count()};
};

inline nlohmann::json OwnedMetadata(const job::Job& job, const Owner& owner,
                                    const std::string& type, int index) {
  return {{"name", job::ReplicaName(job.metadata.name, type, index)},
          {"namespace", job.metadata.namespace_name},
          {"labels",
           {{kOperatorNameLabel, job.job_kind->facts().controller_name},
            {kJobNameLabel, job.metadata.name},
            {kReplicaTypeLabel, job::LowerCase(type)},
            {kReplicaIndexLabel, std::to_string(index)}}},
          {"ownerReferences",
           {{{"apiVersion", owner.api_version},
             {"kind", owner.kind},
             {"name", owner.name},
             {"uid", owner.uid},
             {"controller", true},
             {"blockOwnerDeletion", true}}}}};
}

// Pods and services as the operator's builders shape them, without TF_CONFIG.
inline ObjectBuilders TestBuilders() {
  ObjectBuilders builders;
  builders.pod = [](const job::Job& job, const Owner& owner, const std::string& type, int index,
                    const ObjectOptions&) -> StatusOr<nlohmann::json> {
    const job::ReplicaSpec& spec = job.replica_specs.at(type);
    const std::string policy = spec.restart_policy == job::RestartPolicy::kExitCode
                                   ? "Never"
                                   : job::ToString(spec.restart_policy);
    return nlohmann::json{{"apiVersion", "v1"},
                          {"kind", "Pod"},
                          {"metadata", OwnedMetadata(job, owner, type, index)},
                          {"spec",
                           {{"restartPolicy", policy},
                            {"containers", {{{"name", "tensorflow"}, {"image", "trainer:1"}}}}}}};
  };
  builders.service = [](const job::Job& job, const Owner& owner, const std::string& type, int index,
                        const ObjectOptions&) -> StatusOr<nlohmann::json> {
    nlohmann::json metadata = OwnedMetadata(job, owner, type, index);
    return nlohmann::json{{"apiVersion", "v1"},
                          {"kind", "Service"},
                          {"metadata", metadata},
                          {"spec",
                           {{"clusterIP", "None"},
                            {"selector", metadata["labels"]},
                            {"ports", {{{"name", "tfjob-port"}, {"port", 2222}}}}}}};
  };
  builders.pod_group = [](const job::Job&, const Owner&,
                          const ObjectOptions&) -> StatusOr<std::optional<nlohmann::json>> {
    return std::optional<nlohmann::json>();
  };
  return builders;
}

// The kubelet's part, on the fake API server.
class Kubelet {
 public:
  Kubelet(FakeApi& api, FakeClock& clock) : api_(api), clock_(clock) {}

  // The pod's container runs (restartCount as it was).
  Status Run(const std::string& pod_name, const std::string& namespace_name = "default") {
    nlohmann::json status = {
        {"phase", "Running"},
        {"startTime", FormatTime(clock_.Now())},
        {"containerStatuses",
         {{{"name", ContainerName(pod_name, namespace_name)},
           {"restartCount", RestartCount(pod_name, namespace_name)},
           {"state", {{"running", {{"startedAt", FormatTime(clock_.Now())}}}}}}}}};
    return api_.SetPodStatus(namespace_name, pod_name, status);
  }

  // The container exits with `exit_code`; the pod's restartPolicy decides what follows, as the
  // kubelet does: Never ends the pod (Succeeded or Failed); OnFailure restarts a failure in
  // place, Always every exit (restartCount + 1, running again).
  Status Exit(const std::string& pod_name, int exit_code,
              const std::string& namespace_name = "default") {
    return ExitSaying(pod_name, exit_code, "", namespace_name);
  }

  // As Exit, the container leaving `message` in its termination-message file.
  Status ExitSaying(const std::string& pod_name, int exit_code, const std::string& message,
                    const std::string& namespace_name = "default") {
    std::optional<nlohmann::json> pod = api_.Object("pods", namespace_name, pod_name);
    if (!pod) return Status::NotFound("no pod " + pod_name);
    const std::string policy = (*pod)["spec"].value("restartPolicy", "Never");
    const bool in_place = policy == "Always" || (policy == "OnFailure" && exit_code != 0);
    const int restarts = RestartCount(pod_name, namespace_name);
    const std::string container = ContainerName(pod_name, namespace_name);
    const std::string now = FormatTime(clock_.Now());
    nlohmann::json terminated = {{"exitCode", exit_code}, {"finishedAt", now}};
    if (!message.empty()) terminated["message"] = message;
    if (in_place) {
      return api_.SetPodStatus(namespace_name, pod_name,
                               {{"phase", "Running"},
                                {"containerStatuses",
                                 {{{"name", container},
                                   {"restartCount", restarts + 1},
                                   {"lastState", {{"terminated", terminated}}},
                                   {"state", {{"running", {{"startedAt", now}}}}}}}}});
    }
    return api_.SetPodStatus(namespace_name, pod_name,
                             {{"phase", exit_code == 0 ? "Succeeded" : "Failed"},
                              {"containerStatuses",
                               {{{"name", container},
                                 {"restartCount", restarts},
                                 {"state", {{"terminated", terminated}}}}}}});
  }

 private:
  // The pod's first container's name (the job kind's: tensorflow, pytorch).
  std::string ContainerName(const std::string& pod_name, const std::string& namespace_name) {
    std::optional<nlohmann::json> pod = api_.Object("pods", namespace_name, pod_name);
    if (!pod || !(*pod)["spec"]["containers"].is_array() || (*pod)["spec"]["containers"].empty()) {
      return "tensorflow";
    }
    return (*pod)["spec"]["containers"][0].value("name", "tensorflow");
  }

  int RestartCount(const std::string& pod_name, const std::string& namespace_name) {
    std::optional<nlohmann::json> pod = api_.Object("pods", namespace_name, pod_name);
    if (!pod || !(*pod)["status"].contains("containerStatuses")) return 0;
    return (*pod)["status"]["containerStatuses"][0].value("restartCount", 0);
  }

  FakeApi& api_;
  FakeClock& clock_;
};

// A TFJob object as a user applies it: `replicas` maps a type to its count, `restart_policy` is
// every replica's.
inline nlohmann::json TFJobObject(const std::string& name, std::map<std::string, int> replicas,
                                  const std::string& restart_policy = "Never",
                                  nlohmann::json run_policy = nlohmann::json::object()) {
  nlohmann::json specs = nlohmann::json::object();
  for (const auto& [type, count] : replicas) {
    const nlohmann::json container = {{"name", "tensorflow"}, {"image", "trainer:1"}};
    const nlohmann::json pod_spec = {{"containers", nlohmann::json::array({container})}};
    specs[type] = {
        {"replicas", count}, {"restartPolicy", restart_policy}, {"template", {{"spec", pod_spec}}}};
  }
  return {{"apiVersion", "kubeflow.org/v1"},
          {"kind", "TFJob"},
          {"metadata", {{"name", name}, {"namespace", "default"}}},
          {"spec", {{"runPolicy", run_policy}, {"tfReplicaSpecs", specs}}}};
}

}  // namespace cohort::kube::testing
