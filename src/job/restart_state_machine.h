// RestartStateMachine: the restarts of one replica, kept the same way by every executor.
//
// The reconciler (reconciler.h) decides that a replica restarts (Action::kRestart, marked
// group_restart when the replica exited because a peer failed); everything that follows the
// decision lives here, so that the local controller (exec/job_controller.h) and the Kubernetes
// operator (kube/operator/job_sync.h) cannot count differently:
//   - the crash-loop back-off: restart number n + 1 is made RestartBackoff(n) after it was
//     decided, and until then the executor shows the replica to the reconciler as kPending with
//     its new restart count (so the reconciler does not decide the same restart twice);
//   - the restart count, which the replica table shows and the reconciler checks against
//     backoffLimit, and of it the group restarts, which backoffLimit does not count;
//   - what must outlive the controller: RestartRecord, which an executor stores its own way and
//     hands back to Resume() when a new controller takes over.
//
// A replica's restarts move between two states:
//
//            RestartDecided(group, now)              back-off over: IsDue(now)
//   settled ----------------------------> waiting --------------------------> (executor starts
//     ^                                                                         the new run)
//     '------------------------------------ Restarted() ----------------------------'
//
//   settled  no restart waits: the replica runs, or has exited and nothing was decided yet.
//   waiting  a restart was decided and waits for its back-off (RestartRecord::restart_after);
//            once that time has passed the restart is due, and the executor makes it (starts the
//            new run) and calls Restarted().
//
// Each run also belongs to a generation of the job's group (GroupGenerations below), so that a
// peer report left by a slow survivor of an earlier generation is not taken for a report about a
// run that began after it (the restart race: see GroupGenerations).
//
// It is pure: times are passed in, nothing is read or written. Counts are bounded by
// kMaxRecordedRestarts, so that a record read from outside (a hand-edited annotation) cannot
// overflow.
#pragma once

#include <algorithm>
#include <chrono>
#include <optional>
#include <string>
#include <utility>

#include "base/time.h"

namespace cohort::job {

// The most restarts a replica may have on record; larger counts read as this.
inline constexpr int kMaxRecordedRestarts = 1000000;

// Delay before restart number `restart_count + 1` of a replica, like the kubelet's crash-loop
// back-off but shorter, since local restarts are cheap: 1 s doubling, at most 60 s.
std::chrono::seconds RestartBackoff(int restart_count);

// What an executor keeps of one replica's restarts so that a new controller resumes them: the
// persistence hook. The local controller keeps it in memory with the replica (a supervisor that
// dies fails its job, so nothing is resumed there); the operator writes it as annotations on the
// replica's objects (kube/operator/replica_objects.h), where a new operator reads it back.
struct RestartRecord {
  // Restarts made or decided (a waiting restart is counted from the moment it is decided).
  int restarts = 0;
  // How many of `restarts` were group restarts; never more than `restarts`.
  int group_restarts = 0;
  // Set while a decided restart waits for its back-off: when it may be made.
  std::optional<Time> restart_after;
  // While a restart waits: the executor's name for the run it replaces (a pod's uid), so that it
  // can tell the new run from the old one; "" when the executor has none.
  std::string replaces;
  // The group generation (GroupGenerations::current()) of the replica's current run, or of its
  // last one once it has exited: set when a run starts (RunStarted). 0 for an executor that keeps
  // none, which makes every run look like one generation.
  int generation = 0;

  bool operator==(const RestartRecord& other) const = default;
};

class RestartStateMachine {
 public:
  // A replica that has never restarted.
  RestartStateMachine() = default;

  // Resumes from a record an executor kept: counts are bounded to [0, kMaxRecordedRestarts] and
  // group restarts to the restarts; a waiting restart goes on waiting until its restart_after.
  static RestartStateMachine Resume(RestartRecord record);

