// RequestStore: one request's read-only view of the job store, which reads each job's spec,
// status and replica table once however often the read model asks. Rendering a list of pods asks
// for a job's spec and replica table once per pod; through this view a 200-job page reads each
// file once. Built per request and dropped after it, so it never serves stale state; not
// thread-safe (one request, one thread). Writes are refused.
//
//   RequestStore view(jobs.store());
//   nlohmann::json pods = view::PodObject(view, pod);
#pragma once

#include <map>
#include <string>
#include <vector>

#include "exec/job_state_store.h"

namespace cohort::ui {

class RequestStore : public exec::JobStateStore {
 public:
  explicit RequestStore(const exec::JobStateStore& store) : store_(store) {}

  Status CreateJob(const job::Job& job, exec::SupervisorLock* lock) override { return ReadOnly(); }
  Status DeleteJob(const exec::JobKey& key) override { return ReadOnly(); }
  bool Exists(const exec::JobKey& key) const override { return store_.Exists(key); }
  std::vector<exec::JobKey> ListJobs(const std::string& namespace_name = "") const override {
    return store_.ListJobs(namespace_name);
  }
  StatusOr<job::Job> ReadSpec(const exec::JobKey& key) const override;
  StatusOr<nlohmann::json> ReadSpecObject(const exec::JobKey& key) const override;
  int64_t SpecVersion(const exec::JobKey& key) const override { return store_.SpecVersion(key); }
  Status Health(const exec::JobKey& key) const override { return store_.Health(key); }
  Status SetSuspended(const exec::JobKey& key, bool suspended) override { return ReadOnly(); }
  Time CreationTime(const exec::JobKey& key) const override;
  Status WriteStatus(const exec::JobKey& key, const job::JobStatus& status) override {
    return ReadOnly();
  }
  StatusOr<job::JobStatus> ReadStatus(const exec::JobKey& key) const override;
  Status AppendEvents(const exec::JobKey& key, const std::vector<job::Event>& events) override {
    return ReadOnly();
  }
  StatusOr<std::vector<job::Event>> ReadEvents(const exec::JobKey& key) const override {
    return store_.ReadEvents(key);
  }
  Status WriteEndpoints(const exec::JobKey& key, const std::map<std::string, int>& ports) override {
    return ReadOnly();
  }
  StatusOr<std::map<std::string, int>> ReadEndpoints(const exec::JobKey& key) const override {
    return store_.ReadEndpoints(key);
  }
  Status WriteReplicas(const exec::JobKey& key,
                       const std::vector<exec::ReplicaRow>& rows) override {
    return ReadOnly();
  }
  std::vector<exec::ReplicaRow> ReadReplicas(const exec::JobKey& key) const override;
  std::string LogLocation(const exec::JobKey& key, const std::string& replica) const override {
    return store_.LogLocation(key, replica);
  }

 private:
  static Status ReadOnly() {
    return Status::FailedPrecondition("a dashboard request's view of the jobs is read-only");
  }

  const exec::JobStateStore& store_;
  mutable std::map<std::string, StatusOr<job::Job>> specs_;
  mutable std::map<std::string, StatusOr<nlohmann::json>> spec_objects_;
  mutable std::map<std::string, StatusOr<job::JobStatus>> statuses_;
  mutable std::map<std::string, std::vector<exec::ReplicaRow>> replicas_;
  mutable std::map<std::string, Time> creation_times_;
};

}  // namespace cohort::ui
