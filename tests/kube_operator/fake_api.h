// FakeApi: an in-memory Kubernetes API server for the operator's tests, behind kube::Api.
//
// A small object store with what the operator relies on: resourceVersions from one counter,
// uids, creationTimestamps; 409 on a stale Update (and on a Delete whose uid precondition fails);
// status subresource semantics (Create and a plain Update ignore "status", an Update or Patch of
// /status changes only "status"); JSON merge patches; label selectors of the form "k=v,k2" (equal
// or present) and "k in (a,b)"; and watches that replay the history after a resourceVersion, then
// wait for new changes until their timeout. Tests force the rest: ExpireWatches() makes every watch
// from an older version fail with 410 (kOutOfRange), FailStatusUpdates(n) answers the next n
// /status updates with 409 after a concurrent write, FailPatches(plural, n) the next n patches with
// 503. There is no garbage collection by ownerReference.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "kube/client/api.h"

namespace cohort::kube::testing {

class FakeApi : public Api {
 public:
  StatusOr<nlohmann::json> Get(const Resource& resource, const std::string& namespace_name,
                               const std::string& name) override;
  StatusOr<ObjectList> List(const Resource& resource, const std::string& namespace_name,
                            const Selector& selector) override;
  StatusOr<nlohmann::json> Create(const Resource& resource, const std::string& namespace_name,
                                  const nlohmann::json& object) override;
  StatusOr<nlohmann::json> Update(const Resource& resource, const std::string& namespace_name,
                                  const nlohmann::json& object, bool status_subresource) override;
  StatusOr<nlohmann::json> Patch(const Resource& resource, const std::string& namespace_name,
                                 const std::string& name, const nlohmann::json& patch,
                                 bool status_subresource) override;
  Status Delete(const Resource& resource, const std::string& namespace_name,
                const std::string& name, const DeleteOptions& options) override;
  Status Watch(const Resource& resource, const std::string& namespace_name,
               const Selector& selector, const std::string& resource_version,
               std::chrono::seconds timeout,
               const std::function<bool(const WatchEvent&)>& on_event) override;
  StatusOr<std::string> PodLog(const std::string& namespace_name, const std::string& pod,
                               const LogOptions& options) override;

  // ---- What tests control and inspect ----

  // Every watch from a version older than now fails with 410; a list gives a version that works.
  void ExpireWatches();
  // The next `count` updates of a /status answer 409, as if someone wrote the object just before.
  void FailStatusUpdates(int count);
  // The next `count` patches of objects of `plural` answer 503, as an overloaded server would.
  void FailPatches(const std::string& plural, int count);
  // Lists and watches of `plural` answer 404 from now on, as a server without that CRD does.
  void Unserve(const std::string& plural);
  // How many calls of `verb` ("create", "delete", "update-status"...) were made for `plural`.
  int Calls(const std::string& verb, const std::string& plural) const;
  // The stored objects of `plural` in `namespace_name` ("" for all).
  std::vector<nlohmann::json> Objects(const std::string& plural,
                                      const std::string& namespace_name = "") const;
  std::optional<nlohmann::json> Object(const std::string& plural, const std::string& namespace_name,
                                       const std::string& name) const;
  // Replaces a pod's status as the kubelet does (a MODIFIED event); NotFound when gone.
  Status SetPodStatus(const std::string& namespace_name, const std::string& name,
                      const nlohmann::json& status);

 private:
  struct Change {
    std::string store;
    std::string namespace_name;
    WatchEvent::Type type;
    nlohmann::json object;
    uint64_t version;
  };
  using ObjectKey = std::pair<std::string, std::string>;  // namespace, name

  static std::string StoreOf(const Resource& resource);
  static bool HasStatusSubresource(const Resource& resource);
  static bool Matches(const nlohmann::json& object, const Selector& selector);
  static Status NotServed(const Resource& resource);
  // With mutex_ held: stamps a new version on `object` and records the change.
  void Commit(const std::string& store, const std::string& namespace_name, WatchEvent::Type type,
              nlohmann::json& object);
  void Count(const std::string& verb, const Resource& resource);

  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::map<std::string, std::map<ObjectKey, nlohmann::json>> stores_;
  std::vector<Change> history_;
  uint64_t version_ = 1;
  uint64_t expired_before_ = 0;
  uint64_t next_uid_ = 1;
  int status_conflicts_ = 0;
  std::map<std::string, int> failing_patches_;  // by plural
  std::map<std::string, int> calls_;
  std::set<std::string> unserved_;  // plurals whose lists and watches answer 404
};

}  // namespace cohort::kube::testing
