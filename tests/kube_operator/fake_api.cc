#include "fake_api.h"

#include <chrono>
#include <sstream>

#include "base/time.h"

namespace cohort::kube::testing {
namespace {

std::string Describe(const Resource& resource, const std::string& namespace_name,
                     const std::string& name) {
  return resource.kind + " " + namespace_name + "/" + name;
}

std::optional<uint64_t> ParseVersion(const std::string& text) {
  if (text.empty()) return std::nullopt;
  for (char c : text) {
    if (c < '0' || c > '9') return std::nullopt;
  }
  return std::stoull(text);
}

}  // namespace

std::string FakeApi::StoreOf(const Resource& resource) {
  return resource.plural + (resource.group.empty() ? "" : "." + resource.group);
}

bool FakeApi::HasStatusSubresource(const Resource& resource) {
  // Pods and every job kind's resource (tfjobs, pytorchjobs).
  return resource.plural == "pods" || resource.group == "kubeflow.org";
}

bool FakeApi::Matches(const nlohmann::json& object, const Selector& selector) {
  if (selector.label_selector.empty()) return true;
  const nlohmann::json labels = object["metadata"].value("labels", nlohmann::json::object());
  // Terms split at the commas outside parentheses: "k in (a,b)" is one term.
  std::vector<std::string> terms(1);
  int depth = 0;
  for (char c : selector.label_selector) {
    if (c == '(') ++depth;
    if (c == ')') --depth;
    if (c == ',' && depth == 0) {
      terms.emplace_back();
      continue;
    }
    terms.back() += c;
  }
  for (const std::string& term : terms) {
    if (const size_t in = term.find(" in ("); in != std::string::npos && term.back() == ')') {
      const std::string key = term.substr(0, in);
      std::stringstream values(term.substr(in + 5, term.size() - in - 6));
      bool found = false;
      for (std::string value; std::getline(values, value, ',');) {
        found = found || (labels.contains(key) && labels[key] == value);
      }
      if (!found) return false;
      continue;
    }
    const size_t equals = term.find('=');
    if (equals == std::string::npos) {
      if (!labels.contains(term)) return false;
      continue;
    }
    const std::string key = term.substr(0, equals);
    const std::string value = term.substr(term.find_first_not_of('=', equals));
    if (!labels.contains(key) || labels[key] != value) return false;
  }
  return true;
}

void FakeApi::Unserve(const std::string& plural) {
  std::lock_guard<std::mutex> lock(mutex_);
  unserved_.insert(plural);
}

Status FakeApi::NotServed(const Resource& resource) {
  return Status::NotFound("the server could not find the requested resource (" + resource.plural +
                          "." + resource.group + ")");
}

void FakeApi::Count(const std::string& verb, const Resource& resource) {
  ++calls_[verb + " " + resource.plural];
}

int FakeApi::Calls(const std::string& verb, const std::string& plural) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto found = calls_.find(verb + " " + plural);
  return found == calls_.end() ? 0 : found->second;
}

void FakeApi::Commit(const std::string& store, const std::string& namespace_name,
                     WatchEvent::Type type, nlohmann::json& object) {
  ++version_;
  object["metadata"]["resourceVersion"] = std::to_string(version_);
  history_.push_back(Change{store, namespace_name, type, object, version_});
  changed_.notify_all();
}

StatusOr<nlohmann::json> FakeApi::Get(const Resource& resource, const std::string& namespace_name,
                                      const std::string& name) {
  std::lock_guard<std::mutex> lock(mutex_);
  Count("get", resource);
  auto& store = stores_[StoreOf(resource)];
  auto found = store.find({namespace_name, name});
  if (found == store.end()) {
    return Status::NotFound("get " + Describe(resource, namespace_name, name) + ": not found");
  }
  return found->second;
}

StatusOr<ObjectList> FakeApi::List(const Resource& resource, const std::string& namespace_name,
                                   const Selector& selector) {
  std::lock_guard<std::mutex> lock(mutex_);
  Count("list", resource);
  if (unserved_.count(resource.plural)) return NotServed(resource);
  ObjectList list;
  for (const auto& [key, object] : stores_[StoreOf(resource)]) {
    if (!namespace_name.empty() && key.first != namespace_name) continue;
    if (Matches(object, selector)) list.items.push_back(object);
  }
  list.resource_version = std::to_string(version_);
  return list;
}

