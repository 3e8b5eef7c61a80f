// LocalJobs: everything `cohort` does to local jobs, so that the command line only parses flags
// and prints.
//
//   LocalJobs jobs(DefaultCohortHome());
//   StatusOr<ImageMap> images = jobs.LoadImages(image_flags);
//   StatusOr<CreatedJob> created = jobs.Create(job, *images);
//   jobs.Supervise(std::move(*created), *images, observer, print_line);  // `cohort run`, or
//   jobs.Detach(std::move(*created), image_flags);  // `cohort submit`: in the background
//
// A job lives in the JobStore under $COHORT_HOME (job_store.h). Its supervisor is the process
// that runs its JobController over a LocalProcessBackend; it holds the job's supervisor lock
// (supervisor_lock.h) from before the job is visible until it exits, and a watchdog cleans up if
// it dies (supervisor_loss.h). Every other operation (get, delete, wait, logs...) is carried out
// by whichever command asks, on the store's files; there is no daemon.
#pragma once

#include <chrono>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "exec/image_map.h"
#include "exec/job_controller.h"
#include "exec/job_store.h"
#include "exec/log_selection.h"
#include "exec/supervisor_lock.h"
#include "job/common_types.h"
#include "job/log_policy.h"

namespace cohort::exec {

// Called with a replica's short name ("worker-1") and one line of its log.
using LogLineCallback = std::function<void(const std::string& replica, const std::string& line)>;

// A job created in the store, waiting for its supervisor.
struct CreatedJob {
  JobKey key;
  SupervisorLock lock;  // held since before the job was visible; passed on to its supervisor
};

// How much of each replica's output per second `cohort run` copies to the terminal unless
// $COHORT_RUN_OUTPUT_BYTES_PER_SECOND says otherwise (0: all of it); what a replica writes
// faster is skipped with a note (LogFollower::LimitRate), and stays whole in its log file.
inline constexpr uint64_t kDefaultRunOutputBytesPerSecond = uint64_t{1} << 20;
uint64_t RunOutputBytesPerSecond();

// How long Wait keeps reading a job's status that does not read back before it gives up.
inline constexpr std::chrono::seconds kUnreadableStatusPatience{5};

class LocalJobs {
 public:
  explicit LocalJobs(std::filesystem::path home) : store_(std::move(home)) {}

  JobStore& store() { return store_; }

  // The image commands: `--image NAME=COMMAND` flags over the file $COHORT_HOME/images.
  StatusOr<ImageMap> LoadImages(const std::vector<std::string>& image_flags) const;

  // The log policies of $COHORT_HOME/config (job/log_policy.h), a YAML (or JSON) file of
  //   logPolicies:
  //     - {name: cuda-oom, pattern: "CUDA out of memory", action: permanent}
  // None when there is no such file; InvalidArgument naming the file for anything else in it.
  StatusOr<std::vector<job::LogPolicy>> LoadConfigLogPolicies() const;

  // Creates the job: its directory and spec, a port for each replica (reserved here and nowhere
  // else, fixed for the job's life) and the job secret. Fails (AlreadyExists) if the name is
  // taken, or (InvalidArgument) if an image is not mapped, before anything starts; a job that could
  // not be created completely leaves nothing behind.
  StatusOr<CreatedJob> Create(const job::Job& job, const ImageMap& images);

  // Supervises a created job in this process until it has finished and none of its replicas is
  // left; returns its final status. SIGINT, SIGTERM and SIGHUP stop the job meanwhile (marked
  // Failed, replicas stopped; a second signal kills them at once). With `on_log_line`, every line
  // the replicas write is passed on as it comes (`cohort run` prints them), before the
  // observer's on_tick, at most RunOutputBytesPerSecond() of each replica's (the rest skipped
  // with a note). FailedPrecondition when the lock is not held or the job has already finished.
  StatusOr<job::JobStatus> Supervise(CreatedJob job, const ImageMap& images,
                                     ControllerObserver observer = {},
                                     const LogLineCallback& on_log_line = nullptr);

