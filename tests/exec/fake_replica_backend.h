// FakeReplicaBackend: a ReplicaBackend whose replicas are entries in a table and whose clock is
// the test's, for the controller's unit tests.
//
// Each start is looked up in a script that says how long that run lasts and how it ends, or that
// it runs until stopped. WaitForChange() moves the shared fake clock on to the deadline or the
// next scripted exit, whichever is first, so a job of minutes runs in microseconds; `at_wait` lets
// a test act at a given time (suspend the job, ask it to stop). A stopped replica is gone at the
// next Observe(), as a process that honours SIGTERM would be (or, with ignore_graceful_stops,
// once stopped with StopMode::kNow); one stopped with StopMode::kAsFailed has exited with 143 at
// the next Observe() and stays (with ignore_graceful_stops it runs on until a kNow stop, after
// which it is gone, as a killed process whose exit was not kept).
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "exec/replica_backend.h"

namespace cohort::exec {

class FakeReplicaBackend : public ReplicaBackend {
 public:
  // How run number `run` (0 for the first start) of a replica ends: after `duration`, with
  // `exit_code`.
  struct Exit {
    std::chrono::seconds duration;
    int exit_code = 0;
    std::string termination_message = "";  // what the run leaves in its termination-message file
    std::vector<std::string> output = {};  // what the run wrote, as ReplicaState::output_tail
  };
  using Script = std::function<std::optional<Exit>(const ReplicaId& id, int run)>;

  struct StartRecord {
    ReplicaId id;
    Time at;
    int restart_count = 0;
    int previous_exit_code = 0;
    std::string kind;  // of the job it belongs to
  };
  struct StopRecord {
    ReplicaId id;
    Time at;
    StopMode mode;
    bool was_running = false;
  };

  FakeReplicaBackend(Time* now, Script script) : now_(now), script_(std::move(script)) {}

  // Start fails (as a command that is not found would) for these replicas.
  std::set<ReplicaId> refuse_to_start;
  // Stopped replicas go on running until stopped with StopMode::kNow (SIGKILL).
  bool ignore_graceful_stops = false;
  // Called with the time at the start of every wait.
  std::function<void(Time)> at_wait;

  const std::vector<StartRecord>& starts() const { return starts_; }
  const std::vector<StopRecord>& stops() const { return stops_; }
  int waits() const { return waits_; }
  // How many replicas run now and were not asked to stop.
  int running() const {
    int count = 0;
    for (const auto& [id, replica] : replicas_) {
      count += replica.state.phase == job::ReplicaPhase::kRunning && !replica.state.stopping;
    }
    return count;
  }

  StatusOr<ReplicaState> Start(const ReplicaStart& request) override {
    starts_.push_back({request.id, *now_, request.restart_count, request.previous_exit_code,
                       request.job->job_kind->name()});
    replicas_.erase(request.id);
    if (refuse_to_start.count(request.id)) return Status::NotFound("cannot execute fake");
    Replica& replica = replicas_[request.id];
    replica.state.id = request.id;
    replica.state.phase = job::ReplicaPhase::kRunning;
    replica.state.started_at = *now_;
    replica.state.pid = 1000 + static_cast<int>(starts_.size());
    if (std::optional<Exit> exit = script_(request.id, runs_[request.id]++)) {
      replica.exit_at = *now_ + exit->duration;
      replica.exit_code = exit->exit_code;
      replica.termination_message = exit->termination_message;
      replica.output = exit->output;
    }
    return replica.state;
  }

  void Stop(const ReplicaId& id, StopMode mode) override {
    auto it = replicas_.find(id);
    bool running = it != replicas_.end() && it->second.state.phase == job::ReplicaPhase::kRunning;
    stops_.push_back({id, *now_, mode, running});
    if (it == replicas_.end()) return;
    if (running && mode == StopMode::kAsFailed && !ignore_graceful_stops) {
      it->second.exit_at = *now_;  // SIGTERM ends it
      it->second.exit_code = 143;
      it->second.termination_message.clear();
    } else if (running) {
      it->second.state.stopping = true;
      it->second.killed = it->second.killed || mode == StopMode::kNow;
    } else {
      replicas_.erase(it);
    }
  }

  std::vector<ReplicaState> Observe() override {
    std::vector<ReplicaState> states;
    for (auto it = replicas_.begin(); it != replicas_.end();) {
      Replica& replica = it->second;
      if (replica.state.stopping && (replica.killed || !ignore_graceful_stops)) {
        it = replicas_.erase(it);
        continue;
      }
      if (replica.state.phase == job::ReplicaPhase::kRunning && replica.exit_at &&
          *replica.exit_at <= *now_) {
        replica.state.phase =
            replica.exit_code == 0 ? job::ReplicaPhase::kSucceeded : job::ReplicaPhase::kFailed;
        replica.state.exit_code = replica.exit_code;
        replica.state.finished_at = *now_;
        replica.state.pid = 0;
        replica.state.termination_message = replica.termination_message;
        replica.state.output_tail = replica.output;
      }
      states.push_back(replica.state);
      ++it;
    }
    return states;
  }

  void WaitForChange(Time deadline) override {
    if (++waits_ > 100000) {
      ADD_FAILURE() << "the controller did not finish";
      std::abort();
    }
    if (at_wait) at_wait(*now_);
    Time next = deadline;
    for (const auto& [id, replica] : replicas_) {
      if (replica.state.phase == job::ReplicaPhase::kRunning && replica.exit_at) {
        next = std::min(next, *replica.exit_at);
      }
    }
    *now_ = std::max(*now_, next);
  }

  void Interrupt() override {}

 private:
  struct Replica {
    ReplicaState state;
    std::optional<Time> exit_at;
    int exit_code = 0;
    std::string termination_message;
    std::vector<std::string> output;
    bool killed = false;
  };

  Time* now_;
  Script script_;
  std::map<ReplicaId, Replica> replicas_;
  std::map<ReplicaId, int> runs_;
  std::vector<StartRecord> starts_;
  std::vector<StopRecord> stops_;
  int waits_ = 0;
};

}  // namespace cohort::exec
