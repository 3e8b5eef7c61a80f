// JobStore: each job's state on disk, the only thing `cohort` commands share.
//
//   $COHORT_HOME/jobs/<namespace>/<name>/
//     spec.json          the normalised (defaulted) TFJob
//     status.json        the TFJob status, rewritten atomically on every change
//     events.jsonl       one event per line, appended
//     endpoints.json     the port reserved for each replica, fixed for the job's life
//     supervisor.lock    held (flock) by the live supervisor; free once it is gone
//     supervisor.pid
//     logs/<type>-<index>.log
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
#include "exec/supervisor_lock.h"
#include "job/common_types.h"

namespace cohort::exec {

// $COHORT_HOME, else ~/.cohort.
std::filesystem::path DefaultCohortHome();

struct JobKey {
  std::string namespace_name = "default";
  std::string name;
  std::string ToString() const { return namespace_name + "/" + name; }
};

class JobStore {
 public:
  explicit JobStore(std::filesystem::path home) : home_(std::move(home)) {}

  const std::filesystem::path& home() const { return home_; }
  std::filesystem::path JobDirectory(const JobKey& key) const;
  std::filesystem::path LogPath(const JobKey& key, const std::string& replica) const;

  // Creates the job's directory with its spec. AlreadyExists (with what to do about it) when a
  // job of that name is there, live or finished: its state is never overwritten.
  //
  // Takes `lock` (the job's supervisor lock) before the spec is written, that is before any
  // command can see the job: a visible job without status whose lock is free is then one whose
  // creator or supervisor died, never one still being prepared (supervisor_lock.h).
  Status CreateJob(const job::Job& job, SupervisorLock* lock);
  Status DeleteJob(const JobKey& key);
  bool Exists(const JobKey& key) const;
  // Every job, optionally of one namespace, sorted by namespace then name.
  std::vector<JobKey> ListJobs(const std::string& namespace_name = "") const;

  StatusOr<job::Job> ReadSpec(const JobKey& key) const;
  Status WriteStatus(const JobKey& key, const job::JobStatus& status);
  StatusOr<job::JobStatus> ReadStatus(const JobKey& key) const;  // empty status if none yet
  Status AppendEvents(const JobKey& key, const std::vector<job::Event>& events);
  StatusOr<std::vector<job::Event>> ReadEvents(const JobKey& key) const;
  Status WriteEndpoints(const JobKey& key, const std::map<std::string, int>& ports);
  StatusOr<std::map<std::string, int>> ReadEndpoints(const JobKey& key) const;

  // When the job directory was created (the job's creationTimestamp).
  Time CreationTime(const JobKey& key) const;

  // Sets spec.runPolicy.suspend in the saved spec, as `kubectl patch` would; the supervisor
  // notices the change (SpecVersion) and the reconciler suspends or resumes the job.
  Status SetSuspended(const JobKey& key, bool suspended);
  // Changes whenever the saved spec is rewritten.
  std::filesystem::file_time_type SpecVersion(const JobKey& key) const;

 private:
  std::filesystem::path home_;
};

}  // namespace cohort::exec
