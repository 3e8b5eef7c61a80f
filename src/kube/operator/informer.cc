#include "kube/operator/informer.h"

#include "kube/operator/replica_objects.h"

namespace cohort::kube {
namespace {

std::optional<uint64_t> ParseVersion(const std::string& text) {
  if (text.empty() || text.size() > 19) return std::nullopt;
  uint64_t value = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return std::nullopt;
    value = value * 10 + static_cast<uint64_t>(c - '0');
  }
  return value;
}

std::string VersionText(const nlohmann::json& object) {
  if (!object.is_object() || !object.contains("metadata")) return "";
  const nlohmann::json& metadata = object["metadata"];
  auto found = metadata.find("resourceVersion");
  return found != metadata.end() && found->is_string() ? found->get<std::string>() : "";
}

// The uid of the object's controlling ownerReference, of whatever kind; "" when none.
std::string ControllingUid(const nlohmann::json& object) {
  if (!object.is_object() || !object.contains("metadata")) return "";
  const nlohmann::json& metadata = object["metadata"];
  auto owners = metadata.find("ownerReferences");
  if (owners == metadata.end() || !owners->is_array()) return "";
  for (const nlohmann::json& owner : *owners) {
    if (!owner.is_object()) continue;
    auto controller = owner.find("controller");
    auto uid = owner.find("uid");
    if (controller != owner.end() && controller->is_boolean() && controller->get<bool>() &&
        uid != owner.end() && uid->is_string()) {
      return uid->get<std::string>();
    }
  }
  return "";
}

}  // namespace

std::optional<uint64_t> NumericResourceVersion(const nlohmann::json& object) {
  return ParseVersion(VersionText(object));
}

Informer::Informer(Api& api, Resource resource, std::string namespace_name, Selector selector,
                   InformerOptions options, ChangeHandler on_change)
    : api_(api),
      resource_(std::move(resource)),
      namespace_(std::move(namespace_name)),
      selector_(std::move(selector)),
      options_(std::move(options)),
      on_change_(std::move(on_change)) {}

void Informer::Log(const std::string& line) const {
  if (options_.log) options_.log(resource_.plural + ": " + line);
}

void Informer::Run() {
  bool need_list = true;
  while (!Stopping()) {
    if (need_list) {
      Status listed = ListOnce();
      if (!listed.ok()) {
        if (!options_.on_list_error || !options_.on_list_error(listed)) {
          Log("list failed, again in " + std::to_string(options_.retry_delay.count()) +
              " ms: " + listed.message());
        }
        SleepUnlessStopped(options_.retry_delay);
        continue;
      }
      need_list = false;
    }
    Status watched = WatchOnce();
    if (watched.ok()) continue;
    if (watched.code() == Status::Code::kOutOfRange) {
      Log("watch expired (410), listing again: " + watched.message());
      need_list = true;
      continue;
    }
    Log("watch failed, again in " + std::to_string(options_.retry_delay.count()) +
        " ms: " + watched.message());
    SleepUnlessStopped(options_.retry_delay);
  }
}

void Informer::Stop() {
  stopping_.store(true);
  std::lock_guard<std::mutex> lock(mutex_);
  stop_requested_.notify_all();
}

void Informer::SleepUnlessStopped(std::chrono::milliseconds delay) {
  std::unique_lock<std::mutex> lock(mutex_);
  stop_requested_.wait_for(lock, delay, [&] { return Stopping(); });
}

Status Informer::ListOnce() {
  StatusOr<ObjectList> list = api_.List(resource_, namespace_, selector_);
  if (!list.ok()) return list.status();
  std::map<std::string, nlohmann::json> listed;
  for (nlohmann::json& item : list->items) {
    std::string key = ObjectKey(item);
    listed[key] = std::move(item);
  }
  std::vector<nlohmann::json> vanished;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (const auto& [key, object] : objects_) {
      if (listed.count(key) == 0) vanished.push_back(object);
    }
    objects_ = listed;
    by_controller_.clear();
    for (const auto& [key, object] : objects_) IndexLocked(key, object);
    resource_version_ = list->resource_version;
    synced_ = true;
    ++lists_;
  }
  for (const nlohmann::json& object : vanished) on_change_(object, true);
  for (const auto& [key, object] : listed) on_change_(object, false);
  return Status::OK();
}

Status Informer::WatchOnce() {
  std::string from;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    from = resource_version_;
  }
  return api_.Watch(resource_, namespace_, selector_, from, options_.watch_timeout,
                    [&](const WatchEvent& event) {
                      const std::string version = VersionText(event.object);
                      if (event.type != WatchEvent::Type::kBookmark) {
                        const bool deleted = event.type == WatchEvent::Type::kDeleted;
                        if (Apply(event.object, deleted)) on_change_(event.object, deleted);
                      }
                      if (!version.empty()) {
                        std::lock_guard<std::mutex> lock(mutex_);
                        resource_version_ = version;
                      }
                      return !Stopping();
                    });
}

// Returns whether the cache changed.
bool Informer::Apply(const nlohmann::json& object, bool deleted) {
  const std::string key = ObjectKey(object);
  std::lock_guard<std::mutex> lock(mutex_);
  auto found = objects_.find(key);
  if (found != objects_.end()) {
    std::optional<uint64_t> cached = NumericResourceVersion(found->second);
    std::optional<uint64_t> incoming = NumericResourceVersion(object);
    if (cached && incoming && *incoming < *cached) return false;  // older than what we wrote
  }
  if (deleted) {
    // A deletion of an older incarnation (another uid) leaves the newer object alone.
    if (found != objects_.end() &&
        found->second["metadata"].value("uid", "") != object["metadata"].value("uid", "")) {
      return false;
    }
    if (found == objects_.end()) return false;
    UnindexLocked(key, found->second);
    objects_.erase(found);
    return true;
  }
  if (found != objects_.end()) {
    UnindexLocked(key, found->second);
    found->second = object;
  } else {
    objects_.emplace(key, object);
  }
  IndexLocked(key, object);
  return true;
}

void Informer::IndexLocked(const std::string& key, const nlohmann::json& object) {
  const std::string uid = ControllingUid(object);
  if (!uid.empty()) by_controller_[uid].insert(key);
}

void Informer::UnindexLocked(const std::string& key, const nlohmann::json& object) {
  const std::string uid = ControllingUid(object);
  auto found = by_controller_.find(uid);
  if (found == by_controller_.end()) return;
  found->second.erase(key);
  if (found->second.empty()) by_controller_.erase(found);
}

void Informer::Upsert(const nlohmann::json& object) { Apply(object, false); }

void Informer::Remove(const std::string& key) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto found = objects_.find(key);
  if (found == objects_.end()) return;
  UnindexLocked(key, found->second);
  objects_.erase(found);
}

bool Informer::HasSynced() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return synced_;
}

std::optional<nlohmann::json> Informer::Get(const std::string& key) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto found = objects_.find(key);
  if (found == objects_.end()) return std::nullopt;
  return found->second;
}

std::vector<nlohmann::json> Informer::List() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<nlohmann::json> objects;
  objects.reserve(objects_.size());
  for (const auto& [key, object] : objects_) objects.push_back(object);
  return objects;
}

std::vector<nlohmann::json> Informer::ListControlledBy(const std::string& uid) const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<nlohmann::json> objects;
  auto found = by_controller_.find(uid);
  if (uid.empty() || found == by_controller_.end()) return objects;
  objects.reserve(found->second.size());
  for (const std::string& key : found->second) objects.push_back(objects_.at(key));
  return objects;
}

int Informer::Lists() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return lists_;
}

}  // namespace cohort::kube