StatusOr<nlohmann::json> FakeApi::Create(const Resource& resource,
                                         const std::string& namespace_name,
                                         const nlohmann::json& object) {
  std::lock_guard<std::mutex> lock(mutex_);
  Count("create", resource);
  nlohmann::json stored = object;
  const std::string name = stored["metadata"].value("name", "");
  if (name.empty()) return Status::InvalidArgument("create " + resource.kind + ": no name");
  auto& store = stores_[StoreOf(resource)];
  if (store.count({namespace_name, name})) {
    return Status::AlreadyExists("create " + Describe(resource, namespace_name, name) +
                                 ": already exists");
  }
  stored["metadata"]["namespace"] = namespace_name;
  stored["metadata"]["uid"] = "uid-" + std::to_string(next_uid_++);
  stored["metadata"]["creationTimestamp"] = FormatTime(Clock::now());
  if (HasStatusSubresource(resource)) {
    stored.erase("status");
    if (resource.plural == "pods") stored["status"] = {{"phase", "Pending"}};
  }
  Commit(StoreOf(resource), namespace_name, WatchEvent::Type::kAdded, stored);
  store[{namespace_name, name}] = stored;
  return stored;
}

StatusOr<nlohmann::json> FakeApi::Update(const Resource& resource,
                                         const std::string& namespace_name,
                                         const nlohmann::json& object, bool status_subresource) {
  std::lock_guard<std::mutex> lock(mutex_);
  Count(status_subresource ? "update-status" : "update", resource);
  const std::string name = object["metadata"].value("name", "");
  auto& store = stores_[StoreOf(resource)];
  auto found = store.find({namespace_name, name});
  if (found == store.end()) {
    return Status::NotFound("update " + Describe(resource, namespace_name, name) + ": not found");
  }
  nlohmann::json& current = found->second;
  if (status_subresource && status_conflicts_ > 0) {
    --status_conflicts_;
    Commit(StoreOf(resource), namespace_name, WatchEvent::Type::kModified, current);
    return Status::Aborted("update " + Describe(resource, namespace_name, name) +
                           ": the object has been modified; please apply your changes to the "
                           "latest version and try again");
  }
  const std::string sent_version = object["metadata"].value("resourceVersion", "");
  if (!sent_version.empty() && sent_version != current["metadata"].value("resourceVersion", "")) {
    return Status::Aborted("update " + Describe(resource, namespace_name, name) +
                           ": the object has been modified");
  }
  nlohmann::json updated;
  if (status_subresource) {
    updated = current;
    updated["status"] = object.value("status", nlohmann::json());
  } else {
    updated = object;
    updated["metadata"]["uid"] = current["metadata"]["uid"];
    updated["metadata"]["creationTimestamp"] = current["metadata"]["creationTimestamp"];
    updated["metadata"]["namespace"] = namespace_name;
    if (HasStatusSubresource(resource)) {
      updated.erase("status");
      if (current.contains("status")) updated["status"] = current["status"];
    }
  }
  Commit(StoreOf(resource), namespace_name, WatchEvent::Type::kModified, updated);
  current = updated;
  return updated;
}

StatusOr<nlohmann::json> FakeApi::Patch(const Resource& resource, const std::string& namespace_name,
                                        const std::string& name, const nlohmann::json& patch,
                                        bool status_subresource) {
  std::lock_guard<std::mutex> lock(mutex_);
  Count(status_subresource ? "patch-status" : "patch", resource);
  if (int& failing = failing_patches_[resource.plural]; failing > 0) {
    --failing;
    return Status::Unavailable("patch " + Describe(resource, namespace_name, name) +
                               ": the server is overloaded");
  }
  auto& store = stores_[StoreOf(resource)];
  auto found = store.find({namespace_name, name});
  if (found == store.end()) {
    return Status::NotFound("patch " + Describe(resource, namespace_name, name) + ": not found");
  }
  nlohmann::json updated = found->second;
  nlohmann::json applied = patch;
  if (status_subresource) {
    applied = nlohmann::json{{"status", patch.value("status", nlohmann::json::object())}};
  } else if (HasStatusSubresource(resource)) {
    applied.erase("status");
  }
  updated.merge_patch(applied);
  Commit(StoreOf(resource), namespace_name, WatchEvent::Type::kModified, updated);
  found->second = updated;
  return updated;
}