  // The reconciler decided at `now` to restart the replica (Action::kRestart). The restart is
  // counted at once, as a group restart when `group_restart`, and waits RestartBackoff(restarts
  // made before it). `replaces` names the exited run, for RestartRecord::replaces. A restart
  // decided while one already waits is the same restart: it changes nothing and returns false.
  bool RestartDecided(bool group_restart, Time now, std::string replaces = "");

  // The new run has been started: the replica is settled again, with its counts.
  void Restarted();

  // A run of the replica was started (its first, or the one a due restart makes) while the job's
  // group was at `generation` (GroupGenerations::current()): the run belongs to it. A waiting
  // restart is made by it, as by Restarted().
  void RunStarted(int generation);
  // The generation of the current run (or of the last one, once it has exited).
  int generation() const { return record_.generation; }

  // Whether a decided restart waits (for its back-off, or, once due, to be made).
  bool waiting() const { return record_.restart_after.has_value(); }
  // Whether a waiting restart's back-off is over at `now`, so the executor is to make it.
  bool IsDue(Time now) const { return waiting() && *record_.restart_after <= now; }
  // When the waiting restart may be made (the executor wakes then); nullopt when settled.
  std::optional<Time> restart_after() const { return record_.restart_after; }

  // The replica's restart count, as ObservedReplica::restart_count and the replica table show it.
  int restarts() const { return record_.restarts; }
  // Of those, the group restarts: ObservedReplica::group_restarts.
  int group_restarts() const { return record_.group_restarts; }
  // What the replica uses of the job's backoffLimit: its restarts that were not group restarts.
  int counted_restarts() const { return record_.restarts - record_.group_restarts; }

  // What to persist: store it, and Resume() from it.
  const RestartRecord& record() const { return record_; }

 private:
  explicit RestartStateMachine(RestartRecord record) : record_(std::move(record)) {}

  RestartRecord record_;
};

// The generations of a job's group of replicas, so that an exit is judged against the runs it
// belongs with.
//
// A group (the ranks of a DDP job, the workers of a collective) lives as long as none of its
// members fails by itself. When one does, its survivors give up too (each leaving a peer report
// that names it) and everything restarts; each restarted run meets the others in a new group. The
// race this exists for: worker-1 is killed, job control restarts it after its one-second back-off,
// and only then does a slow survivor of the old group (the master, still tearing down) exit,
// leaving its report "peer rank:2 died". That report is about worker-1's killed run, not about the
// run now running: taking it for the new run would stop that run (kTerminate) and count its exit
// against backoffLimit, so that one crash could fail the job.
//
// So runs are tagged: a restart that is not a group restart (a replica failed by itself, or was
// stopped as hung or dead) opens a new generation, and every run started after it belongs to it.
// A peer report made by a run of generation g can only be about runs of generation g or earlier;
// an accused replica whose current run is of a later generation has already been restarted since
// the failure reported, so the report is stale: it is logged, the reporter's restart is still a
// group restart, and the new run is left alone.
//
// (A replica restarted alone, whose peers go on and meet its new run, makes the rule cautious: a
// report of such a peer about the new run is taken as stale too. The reporter is then restarted
// into the new generation and reports again if the new run still fails it, so a hung replica is
// stopped one report later instead of never.)
class GroupGenerations {
 public:
  // A job's group starts at generation `current` (0 for a new job).
  explicit GroupGenerations(int current = 0) : current_(std::max(current, 0)) {}

  // A restart was decided (Action::kRestart): one that is not a group restart opens the next
  // generation, bounded by kMaxRecordedRestarts as the counts are. Returns the generation that
  // runs started from now on belong to.
  int RestartDecided(bool group_restart);

  // The generation a run started now belongs to.
  int current() const { return current_; }

  // Whether a peer report left by a run of `reporter_generation` may be about the accused
  // replica's run of `accused_generation`: only when that run is not of a later generation.
  static bool ReportMayConcern(int reporter_generation, int accused_generation) {
    return accused_generation <= reporter_generation;
  }

 private:
  int current_;
};

}  // namespace cohort::job
