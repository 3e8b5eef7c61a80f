#include "kube/operator/event_recorder.h"

#include <cstdio>

namespace cohort::kube {

std::atomic<uint64_t> EventRecorder::sequence_{0};

EventRecorder::EventRecorder(Api& api, std::string component, std::string instance)
    : api_(api), component_(std::move(component)), instance_(std::move(instance)) {}

Status EventRecorder::Record(const nlohmann::json& involved, const job::Event& event) {
  const nlohmann::json& metadata = involved.at("metadata");
  const std::string namespace_name = metadata.value("namespace", "default");
  const std::string job_name = metadata.value("name", "");
  const std::string uid = metadata.value("uid", "");
  const std::string timestamp = FormatTime(event.time);
  const Key key{uid, event.type, event.reason, event.message};

  Recorded recorded;
  bool repeat = false;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto found = recorded_.find(key);
    if (found != recorded_.end()) {
      repeat = true;
      recorded = found->second;
    }
  }
  const uint64_t sequence = sequence_.fetch_add(1) + 1;
  if (repeat) {
    nlohmann::json patch = {{"count", recorded.count + 1}, {"lastTimestamp", timestamp}};
    StatusOr<nlohmann::json> patched =
        api_.Patch(EventResource(), recorded.namespace_name, recorded.name, patch);
    if (patched.ok()) {
      std::lock_guard<std::mutex> lock(mutex_);
      recorded_[key].count = recorded.count + 1;
      return Status::OK();
    }
    if (patched.status().code() != Status::Code::kNotFound) return patched.status();
    // The Event expired on the server (events have a TTL): start a new one.
  }
  char suffix[40];
  std::snprintf(suffix, sizeof(suffix), ".%llx%04llx",
                static_cast<unsigned long long>(event.time.time_since_epoch().count()),
                static_cast<unsigned long long>(sequence & 0xffff));
  const std::string name = job_name + suffix;
  nlohmann::json object = {
      {"apiVersion", "v1"},
      {"kind", "Event"},
      {"metadata", {{"name", name}, {"namespace", namespace_name}}},
      {"involvedObject",
       {{"apiVersion", involved.value("apiVersion", "")},
        {"kind", involved.value("kind", "")},
        {"namespace", namespace_name},
        {"name", job_name},
        {"uid", uid}}},
      {"type", event.type},
      {"reason", event.reason},
      {"message", event.message},
      {"source", {{"component", component_}}},
      {"reportingComponent", component_},
      {"reportingInstance", instance_},
      {"firstTimestamp", timestamp},
      {"lastTimestamp", timestamp},
      {"count", 1},
  };
  StatusOr<nlohmann::json> created = api_.Create(EventResource(), namespace_name, object);
  if (!created.ok()) return created.status();
  std::lock_guard<std::mutex> lock(mutex_);
  recorded_[key] = Recorded{namespace_name, name, 1};
  return Status::OK();
}

void EventRecorder::Forget(const std::string& involved_uid) {
  std::lock_guard<std::mutex> lock(mutex_);
  for (auto it = recorded_.begin(); it != recorded_.end();) {
    it = std::get<0>(it->first) == involved_uid ? recorded_.erase(it) : std::next(it);
  }
}

}  // namespace cohort::kube
