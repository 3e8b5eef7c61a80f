#include "exec/memory_job_store.h"

#include "job/spec_writer.h"
#include "job/status_json.h"

namespace cohort::exec {

const MemoryJobStore::StoredJob* MemoryJobStore::Find(const JobKey& key) const {
  auto it = jobs_.find(key.ToString());
  return it == jobs_.end() ? nullptr : &it->second;
}

MemoryJobStore::StoredJob* MemoryJobStore::Find(const JobKey& key) {
  auto it = jobs_.find(key.ToString());
  return it == jobs_.end() ? nullptr : &it->second;
}

Status MemoryJobStore::CreateJob(const job::Job& job, SupervisorLock* /*lock*/) {
  JobKey key{job.metadata.namespace_name, job.metadata.name};
  if (Find(key) != nullptr)
    return Status::AlreadyExists("job " + key.ToString() + " already exists");
  StoredJob stored;
  // Whole seconds, as creationTimestamp keeps it.
  stored.created_at = *ParseTime(FormatTime(creation_time_ ? *creation_time_ : Clock::now()));
  stored.spec_object = job::ToJson(job);
  stored.spec_object["metadata"]["creationTimestamp"] = FormatTime(stored.created_at);
  jobs_[key.ToString()] = std::move(stored);
  return Status::OK();
}

Status MemoryJobStore::DeleteJob(const JobKey& key) {
  if (jobs_.erase(key.ToString()) == 0) {
    return Status::NotFound("job " + key.ToString() + " not found");
  }
  return Status::OK();
}

bool MemoryJobStore::Exists(const JobKey& key) const { return Find(key) != nullptr; }

std::vector<JobKey> MemoryJobStore::ListJobs(const std::string& namespace_name) const {
  std::vector<JobKey> keys;
  for (const auto& [name, stored] : jobs_) {
    const nlohmann::json& metadata = stored.spec_object["metadata"];
    JobKey key{metadata.value("namespace", "default"), metadata.value("name", "")};
    if (namespace_name.empty() || key.namespace_name == namespace_name) keys.push_back(key);
  }
  return keys;
}

StatusOr<job::Job> MemoryJobStore::ReadSpec(const JobKey& key) const {
  const StoredJob* stored = Find(key);
  if (stored == nullptr) return Status::NotFound("job " + key.ToString() + " not found");
  return job::JobFromJson(stored->spec_object, nullptr, *kinds_);
}

StatusOr<nlohmann::json> MemoryJobStore::ReadSpecObject(const JobKey& key) const {
  const StoredJob* stored = Find(key);
  if (stored == nullptr) return Status::NotFound("job " + key.ToString() + " not found");
  return stored->spec_object;
}

int64_t MemoryJobStore::SpecVersion(const JobKey& key) const {
  const StoredJob* stored = Find(key);
  return stored == nullptr ? 0 : stored->spec_version;
}

Status MemoryJobStore::SetSuspended(const JobKey& key, bool suspended) {
  StoredJob* stored = Find(key);
  if (stored == nullptr) return Status::NotFound("job " + key.ToString() + " not found");
  stored->spec_object["spec"]["runPolicy"]["suspend"] = suspended;
  stored->spec_version += 1;
  return Status::OK();
}

Time MemoryJobStore::CreationTime(const JobKey& key) const {
  const StoredJob* stored = Find(key);
  return stored == nullptr ? Clock::now() : stored->created_at;
}

Status MemoryJobStore::WriteStatus(const JobKey& key, const job::JobStatus& status) {
  StoredJob* stored = Find(key);
  if (stored == nullptr) return Status::NotFound("job " + key.ToString() + " not found");
  // Through JSON, as the file store does, so what is read back is what a file would give.
  StatusOr<job::JobStatus> round_trip = job::JobStatusFromJson(job::JobStatusToJson(status));
  if (!round_trip.ok()) return round_trip.status();
  stored->status = *round_trip;
  stored->status_writes += 1;
  return Status::OK();
}

StatusOr<job::JobStatus> MemoryJobStore::ReadStatus(const JobKey& key) const {
  const StoredJob* stored = Find(key);
  return stored == nullptr ? job::JobStatus{} : stored->status;
}

Status MemoryJobStore::AppendEvents(const JobKey& key, const std::vector<job::Event>& events) {
  StoredJob* stored = Find(key);
  if (stored == nullptr) return Status::NotFound("job " + key.ToString() + " not found");
  stored->events.insert(stored->events.end(), events.begin(), events.end());
  return Status::OK();
}

StatusOr<std::vector<job::Event>> MemoryJobStore::ReadEvents(const JobKey& key) const {
  const StoredJob* stored = Find(key);
  return stored == nullptr ? std::vector<job::Event>{} : stored->events;
}

Status MemoryJobStore::WriteEndpoints(const JobKey& key, const std::map<std::string, int>& ports) {
  StoredJob* stored = Find(key);
  if (stored == nullptr) return Status::NotFound("job " + key.ToString() + " not found");
  stored->endpoints = ports;
  return Status::OK();
}

StatusOr<std::map<std::string, int>> MemoryJobStore::ReadEndpoints(const JobKey& key) const {
  const StoredJob* stored = Find(key);
  if (stored == nullptr) return Status::NotFound("job " + key.ToString() + " not found");
  return stored->endpoints;
}

Status MemoryJobStore::WriteReplicas(const JobKey& key, const std::vector<ReplicaRow>& rows) {
  StoredJob* stored = Find(key);
  if (stored == nullptr) return Status::NotFound("job " + key.ToString() + " not found");
  stored->replicas = rows;
  return Status::OK();
}

std::vector<ReplicaRow> MemoryJobStore::ReadReplicas(const JobKey& key) const {
  const StoredJob* stored = Find(key);
  return stored == nullptr ? std::vector<ReplicaRow>{} : stored->replicas;
}

std::string MemoryJobStore::LogLocation(const JobKey& key, const std::string& replica) const {
  return "memory:" + key.ToString() + "/" + replica + ".log";
}

int MemoryJobStore::status_writes(const JobKey& key) const {
  const StoredJob* stored = Find(key);
  return stored == nullptr ? 0 : stored->status_writes;
}

}  // namespace cohort::exec
