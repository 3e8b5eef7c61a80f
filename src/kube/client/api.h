// kube::Api: what Cohort asks of a Kubernetes API server, as an interface.
//
// The operator (kube/operator) and the CLI's --kubernetes forms speak to the server only through
// this interface; HttpApi (http_api.h) implements it over HTTPS with a kubeconfig or the in-cluster
// service account, and tests implement it in memory. Objects travel as JSON, exactly as the
// server sends and takes them (the operator builds pods and services as JSON: kube/objects).
//
// Errors are Status codes that say what the caller should do:
//   kNotFound        404: the object (or its namespace, or the resource type) does not exist
//   kAlreadyExists   409 AlreadyExists on Create
//   kAborted         409 Conflict: the object changed since it was read (stale resourceVersion);
//                    read it again and retry (UpdateWithRetry does that)
//   kOutOfRange      410 Gone / Expired: a watch's resourceVersion is older than the server keeps;
//                    list again and watch from the list's resourceVersion
//   kInvalidArgument 400/422: the server refused the object (its message says which field)
//   kFailedPrecondition 401/403: not allowed (the message names the verb, the resource and the
//                    identity the server saw)
//   kDeadlineExceeded the call's timeout passed
//   kUnavailable     the server could not be reached, or answered 5xx / 429
// Every message names the verb, the object (kind namespace/name) and the server's own message.
#pragma once

#include <chrono>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace cohort::kube {

// A resource type on the server: where its objects live in the REST paths.
struct Resource {
  std::string group;    // "" for the core group, "kubeflow.org", "coordination.k8s.io"...
  std::string version;  // "v1"
  std::string plural;   // "pods", "tfjobs"
  std::string kind;     // "Pod", "TFJob": for messages
  bool namespaced = true;
};

// The resource types Cohort uses, in both Kubernetes 1.20 and current releases.
Resource PodResource();
Resource ServiceResource();
Resource SecretResource();  // core/v1: the job secret (kube/objects/objects.h)
Resource EventResource();   // core/v1 Events
Resource LeaseResource();   // coordination.k8s.io/v1
Resource NamespaceResource();

// Which objects a List or Watch returns.
struct Selector {
  std::string label_selector;  // "training.kubeflow.org/job-name=mnist", "" for all
  std::string field_selector;  // "spec.nodeName=node-1", "" for all
};

struct ObjectList {
  std::vector<nlohmann::json> items;
  std::string resource_version;  // of the list: where a watch starts
};

struct WatchEvent {
  enum class Type { kAdded, kModified, kDeleted, kBookmark };
  Type type = Type::kAdded;
  // The object; for a bookmark only its metadata.resourceVersion is meaningful.
  nlohmann::json object;
};

struct DeleteOptions {
  // "Background", "Foreground" or "Orphan"; empty: the server's default for the type.
  std::string propagation_policy;
  // Delete only if the object still has this uid (a precondition): never a newer object of the
  // same name.
  std::string uid;
  // How long the pod's processes get to stop; unset: the object's own default. 0 removes a pod at
  // once, as the kubelet's final delete does once its containers have stopped.
  std::optional<int64_t> grace_period_seconds;
};

struct LogOptions {
  std::string container;  // empty: the pod's only container
  bool previous = false;  // the log of the container's previous run
  std::optional<int> tail_lines;
  std::optional<int> since_seconds;
  size_t limit_bytes = 8 << 20;  // never more than this is returned
};

class Api {
 public:
  virtual ~Api() = default;

  // `namespace_name` is ignored for cluster-scoped resources. For List and Watch, an empty
  // namespace means every namespace.
  virtual StatusOr<nlohmann::json> Get(const Resource& resource, const std::string& namespace_name,
                                       const std::string& name) = 0;
  virtual StatusOr<ObjectList> List(const Resource& resource, const std::string& namespace_name,
                                    const Selector& selector = {}) = 0;
  // Returns the object as the server stored it (with uid, resourceVersion, defaults).
  virtual StatusOr<nlohmann::json> Create(const Resource& resource,
                                          const std::string& namespace_name,
                                          const nlohmann::json& object) = 0;
  // PUT of the whole object; kAborted when its metadata.resourceVersion is stale. With
  // `status_subresource`, PUT to /status: only the status changes.
  virtual StatusOr<nlohmann::json> Update(const Resource& resource,
                                          const std::string& namespace_name,
                                          const nlohmann::json& object,
                                          bool status_subresource = false) = 0;
  // A JSON merge patch (RFC 7386), to the object or its /status.
  virtual StatusOr<nlohmann::json> Patch(const Resource& resource,
                                         const std::string& namespace_name, const std::string& name,
                                         const nlohmann::json& patch,
                                         bool status_subresource = false) = 0;
  // kNotFound when it is already gone.
  virtual Status Delete(const Resource& resource, const std::string& namespace_name,
                        const std::string& name, const DeleteOptions& options = {}) = 0;

  // Watches from `resource_version` (with bookmarks), calling `on_event` for each event in order,
  // until `on_event` returns false, `timeout` passes (then OK: watch again from the last
  // resourceVersion seen) or an error. kOutOfRange when the version has expired (410).
  virtual Status Watch(const Resource& resource, const std::string& namespace_name,
                       const Selector& selector, const std::string& resource_version,
                       std::chrono::seconds timeout,
                       const std::function<bool(const WatchEvent&)>& on_event) = 0;

  // A pod's log (at most options.limit_bytes, the end of it when longer).
  virtual StatusOr<std::string> PodLog(const std::string& namespace_name, const std::string& pod,
                                       const LogOptions& options) = 0;

  // Follows a pod's log (kubectl logs -f): hands each piece of text to `on_text` as the server
  // sends it, until the container ends (the server closes the stream: OK), `on_text` returns false
  // (OK), `timeout` passes (OK: the caller decides whether to follow again) or an error.
  // options.limit_bytes does not apply. The default answers FailedPrecondition: an Api that keeps
  // no logs (an in-memory test double) need not follow them.
  virtual Status FollowPodLog(const std::string& namespace_name, const std::string& pod,
                              const LogOptions& options, std::chrono::seconds timeout,
                              const std::function<bool(std::string_view)>& on_text);
};

// Reads the object, applies `change` to it and PUTs it (or its /status), again from a fresh read
// while the server answers 409 Conflict, at most `attempts` times. `change` returns false to leave
// the object as it is (nothing is written; the read object is returned).
StatusOr<nlohmann::json> UpdateWithRetry(Api& api, const Resource& resource,
                                         const std::string& namespace_name, const std::string& name,
                                         const std::function<bool(nlohmann::json&)>& change,
                                         bool status_subresource = false, int attempts = 5);

}  // namespace cohort::kube
