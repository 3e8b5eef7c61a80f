// What happens to a job whose supervisor dies before the job finishes.
//
// A local job has no daemon: its supervisor process is the controller. If it is killed (even
// with SIGKILL), two things make sure the job does not show Running for ever and leaves nothing
// running:
//  - the Watchdog, a small process forked by the supervisor, notices the death (its pipe from the
//    supervisor closes), kills every replica's process group and marks the job Failed;
//  - any `cohort` command that reads a job whose supervisor lock is free but whose status is not
//    finished does the same marking (in case the watchdog died too).
#pragma once

#include <sys/types.h>

#include <string>

#include "base/status.h"
#include "exec/job_store.h"

namespace cohort::exec {

// Marks the job Failed (reason <kind>Failed, e.g. TFJobFailed, and Warning event SupervisorLost)
// unless it already finished. The kind is the saved spec's, or the default kind when the spec
// cannot be read. `supervisor` says what is known of it, e.g. "(pid 4242)", or is empty;
// `aftermath` ends the message with what was done about the replicas, and is empty when nothing
// was.
Status MarkSupervisorLost(JobStore& store, const JobKey& key, const std::string& supervisor,
                          const std::string& aftermath = "");

// If the job is unfinished and no supervisor holds its lock, marks it as above. Returns true when
// it did. The replicas died with their supervisor (PR_SET_PDEATHSIG) and their process groups
// with its watchdog, and the message claims neither; what still runs of them (the watchdog died
// too) is found by the job's secret and killed (job_processes.h), and the message says how many.
bool RecoverIfSupervisorLost(JobStore& store, const JobKey& key);

// The supervisor's side of the watchdog: Start() forks it; Watch(pid) tells it about a replica's
// process group; Dismiss() ends it quietly when the supervisor is done.
class Watchdog {
 public:
  // `close_in_child` is a descriptor the watchdog must not keep open (the supervisor lock).
  Status Start(JobStore store, JobKey key, int close_in_child);
  void Watch(pid_t process_group);
  void Dismiss();
  // The watchdog's pid once started, else -1: a child of the supervisor that is not a replica's.
  pid_t pid() const { return pid_; }
  ~Watchdog();

 private:
  int pipe_fd_ = -1;
  pid_t pid_ = -1;
};

}  // namespace cohort::exec
