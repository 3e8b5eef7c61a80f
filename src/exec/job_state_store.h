// JobStateStore: where every job's state is kept, the only thing the controller, the commands and
// the read model share.
//
// A job's state is its spec (normalised, with its creation time), its status, its event log, the
// endpoint (port) of each replica, and the replica table (one row per replica, as the controller
// last saw it). The controller writes status, events and replicas; commands create, suspend,
// resume and delete jobs; the read model (view/job_view.h) only reads.
//
// JobStore (job_store.h), the $COHORT_HOME directory, is the implementation every command uses;
// MemoryJobStore (memory_job_store.h) keeps the same state in memory for tests.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "base/names.h"
#include "base/status.h"
#include "base/time.h"
#include "exec/supervisor_lock.h"
#include "job/common_types.h"

namespace cohort::exec {

struct JobKey {
  std::string namespace_name = "default";
  std::string name;
  std::string ToString() const { return namespace_name + "/" + name; }
};

// OK when both parts of `key` are DNS-1123 labels (base/names.h), so that the key names a
// directory of its own under $COHORT_HOME and nothing else; InvalidArgument naming the bad part.
inline Status CheckJobKey(const JobKey& key) {
  COHORT_RETURN_IF_ERROR(CheckName(key.namespace_name, "namespace", ""));
  return CheckName(key.name, "job name", "");
}

// How many of a finished run's last lines the replica table keeps.
inline constexpr size_t kKeptLogLines = 10;

// One row of the replica table, what `cohort describe` shows under "Replicas".
struct ReplicaRow {
  std::string name;  // "worker-1"
  // "Running", as job::ToString(ReplicaPhase); "Terminating" while it is being stopped; "Stopped"
  // once it was stopped while running.
  std::string phase;
  int restarts = 0;
  int port = 0;
  int pid = 0;                   // 0 when no process runs
  std::optional<int> exit_code;  // set once it has exited
  std::optional<Time> started_at;
  std::optional<Time> finished_at;
  // Stopped and gone, as a deleted pod is: `get pods` no longer lists it, while `describe` keeps
  // its last state (phase "Stopped" when it was stopped while running) and its log.
  bool removed = false;
  // The last lines its last finished run wrote (at most kKeptLogLines), kept with the job so that
  // `describe` shows why a replica ended even where its log is gone (a deleted pod's).
  std::vector<std::string> last_log_lines;
  bool operator==(const ReplicaRow& other) const {
    return std::tie(name, phase, restarts, port, pid, exit_code, started_at, finished_at, removed,
                    last_log_lines) ==
           std::tie(other.name, other.phase, other.restarts, other.port, other.pid, other.exit_code,
                    other.started_at, other.finished_at, other.removed, other.last_log_lines);
  }
};

class JobStateStore {
 public:
  virtual ~JobStateStore() = default;

  // Creates the job with its spec, stamped with its creation time. AlreadyExists (saying what to
  // do about it) when a job of that name is there, live or finished: its state is never
  // overwritten. `lock`, when not null, is taken before the job becomes visible
  // (supervisor_lock.h); a store that needs no lock leaves it alone.
  virtual Status CreateJob(const job::Job& job, SupervisorLock* lock) = 0;
  virtual Status DeleteJob(const JobKey& key) = 0;
  virtual bool Exists(const JobKey& key) const = 0;
  // Every job, optionally of one namespace, sorted by namespace then name.
  virtual std::vector<JobKey> ListJobs(const std::string& namespace_name = "") const = 0;

  virtual StatusOr<job::Job> ReadSpec(const JobKey& key) const = 0;
  // The saved spec as a TFJob object (apiVersion, kind, metadata with creationTimestamp, spec).
  virtual StatusOr<nlohmann::json> ReadSpecObject(const JobKey& key) const = 0;
  // The spec's generation: greater after every change of the saved spec (however soon after the
  // previous one), so the controller notices a suspend or resume; 0 when the job has none.
  virtual int64_t SpecVersion(const JobKey& key) const = 0;
  // Sets spec.runPolicy.suspend in the saved spec, as `kubectl patch` would.
  virtual Status SetSuspended(const JobKey& key, bool suspended) = 0;
  // The job's creationTimestamp (now, when it cannot be read).
  virtual Time CreationTime(const JobKey& key) const = 0;

  virtual Status WriteStatus(const JobKey& key, const job::JobStatus& status) = 0;
  virtual StatusOr<job::JobStatus> ReadStatus(const JobKey& key) const = 0;  // empty if none yet
  virtual Status AppendEvents(const JobKey& key, const std::vector<job::Event>& events) = 0;
  virtual StatusOr<std::vector<job::Event>> ReadEvents(const JobKey& key) const = 0;

  // The port of each replica ("worker-1"), fixed for the job's life.
  virtual Status WriteEndpoints(const JobKey& key, const std::map<std::string, int>& ports) = 0;
  virtual StatusOr<std::map<std::string, int>> ReadEndpoints(const JobKey& key) const = 0;

  virtual Status WriteReplicas(const JobKey& key, const std::vector<ReplicaRow>& rows) = 0;
  // Empty if none, or if the table cannot be read (Health says why).
  virtual std::vector<ReplicaRow> ReadReplicas(const JobKey& key) const = 0;
  // Where a replica's log is kept, as `cohort describe` names it.
  virtual std::string LogLocation(const JobKey& key, const std::string& replica) const = 0;

  // OK when every part of the job's state can be read back; otherwise the first problem, naming
  // the job and the file ("job default/a is broken: replicas.json: [0].name: must be a string"),
  // so that a reader shows that one job as broken and serves the others. A store that cannot be
  // corrupted (in memory) keeps the default.
  virtual Status Health(const JobKey& key) const { return Status::OK(); }
};

}  // namespace cohort::exec
