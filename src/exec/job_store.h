// JobStore: each job's state on disk, under $COHORT_HOME; the JobStateStore every command uses.
//
//   $COHORT_HOME/jobs/<namespace>/<name>/
//     spec.json          the normalised (defaulted) TFJob
//     status.json        the TFJob status, rewritten atomically on every change
//     events.jsonl       one event per line, appended
//     endpoints.json     the port reserved for each replica, fixed for the job's life
//     replicas.json      the replica table, rewritten when it changes
//     secret             the job secret its replicas share (mode 0600)
//     supervisor.lock    held (flock) by the live supervisor; free once it is gone
//     supervisor.pid
//     supervisor.log     a detached supervisor's output
//     logs/<type>-<index>.log          the replica's output (its current file), written by the
//                                      supervisor; .log.start, .log.1 ... once rotated
//                                      (replica_log.h)
//     termination/<type>-<index>.termination-log
//     summaries/<type>-<index>/   the replica's TensorBoard runs, or links to them
//                         (COHORT_SUMMARY_DIR, cluster/summary_location.h)
//
// Every file is checked as it is read (its JSON and the type of every field), so a corrupt
// file is a per-job error (Health, IOError "job NS/NAME is broken: FILE: WHAT") and never an
// exception, whichever command reads it; the other jobs are still listed and served. A job whose
// spec.json is missing or unreadable but whose other state is there (status.json, endpoints.json
// or secret, which are written only after the spec) is still listed, as broken, and can be
// deleted.
//
// There is no daemon: every command reads these files. Writes that others read whole (status,
// spec) go to a temporary file that is renamed into place, so a kill -9 at any moment leaves the
// old or the new file, never a torn one.
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "base/file.h"
#include "base/status.h"
#include "exec/job_state_store.h"
#include "exec/supervisor_lock.h"
#include "job/common_types.h"
#include "job/job_kind.h"

namespace cohort::exec {

// The folder of a job's directory that holds each replica's summaries directory.
inline constexpr char kSummariesDirectoryName[] = "summaries";

// The replica table as replicas.json holds it, checked field by field: InvalidArgument naming
// the first field that is not what it must be ("[0].name: must be a string"). Never throws.
StatusOr<std::vector<ReplicaRow>> ReplicaTableFromJson(const nlohmann::json& table);

// $COHORT_HOME, else ~/.cohort.
std::filesystem::path DefaultCohortHome();

class JobStore : public JobStateStore {
 public:
  // Saved specs are read back with `kinds` (every kind Cohort runs, unless a test adds its own).
  explicit JobStore(std::filesystem::path home,
                    const job::KindRegistry& kinds = job::KindRegistry::Default())
      : home_(std::move(home)), kinds_(&kinds) {}

  const std::filesystem::path& home() const { return home_; }
  std::filesystem::path JobDirectory(const JobKey& key) const;
  std::filesystem::path LogPath(const JobKey& key, const std::string& replica) const;

  // Takes `lock` (the job's supervisor lock) before the spec is written, that is before any
  // command can see the job: a visible job without status whose lock is free is then one whose
  // creator or supervisor died, never one still being prepared (supervisor_lock.h).
  Status CreateJob(const job::Job& job, SupervisorLock* lock) override;
  Status DeleteJob(const JobKey& key) override;
  bool Exists(const JobKey& key) const override;
  std::vector<JobKey> ListJobs(const std::string& namespace_name = "") const override;

  StatusOr<job::Job> ReadSpec(const JobKey& key) const override;
  StatusOr<nlohmann::json> ReadSpecObject(const JobKey& key) const override;
  // The spec's metadata.generation, as Kubernetes counts it: 1 when the job is created, one more at
  // every change of its spec (SetSuspended counts under a lock on the job's spec.lock).
  int64_t SpecVersion(const JobKey& key) const override;
  Status SetSuspended(const JobKey& key, bool suspended) override;
  Time CreationTime(const JobKey& key) const override;

  Status WriteStatus(const JobKey& key, const job::JobStatus& status) override;
  StatusOr<job::JobStatus> ReadStatus(const JobKey& key) const override;
  Status AppendEvents(const JobKey& key, const std::vector<job::Event>& events) override;
  StatusOr<std::vector<job::Event>> ReadEvents(const JobKey& key) const override;
  Status WriteEndpoints(const JobKey& key, const std::map<std::string, int>& ports) override;
  StatusOr<std::map<std::string, int>> ReadEndpoints(const JobKey& key) const override;
  // Leaves replicas.json alone when it already holds `rows`.
  Status WriteReplicas(const JobKey& key, const std::vector<ReplicaRow>& rows) override;
  std::vector<ReplicaRow> ReadReplicas(const JobKey& key) const override;
  std::string LogLocation(const JobKey& key, const std::string& replica) const override;
  Status Health(const JobKey& key) const override;
  // The replica table, or IOError naming the job and what is wrong with replicas.json.
  StatusOr<std::vector<ReplicaRow>> ReadReplicaTable(const JobKey& key) const;

  // The job secret (local jobs only): written once at creation, read by the supervisor.
  Status WriteSecret(const JobKey& key, const std::string& secret);
  StatusOr<std::string> ReadSecret(const JobKey& key) const;

 private:
  std::filesystem::path home_;
  const job::KindRegistry* kinds_;
};

}  // namespace cohort::exec
