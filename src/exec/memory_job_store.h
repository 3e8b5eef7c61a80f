// MemoryJobStore: a JobStateStore that keeps every job's state in memory.
//
// The test double of the controller's and the read model's unit tests: the same behaviour as
// the $COHORT_HOME directory (job_store.h) without a file, so a test can fill it with fixed
// contents and read back exactly what was written. Not thread-safe; not shared between
// processes.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "exec/job_state_store.h"
#include "job/job_kind.h"

namespace cohort::exec {

class MemoryJobStore : public JobStateStore {
 public:
  // Specs are read back with `kinds` (every kind Cohort runs, unless a test adds its own).
  explicit MemoryJobStore(const job::KindRegistry& kinds = job::KindRegistry::Default())
      : kinds_(&kinds) {}

  // Jobs created from now on get `created_at` as their creationTimestamp (default: the clock).
  void SetCreationTime(Time created_at) { creation_time_ = created_at; }

  Status CreateJob(const job::Job& job, SupervisorLock* lock) override;
  Status DeleteJob(const JobKey& key) override;
  bool Exists(const JobKey& key) const override;
  std::vector<JobKey> ListJobs(const std::string& namespace_name = "") const override;

  StatusOr<job::Job> ReadSpec(const JobKey& key) const override;
  StatusOr<nlohmann::json> ReadSpecObject(const JobKey& key) const override;
  int64_t SpecVersion(const JobKey& key) const override;
  Status SetSuspended(const JobKey& key, bool suspended) override;
  Time CreationTime(const JobKey& key) const override;

  Status WriteStatus(const JobKey& key, const job::JobStatus& status) override;
  StatusOr<job::JobStatus> ReadStatus(const JobKey& key) const override;
  Status AppendEvents(const JobKey& key, const std::vector<job::Event>& events) override;
  StatusOr<std::vector<job::Event>> ReadEvents(const JobKey& key) const override;
  Status WriteEndpoints(const JobKey& key, const std::map<std::string, int>& ports) override;
  StatusOr<std::map<std::string, int>> ReadEndpoints(const JobKey& key) const override;
  Status WriteReplicas(const JobKey& key, const std::vector<ReplicaRow>& rows) override;
  std::vector<ReplicaRow> ReadReplicas(const JobKey& key) const override;
  // "memory:<namespace>/<name>/<replica>.log"
  std::string LogLocation(const JobKey& key, const std::string& replica) const override;

  // How many times WriteStatus was called for `key`.
  int status_writes(const JobKey& key) const;

 private:
  const job::KindRegistry* kinds_;
  struct StoredJob {
    nlohmann::json spec_object;
    Time created_at;
    int64_t spec_version = 1;
    job::JobStatus status;
    int status_writes = 0;
    std::vector<job::Event> events;
    std::map<std::string, int> endpoints;
    std::vector<ReplicaRow> replicas;
  };
  const StoredJob* Find(const JobKey& key) const;
  StoredJob* Find(const JobKey& key);

  std::map<std::string, StoredJob> jobs_;  // by JobKey::ToString(), so sorted as ListJobs wants
  std::optional<Time> creation_time_;
};

}  // namespace cohort::exec
