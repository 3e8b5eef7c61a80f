// LocalExecutor: runs a TFJob on this machine, each replica a local process.
//
// It plays the parts Kubernetes plays for the operator: it creates "pods" (processes in their own
// process group, with the container's command, env, workingDir and a TF_CONFIG whose hosts are
// localhost ports reserved for the job), observes them, and asks the reconciler (job/reconciler.h)
// what to do. It never decides a policy itself. Status, events and logs go to the JobStore, so
// `cohort get / describe / logs` work from any shell while it runs.
//
// One LocalExecutor is one job's supervisor. It is single-threaded: a self-pipe turns SIGCHLD,
// SIGINT and SIGTERM into wake-ups of its poll loop.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "exec/image_map.h"
#include "exec/job_store.h"
#include "exec/supervisor_lock.h"
#include "exec/supervisor_loss.h"
#include "job/common_types.h"
#include "job/job_kind.h"
#include "job/reconciler.h"

namespace cohort::exec {

// What the supervisor reports as it goes; `cohort run` prints it, a detached supervisor does not.
struct ExecutorObserver {
  std::function<void(const job::JobCondition&)> on_condition;  // a condition that changed
  std::function<void(const job::Event&)> on_event;
  std::function<void()> on_tick;  // every turn of the loop (log streaming)
};

// Creates the job on disk: its directory and spec, a port per replica and the job secret. Fails
// (AlreadyExists) if the name is taken, or (NotFound) if an image is not mapped, before anything
// starts. Sets `*lock` to the job's supervisor lock, taken before the job became visible; the
// caller passes it on to the job's LocalExecutor (across exec for a detached supervisor), so the
// job never looks abandoned while it starts.
Status PrepareLocalJob(JobStore& store, const job::Job& job, const ImageMap& images,
                       SupervisorLock* lock);

// The environment of one replica: the supervisor's own, then the container's env, then TF_CONFIG
// (when the job has more than one replica) and COHORT_JOB_NAME, COHORT_REPLICA_TYPE,
// COHORT_REPLICA_INDEX and COHORT_JOB_SECRET.
std::map<std::string, std::string> ReplicaEnvironment(const job::Job& job,
                                                      const std::string& replica_type, int index,
                                                      const std::map<std::string, int>& ports,
                                                      const std::string& secret);

// The replica's short name, "worker-1": the log file's name and `--replica` flag's value.
std::string ShortReplicaName(const std::string& replica_type, int index);

class LocalExecutor {
 public:
  // `lock` is the job's supervisor lock as PrepareLocalJob took it; the executor keeps it until
  // it exits.
  LocalExecutor(JobStore store, JobKey key, SupervisorLock lock, ImageMap images,
                ExecutorObserver observer = {});
  ~LocalExecutor();

  // Runs the prepared job until it has finished and none of its replicas is left. Returns its
  // final status. Holds the supervisor lock and runs a watchdog for the whole time.
  // FailedPrecondition when the lock was not passed in held.
  StatusOr<job::JobStatus> Run();

  // Async-signal-safe: asks Run() to stop the job (SIGTERM to every replica, SIGKILL after the
  // grace period) and mark it Failed as stopped by the user. A second request kills at once.
  static void RequestStop(int signal_number);

 private:
  struct Replica {
    std::string type;
    int index = 0;
    pid_t pid = -1;  // -1 when no process is alive
    job::ReplicaPhase phase = job::ReplicaPhase::kPending;
    int exit_code = 0;
    int restart_count = 0;
    std::optional<Time> started_at;
    std::optional<Time> finished_at;
    std::optional<Time> restart_at;  // pending restart after back-off
    std::optional<Time> kill_at;     // stopping: SIGKILL at this time
  };
  using ReplicaKey = std::pair<std::string, int>;

  Status Setup();
  Status ReloadSpecIfChanged();
  // Collects exited processes; a replica we stopped becomes absent (SuccessfulDeletePod).
  void ReapExited(Time now, std::vector<job::Event>& events);
  void StartDueRestarts(Time now);
  void EscalateStops(Time now);
  void Apply(const job::Action& action, Time now, std::vector<job::Event>& events);
  void StartReplica(Replica& replica, Time now, std::vector<job::Event>& events);
  void StopReplica(Replica& replica, Time now);
  void StopEverything(Time now);
  std::vector<job::ObservedReplica> Observe() const;
  bool AnyProcessAlive() const;
  void Publish(const job::JobStatus& status, const std::vector<job::Event>& events);
  Status WriteReplicaTable();
  void WaitForWork(std::optional<Time> wake_at);
  std::chrono::seconds GracePeriod(const std::string& replica_type) const;

  JobStore store_;
  JobKey key_;
  ImageMap images_;
  ExecutorObserver observer_;
  job::Job job_;
  std::filesystem::file_time_type spec_version_{};
  std::map<std::string, int> ports_;
  std::string secret_;
  job::JobStatus status_;
  std::map<ReplicaKey, Replica> replicas_;
  SupervisorLock lock_;
  Watchdog watchdog_;
  bool deleting_ = false;
};

}  // namespace cohort::exec
