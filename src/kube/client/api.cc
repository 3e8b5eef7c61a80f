#include "kube/client/api.h"

namespace cohort::kube {

Resource PodResource() { return {"", "v1", "pods", "Pod", true}; }
Resource ServiceResource() { return {"", "v1", "services", "Service", true}; }
Resource SecretResource() { return {"", "v1", "secrets", "Secret", true}; }
Resource EventResource() { return {"", "v1", "events", "Event", true}; }
Resource LeaseResource() { return {"coordination.k8s.io", "v1", "leases", "Lease", true}; }
Resource NamespaceResource() { return {"", "v1", "namespaces", "Namespace", false}; }

StatusOr<nlohmann::json> UpdateWithRetry(Api& api, const Resource& resource,
                                         const std::string& namespace_name, const std::string& name,
                                         const std::function<bool(nlohmann::json&)>& change,
                                         bool status_subresource, int attempts) {
  Status last;
  for (int attempt = 0; attempt < attempts; ++attempt) {
    StatusOr<nlohmann::json> object = api.Get(resource, namespace_name, name);
    if (!object.ok()) return object.status();
    if (!change(*object)) return object;
    StatusOr<nlohmann::json> updated =
        api.Update(resource, namespace_name, *object, status_subresource);
    if (updated.ok() || updated.status().code() != Status::Code::kAborted) return updated;
    last = updated.status();
  }
  return last.WithContext("gave up after " + std::to_string(attempts) + " conflicting updates of " +
                          resource.kind + " " + namespace_name + "/" + name);
}

Status Api::FollowPodLog(const std::string& namespace_name, const std::string& pod,
                         const LogOptions& /*options*/, std::chrono::seconds /*timeout*/,
                         const std::function<bool(std::string_view)>& /*on_text*/) {
  return Status::FailedPrecondition("cannot follow the log of Pod " + namespace_name + "/" + pod +
                                    ": this API client keeps no logs");
}

}  // namespace cohort::kube
