// Informer: a cache of one resource type's objects, kept current by list and watch, as client-go's
// informers are.
//
//   Informer pods(api, PodResource(), "", {"training.kubeflow.org/operator-name=tfjob-controller"},
//                 options, [&](const nlohmann::json& pod, bool deleted) { queue.Add(...); });
//   std::thread thread([&] { pods.Run(); });   // until pods.Stop()
//   pods.HasSynced(); pods.Get("ns/name"); pods.List();
//
// Run() lists, then watches from the list's resourceVersion (and later from the last version or
// bookmark seen), each watch bounded by options.watch_timeout; a watch that ends is resumed from
// where it stopped without listing again. When the server answers 410 (kOutOfRange: the version is
// older than it keeps), Run() lists again, and objects that vanished meanwhile are reported as
// deleted. Other errors are retried after options.retry_delay. `on_change` is called for every
// object added, changed or deleted, from Run()'s thread.
//
// The operator writes its own changes through (Upsert/Remove) with the object the server returned,
// so that its next sync sees what it just did even before the watch brings it. Resource versions
// are compared as numbers where both are numbers (etcd's are): an older version never replaces a
// newer one.
//
// The cache is indexed by controller (the uid of the ownerReference with controller: true), as
// client-go's indexers are, so that a job's pass finds its pods without looking at every pod:
// ListControlledBy(uid) costs what the job owns, not what the cache holds.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "kube/client/api.h"

namespace cohort::kube {

struct InformerOptions {
  std::chrono::seconds watch_timeout{10};       // each watch call's bound
  std::chrono::milliseconds retry_delay{1000};  // after an error other than 410
  std::function<void(const std::string&)> log;  // what it does (relists, errors)
  // Told of each failed list before it is retried; when it returns true it has reported the
  // failure itself and the informer logs nothing of it (the operator says once that a job kind's
  // CRD is not installed, rather than a line a second).
  std::function<bool(const Status&)> on_list_error;
};

class Informer {
 public:
  using ChangeHandler = std::function<void(const nlohmann::json& object, bool deleted)>;

  Informer(Api& api, Resource resource, std::string namespace_name, Selector selector,
           InformerOptions options, ChangeHandler on_change);

  // Lists and watches until Stop(); returns within options.watch_timeout of Stop().
  void Run();
  void Stop();

  // One list (replacing the cache) and then one bounded watch; what Run() repeats. Exposed so
  // that tests can step it.
  Status ListOnce();
  Status WatchOnce();

  bool HasSynced() const;
  std::optional<nlohmann::json> Get(const std::string& key) const;
  std::vector<nlohmann::json> List() const;
  // The cached objects whose controller has this uid.
  std::vector<nlohmann::json> ListControlledBy(const std::string& uid) const;
  // Lists done so far (the first one included).
  int Lists() const;

  // Write-through of the operator's own changes (see above).
  void Upsert(const nlohmann::json& object);
  void Remove(const std::string& key);

 private:
  bool Apply(const nlohmann::json& object, bool deleted);
  // Keeps the controller index in step with objects_ (mutex_ held).
  void IndexLocked(const std::string& key, const nlohmann::json& object);
  void UnindexLocked(const std::string& key, const nlohmann::json& object);
  bool Stopping() const { return stopping_.load(); }
  void SleepUnlessStopped(std::chrono::milliseconds delay);
  void Log(const std::string& line) const;

  Api& api_;
  const Resource resource_;
  const std::string namespace_;
  const Selector selector_;
  const InformerOptions options_;
  const ChangeHandler on_change_;

  mutable std::mutex mutex_;
  std::condition_variable stop_requested_;
  std::map<std::string, nlohmann::json> objects_;
  std::map<std::string, std::set<std::string>> by_controller_;  // controller uid -> keys
  std::string resource_version_;                                // where the next watch starts
  bool synced_ = false;
  int lists_ = 0;
  std::atomic<bool> stopping_{false};
};

// The numeric value of a resourceVersion, nullopt when it is not a number.
std::optional<uint64_t> NumericResourceVersion(const nlohmann::json& object);

}  // namespace cohort::kube