  // Starts the job's supervisor in the background: this program run again as `<program>
  // supervise JOB -n NAMESPACE --lock-fd FD [--image FLAG]...` (so it must be `cohort`), in its
  // own session, its output in supervisor.log. Returns once the supervisor has taken the job
  // over, so that a failure to start is reported here.
  Status Detach(CreatedJob job, const std::vector<std::string>& image_flags);

  // The supervisor's side of Detach: the job whose lock descriptor `lock_fd` was inherited.
  StatusOr<CreatedJob> Adopt(const JobKey& key, int lock_fd);

  // The jobs a read command shows: the named one (NotFound when absent), else every job of
  // `namespace_name` (of all namespaces with `all_namespaces`). Tidies them first (Tidy) and
  // returns those still there.
  StatusOr<std::vector<JobKey>> Lookup(const std::string& name, const std::string& namespace_name,
                                       bool all_namespaces);

  // Marks jobs whose supervisor died Failed, and deletes finished jobs whose TTL
  // (ttlSecondsAfterFinished) has run out: there is no daemon to do it on time, so whichever
  // command looks first does, as the reconciler decides (a kDeleteJob action).
  void Tidy(const std::vector<JobKey>& keys);

  // Whether the job's supervisor runs (after marking the job Failed if it died).
  bool IsLive(const JobKey& key);

  // Stops the job and removes its state. A live supervisor is asked to stop (SIGTERM: it stops
  // the replicas within their grace period and exits) and killed after 45 s; it is given 120 s
  // in all. Then whatever still runs of the replicas (their supervisor and its watchdog both
  // died) is found by the job's secret and SIGKILLed (job_processes.h); if some of it survives
  // 10 s, the job is not deleted (DeadlineExceeded, naming the pids). NotFound when there is no
  // such job.
  Status Delete(const JobKey& key);

  // `cohort delete --purge`: Delete(), then removes the directories the job declared as its own
  // (JobOutputDirectories, job_outputs.h: absolute paths with $(COHORT_JOB_NAME) as a component in
  // its args), passing each to `on_removed`. The spec is read before the job is deleted; a job
  // whose spec cannot be read is not deleted (FailedPrecondition: delete it without --purge).
  Status DeleteAndPurge(const JobKey& key,
                        const std::function<void(const std::filesystem::path&)>& on_removed);

  // Sets runPolicy.suspend in the saved spec; the job's controller notices and suspends (stops
  // every replica) or resumes it.
  Status SetSuspended(const JobKey& key, bool suspended);

  // Waits until the job has finished and returns its status. DeadlineExceeded after
  // `timeout_seconds`, NotFound when the job is not (or no longer) there. A status that cannot
  // be read is read again until it can; only one unreadable for kUnreadableStatusPatience in a
  // row ends the wait, with the store's error naming the file.
  StatusOr<job::JobStatus> Wait(const JobKey& key, double timeout_seconds);

  // InvalidArgument (naming the replicas there are) when the job has no replica `replica`.
  Status CheckReplica(const JobKey& key, const std::string& replica);

  // Calls `on_line(replica, line)` for every line of the job's logs (of one replica, or of all
  // when `replica` is ""). With `follow`, goes on until the job's supervisor is gone, calling
  // `on_wait` before each pause. `selection` (log_selection.h) chooses among the lines already
  // written; lines written later while following are all passed on. Its errors (no previous run)
  // are returned before anything is printed.
  Status ReadLogs(const JobKey& key, const std::string& replica, bool follow,
                  const LogLineCallback& on_line, const std::function<void()>& on_wait,
                  const LogSelection& selection = {});

  // The environment replica `replica_type`-`index` of `job` gets when run here
  // (replica_environment.h, with no secret): with the ports of the live job of that name, else
  // with ports chosen now as a run would choose them (`*live` says which). `cohort env` and
  // `cohort tfconfig` print it.
  StatusOr<std::map<std::string, std::string>> LocalReplicaEnvironment(
      const job::Job& job, const std::string& replica_type, int index, bool* live);

 private:
  // Chooses a free port for each replica of `job`.
  static StatusOr<std::map<std::string, int>> ReservePorts(const job::Job& job);

  JobStore store_;
};

}  // namespace cohort::exec
