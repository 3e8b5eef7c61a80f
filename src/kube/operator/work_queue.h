// WorkQueue: the operator's queue of job keys ("namespace/name"), as client-go's rate-limited
// work queue.
//
//   queue.Add(key);                    // something about the job changed
//   queue.AddAt(key, requeue_at);      // the reconciler wants to run again then
//   queue.AddRateLimited(key);         // the sync failed: again after 1 s, 2 s, 4 s... 5 min
//   if (std::optional<std::string> key = queue.Get(1s)) { Sync(*key); queue.Done(*key); }
//
// A key is queued at most once (adding it again keeps the earlier time), and handed to one worker
// at a time: a key added while a worker has it is handed out again after Done(). Times come from
// the clock given at construction, so tests drive requeues with a fake clock; a waiting Get()
// looks at the clock again at least every `poll`, which bounds how late a due key is handed out
// when the clock is not the system's.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>

#include "base/time.h"

namespace cohort::kube {

class WorkQueue {
 public:
  explicit WorkQueue(std::function<Time()> clock = Clock::now,
                     std::chrono::milliseconds poll = std::chrono::milliseconds(1000));

  void Add(const std::string& key);
  void AddAt(const std::string& key, Time when);
  // After the key's failure back-off: 1 s doubling per failure since the last Forget(), at most
  // 5 minutes.
  void AddRateLimited(const std::string& key);
  // The key's sync succeeded: its failure back-off starts again from 1 s.
  void Forget(const std::string& key);

  // The next key that is due and not being worked on, waiting up to `timeout` for one; nullopt
  // when none came or the queue is shut down.
  std::optional<std::string> Get(std::chrono::milliseconds timeout);
  // The worker is done with `key` (from Get).
  void Done(const std::string& key);

  // Wakes every Get() and makes the later ones return nullopt at once.
  void ShutDown();

  // Keys queued (due or not), for logs and tests.
  size_t Size() const;
  int Failures(const std::string& key) const;

 private:
  std::function<Time()> clock_;
  std::chrono::milliseconds poll_;
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::map<std::string, Time> queued_;  // key -> when it is due
  std::set<std::string> processing_;
  std::map<std::string, int> failures_;
  bool shut_down_ = false;
};

}  // namespace cohort::kube