Status FakeApi::Delete(const Resource& resource, const std::string& namespace_name,
                       const std::string& name, const DeleteOptions& options) {
  std::lock_guard<std::mutex> lock(mutex_);
  Count("delete", resource);
  auto& store = stores_[StoreOf(resource)];
  auto found = store.find({namespace_name, name});
  if (found == store.end()) {
    return Status::NotFound("delete " + Describe(resource, namespace_name, name) + ": not found");
  }
  if (!options.uid.empty() && found->second["metadata"].value("uid", "") != options.uid) {
    return Status::Aborted("delete " + Describe(resource, namespace_name, name) +
                           ": precondition failed: uid in precondition: " + options.uid);
  }
  nlohmann::json gone = found->second;
  store.erase(found);
  Commit(StoreOf(resource), namespace_name, WatchEvent::Type::kDeleted, gone);
  return Status::OK();
}

Status FakeApi::Watch(const Resource& resource, const std::string& namespace_name,
                      const Selector& selector, const std::string& resource_version,
                      std::chrono::seconds timeout,
                      const std::function<bool(const WatchEvent&)>& on_event) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  const std::string store = StoreOf(resource);
  std::unique_lock<std::mutex> lock(mutex_);
  Count("watch", resource);
  if (unserved_.count(resource.plural)) return NotServed(resource);
  std::optional<uint64_t> from = ParseVersion(resource_version);
  uint64_t seen = from ? *from : version_;
  while (true) {
    if (seen < expired_before_) {
      return Status::OutOfRange("watch " + resource.kind +
                                ": too old resource version: " + std::to_string(seen));
    }
    size_t next = 0;
    while (next < history_.size() && history_[next].version <= seen) ++next;
    for (; next < history_.size(); ++next) {
      const Change change = history_[next];
      seen = change.version;
      if (change.store != store) continue;
      if (!namespace_name.empty() && change.namespace_name != namespace_name) continue;
      if (!Matches(change.object, selector)) continue;
      lock.unlock();
      const bool go_on = on_event(WatchEvent{change.type, change.object});
      lock.lock();
      if (!go_on) return Status::OK();
    }
    if (std::chrono::steady_clock::now() >= deadline) return Status::OK();
    changed_.wait_until(lock, deadline);
  }
}

StatusOr<std::string> FakeApi::PodLog(const std::string& namespace_name, const std::string& pod,
                                      const LogOptions&) {
  return Status::NotFound("the fake API server keeps no logs (pod " + namespace_name + "/" + pod +
                          ")");
}

void FakeApi::ExpireWatches() {
  std::lock_guard<std::mutex> lock(mutex_);
  ++version_;
  expired_before_ = version_;
  changed_.notify_all();
}

void FakeApi::FailPatches(const std::string& plural, int count) {
  std::lock_guard<std::mutex> lock(mutex_);
  failing_patches_[plural] = count;
}

void FakeApi::FailStatusUpdates(int count) {
  std::lock_guard<std::mutex> lock(mutex_);
  status_conflicts_ = count;
}

std::vector<nlohmann::json> FakeApi::Objects(const std::string& plural,
                                             const std::string& namespace_name) const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<nlohmann::json> objects;
  for (const auto& [store, objects_of_store] : stores_) {
    if (store != plural && store.rfind(plural + ".", 0) != 0) continue;
    for (const auto& [key, object] : objects_of_store) {
      if (namespace_name.empty() || key.first == namespace_name) objects.push_back(object);
    }
  }
  return objects;
}

std::optional<nlohmann::json> FakeApi::Object(const std::string& plural,
                                              const std::string& namespace_name,
                                              const std::string& name) const {
  for (const nlohmann::json& object : Objects(plural, namespace_name)) {
    if (object["metadata"].value("name", "") == name) return object;
  }
  return std::nullopt;
}

Status FakeApi::SetPodStatus(const std::string& namespace_name, const std::string& name,
                             const nlohmann::json& status) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto& store = stores_["pods"];
  auto found = store.find({namespace_name, name});
  if (found == store.end()) return Status::NotFound("pod " + namespace_name + "/" + name);
  found->second["status"] = status;
  Commit("pods", namespace_name, WatchEvent::Type::kModified, found->second);
  return Status::OK();
}

}  // namespace cohort::kube::testing
