#include "ui/request_store.h"

namespace cohort::ui {
namespace {

// The value of `key` in `memo`, read with `read` the first time.
template <typename Value, typename Read>
const Value& Memoized(std::map<std::string, Value>& memo, const exec::JobKey& key, Read&& read) {
  auto it = memo.find(key.ToString());
  if (it == memo.end()) it = memo.emplace(key.ToString(), read()).first;
  return it->second;
}

}  // namespace

StatusOr<job::Job> RequestStore::ReadSpec(const exec::JobKey& key) const {
  return Memoized(specs_, key, [&] { return store_.ReadSpec(key); });
}

StatusOr<nlohmann::json> RequestStore::ReadSpecObject(const exec::JobKey& key) const {
  return Memoized(spec_objects_, key, [&] { return store_.ReadSpecObject(key); });
}

Time RequestStore::CreationTime(const exec::JobKey& key) const {
  return Memoized(creation_times_, key, [&] { return store_.CreationTime(key); });
}

StatusOr<job::JobStatus> RequestStore::ReadStatus(const exec::JobKey& key) const {
  return Memoized(statuses_, key, [&] { return store_.ReadStatus(key); });
}

std::vector<exec::ReplicaRow> RequestStore::ReadReplicas(const exec::JobKey& key) const {
  return Memoized(replicas_, key, [&] { return store_.ReadReplicas(key); });
}

}  // namespace cohort::ui
