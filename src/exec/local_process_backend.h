// LocalProcessBackend: a job's replicas as processes on this machine.
//
// It plays the part a kubelet plays: each replica is a process in its own process group, running
// the container's command (or its image's, image_map.h) with the container's env, workingDir and
// the environment of replica_environment.h, its stdout and stderr a pipe whose output this
// backend appends to logs/<type>-<index>.log (replica_log.h: bounded, rotated), pumped while it
// waits for a change. The child asks the kernel to SIGKILL it if the supervisor dies
// (process.h), and no descriptor of the supervisor's but its end of the pipe leaks into it.
//
// A replica is a child subreaper (process.h): every process it starts stays in its tree, and
// when it exits, whatever of that tree still runs (a child that left its process group with
// setsid and dropped the job's environment included) is killed and reaped by the supervisor
// (Options::end_leftovers, EndLeftovers).
//
// Stopping a replica sends SIGTERM to its group and, once the grace period of its pod template
// (terminationGracePeriodSeconds, default 30 s) is over, SIGKILL. A restart appends a banner to
// the log ("===== cohort: restart 1 of worker-1 at ... (previous exit code 137) =====").
//
// When a replica exits, its run's last lines are read back from the log (ReplicaState::
// output_tail), and an exit of 126 or 127 within its first second (the shell's "cannot execute"
// and "not found") gets a hint naming the command it ran and the image mapping it came from.
//
// A self-pipe turns SIGCHLD into a wake-up of WaitForChange(), so the process that uses it must
// have one LocalProcessBackend at a time and must not reap its children elsewhere.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "exec/image_map.h"
#include "exec/replica_backend.h"
#include "exec/replica_log.h"

namespace cohort::exec {

class LocalProcessBackend : public ReplicaBackend {
 public:
  struct Options {
    std::filesystem::path logs_directory;  // logs/<type>-<index>.log go here
    std::map<std::string, int> ports;      // every replica's port, by short name
    std::string secret;                    // the job secret its replicas share
    ImageMap images;
    // Told the process group of every replica started (the supervisor's watchdog).
    std::function<void(pid_t)> on_process_started;
    // Each replica's termination-message file, <replica>.termination-log, goes here, named to it
    // by COHORT_TERMINATION_MESSAGE_PATH (cluster/peer_report.h). Empty: none is given.
    std::filesystem::path termination_messages_directory;
    // Each replica's TensorBoard directory, <replica>/, goes here, named to it by
    // COHORT_SUMMARY_DIR (cluster/summary_location.h). Empty: none is given.
    std::filesystem::path summaries_directory;
    // The supervisor's: this process is a child subreaper (process.h), so what an exited
    // replica left running becomes its child, and is ended as soon as that replica's exit is
    // seen. `is_helper` names the other children it keeps (its watchdog).
    bool end_leftovers = false;
    std::function<bool(pid_t)> is_helper;
    // How large each replica's log may grow before it is rotated, and how many rotated files
    // are kept (replica_log.h).
    LogRotation log_rotation;
  };

  // Installs the SIGCHLD handler and its self-pipe.
  static StatusOr<std::unique_ptr<LocalProcessBackend>> Create(Options options);
  // Closes the self-pipe. It stops nothing: stop the replicas before.
  ~LocalProcessBackend() override;
  LocalProcessBackend(const LocalProcessBackend&) = delete;
  LocalProcessBackend& operator=(const LocalProcessBackend&) = delete;

  StatusOr<ReplicaState> Start(const ReplicaStart& request) override;
  void Stop(const ReplicaId& id, StopMode mode) override;
  // Reaps the replicas that exited and sends SIGKILL to those whose grace period is over.
  std::vector<ReplicaState> Observe() override;
  // Wakes early for a pending SIGKILL too.
  void WaitForChange(Time deadline) override;
  // With Options::end_leftovers: kills and reaps every child of this process that is neither a
  // running replica nor a helper, that is what exited replicas left (a setsid child, a daemon),
  // whatever its process group or environment. Returns how many it ended.
  int EndLeftovers();
  void Interrupt() override;

 private:
  struct Process {
    pid_t pid = -1;  // -1 once it has exited
    job::ReplicaPhase phase = job::ReplicaPhase::kRunning;
    int exit_code = 0;
    std::optional<Time> started_at;
    std::optional<Time> finished_at;
    std::chrono::seconds grace_period{30};
    std::optional<Time> kill_at;  // stopping: SIGKILL at this time
    std::string name;             // "worker-1": its log's key in logs_
    std::filesystem::path log_path;
    int output_fd = -1;   // the read end of its output pipe, until every writer has closed it
    std::string command;  // what it ran, for the hint of a command that could not run
    std::vector<std::string> output_tail;        // once exited
    std::string exit_hint;                       // once exited
    int signal = 0;                              // once exited: what killed it, 0 if it exited
    bool oom_killed = false;                     // once exited
    int64_t started_monotonic_microseconds = 0;  // for the kernel log's records
    bool keep_exit = false;  // stopped with StopMode::kAsFailed: stays once it has exited
    std::string termination_message;
  };

  explicit LocalProcessBackend(Options options);
  // The replica's log, opened on first use and kept across its runs.
  StatusOr<ReplicaLog*> LogFor(const std::string& name);
  // Moves what the process's output pipe holds into its log, at most `budget` bytes; closes the
  // pipe once every writer has.
  void Pump(Process& process, size_t budget);
  // Pumps what is left and closes the pipe: the process's run is over for this backend.
  void Retire(Process& process);
  void ReapExited(Time now);
  // The end of the run's output and, for a command that could not run, a hint naming it.
  void ExplainExit(Process& process, pid_t pid);
  void EscalateStops(Time now);
  std::filesystem::path TerminationMessagePath(const ReplicaId& id) const;
  std::string ReadTerminationMessage(const ReplicaId& id) const;

  Options options_;
  std::map<ReplicaId, Process> processes_;
  std::map<std::string, ReplicaLog> logs_;
  std::vector<char> pump_buffer_;
};

// The grace period of a replica type's pod template: terminationGracePeriodSeconds, else
// Kubernetes' default of 30 s.
std::chrono::seconds GracePeriod(const job::Job& job, const std::string& replica_type);

}  // namespace cohort::exec
