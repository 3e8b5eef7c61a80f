// LeaderElector: one coordination.k8s.io/v1 Lease decides which of several operators acts, as
// client-go's leader election does, so that two operators never act on the same jobs at once.
//
// The Lease's spec holds holderIdentity, leaseDurationSeconds, acquireTime, renewTime and
// leaseTransitions. An operator
//  - acquires the Lease when it does not exist, has no holder, or its holder has not renewed it
//    for leaseDurationSeconds (by this operator's clock); taking it from another holder counts a
//    transition;
//  - while it leads, renews renewTime every retry_period;
//  - stops leading at once when it has not renewed successfully for renew_deadline (shorter than
//    the lease duration, so it has stopped before anyone else may take over);
//  - on Release() (clean shutdown), gives the Lease up: no holder, so another operator takes over
//    without waiting for the lease to expire.
// Every write is an Update with the resourceVersion read, so two operators racing for the Lease
// cannot both win: the loser gets 409 and reads again on its next try.
//
//   LeaderElector elector(api, options, clock);
//   elector.TryAcquireOrRenew();       // one step; Run() repeats it every retry_period
//   if (elector.IsLeader()) ...        // checked before every action
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <optional>
#include <string>

#include "base/status.h"
#include "base/time.h"
#include "kube/client/api.h"

namespace cohort::kube {

struct LeaderElectionOptions {
  std::string lease_name = "cohort-operator";
  std::string lease_namespace = "default";
  std::string identity;  // unique per operator process: hostname and pid
  std::chrono::seconds lease_duration{15};
  std::chrono::seconds renew_deadline{10};
  std::chrono::seconds retry_period{2};
  std::function<void(const std::string&)> log;
};

class LeaderElector {
 public:
  LeaderElector(Api& api, LeaderElectionOptions options, std::function<Time()> clock = Clock::now);

  // One attempt: create, take over or renew the Lease. Returns whether this operator leads
  // afterwards. Losing the lead (renewal failing past renew_deadline, or another holder seen)
  // happens here too.
  bool TryAcquireOrRenew();

  // Repeats TryAcquireOrRenew() every retry_period (real time) until Stop(). `on_change` is called
  // with true when this operator starts leading and false when it stops.
  void Run(const std::function<void(bool leading)>& on_change);
  void Stop();

  // Gives the Lease up if this operator holds it (clean shutdown). No-op otherwise.
  Status Release();

  // Whether this operator leads now: it won the Lease and its last renewal is younger than
  // renew_deadline by the clock, so a leader whose renewals stall stops acting at the deadline
  // itself, not at its next attempt.
  bool IsLeader() const;
  const LeaderElectionOptions& options() const { return options_; }

 private:
  Status Acquire(Time now, bool& leading);
  void Log(const std::string& line) const;

  Api& api_;
  const LeaderElectionOptions options_;
  const std::function<Time()> clock_;
  std::atomic<bool> leading_{false};
  // When this operator last wrote the Lease as holder (clock ticks; read by IsLeader on any
  // thread).
  std::atomic<Clock::rep> last_renewal_{0};
  std::atomic<bool> stopping_{false};
  std::mutex mutex_;
  std::condition_variable stop_requested_;
};

// Kubernetes MicroTime ("2026-11-24T12:00:00.123456Z") and back (whole seconds accepted too).
std::string FormatMicroTime(Time time);
std::optional<Time> ParseMicroTime(const std::string& text);

}  // namespace cohort::kube
