// LocalJobClient: the JobClient (job_client.h) of the jobs on this machine, under $COHORT_HOME:
// exec::LocalJobs (exec/local_jobs.h) carries out what changes jobs, and the job store
// (exec/job_store.h) is what reads return (it keys jobs by namespace and name whatever their
// kind, so a name is never two jobs here; a kind filter reads each job's spec), so that `cohort
// get` and the dashboard print what the files say at that moment.
//
//   LocalJobClient client({exec::DefaultCohortHome()});
//   StatusOr<JobList> jobs = client.GetJobs({.namespace_name = "default"});
//
// Every read tidies the jobs it lists first (a job whose supervisor died is marked Failed, a
// finished job whose TTL ran out is deleted: there is no daemon to do it on time); `tidy_every`
// bounds how often a listing tidies every job, for a dashboard that polls. No state is kept
// between calls but that bound, so one client may serve several threads at once.
#pragma once

#include <chrono>
#include <filesystem>
#include <mutex>

#include "exec/local_jobs.h"
#include "view/job_client.h"

namespace cohort::view {

struct LocalJobClientOptions {
  std::filesystem::path home;  // $COHORT_HOME
  // A listing of every job of a namespace tidies every job at most this often (0: each time, as
  // a command does).
  std::chrono::milliseconds tidy_every{0};
};

class LocalJobClient : public JobClient {
 public:
  explicit LocalJobClient(LocalJobClientOptions options) : options_(std::move(options)) {}

  const std::filesystem::path& home() const { return options_.home; }

  std::string Namespace(const std::optional<std::string>& namespace_flag) const override {
    return namespace_flag.value_or("default");
  }
  bool RunsHere() const override { return true; }
  StatusOr<JobList> GetJobs(const JobQuery& query) override;
  StatusOr<PodList> GetPods(const JobQuery& query,
                            const std::vector<std::string>& pod_names) override;
  Status CanWatch() const override { return Status::OK(); }
  StatusOr<bool> Watch(const std::vector<exec::JobKey>& keys, std::chrono::milliseconds timeout,
                       const std::function<void(const JobList& changed)>& on_changed) override;
  StatusOr<Created> Create(const CreateRequest& request) override;
  StatusOr<Created> Apply(const CreateRequest& request) override;
  StatusOr<std::string> Delete(const exec::JobKey& key, const job::JobKind* kind) override;
  StatusOr<std::string> DeleteAndPurge(
      const exec::JobKey& key, const job::JobKind* kind,
      const std::function<void(const std::string&)>& on_removed) override;
  StatusOr<std::string> SetSuspended(const exec::JobKey& key, const job::JobKind* kind,
                                     bool suspended) override;
  StatusOr<job::JobStatus> Wait(const exec::JobKey& key, const job::JobKind* kind,
                                std::chrono::milliseconds timeout) override;
  Status Logs(const std::string& namespace_name, const LogRequest& request,
              const LogSink& sink) override;

 private:
  // OK when `kind` is null or the job `key` is of that kind, else NotFound saying what it is.
  static Status CheckKind(const exec::JobStateStore& store, const exec::JobKey& key,
                          const job::JobKind* kind);
  // The keys of the jobs `query` names (of its kind), tidied.
  StatusOr<std::vector<exec::JobKey>> Lookup(exec::LocalJobs& jobs, const JobQuery& query);

  LocalJobClientOptions options_;
  std::mutex tidy_mutex_;
  std::chrono::steady_clock::time_point last_tidy_{};
};

}  // namespace cohort::view
