// UploadQueue: runs uploads on one background thread so that the caller (a training step) never
// waits for the network, while keeping the order a crash-safe backup needs.
//
//   - At most one upload runs at a time, and at most one waits. A newer upload submitted while one
//     waits replaces it (the waiting one is superseded: it never runs), so a slow server makes the
//     queue skip backups instead of piling them up in memory; the newest one always runs.
//   - Uploads run in the order submitted, so an upload never overwrites a newer one's objects.
//   - An upload's error is kept and handed to the caller by TakeError (the next submission) or
//     Drain (the end of the job), so that a failure stops training at the next backup instead of
//     passing unnoticed.
//   - Drain waits for the running and the waiting upload with a bound; on timeout it says what it
//     was waiting for. The destructor drains with the bound given at construction, printing what it
//     waits for; if that bound passes, the thread is left to finish on its own (it holds only its
//     own data), as a kill would leave it: an upload cut short is never restored.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "base/status.h"

namespace cohort::train {

class UploadQueue {
 public:
  // One upload: what it does, run on the queue's thread. It must own everything it touches.
  struct Upload {
    std::string description;  // "ckpt-3 to s3://bucket/job/backup/chief", for messages
    std::function<Status()> run;
  };

  // `what` names the queue's owner in messages ("BackupAndRestore"); the destructor waits at most
  // `shutdown_timeout` for the uploads still to run.
  UploadQueue(std::string what, std::chrono::milliseconds shutdown_timeout);
  ~UploadQueue();

  UploadQueue(const UploadQueue&) = delete;
  UploadQueue& operator=(const UploadQueue&) = delete;

  // Queues `upload` to run after the running one; returns the description of the waiting upload
  // it superseded, "" when none was waiting. Never waits for an upload.
  std::string Submit(Upload upload);

  // The first error of an upload that finished since the last call, then OK again.
  Status TakeError();

  // Waits until no upload runs or waits, at most `timeout`; then TakeError(). DeadlineExceeded
  // naming the running and the waiting upload when the time passes first.
  Status Drain(std::chrono::milliseconds timeout);

  // Whether an upload runs or waits now.
  bool Busy() const;

 private:
  struct Shared;
  std::string what_;
  std::chrono::milliseconds shutdown_timeout_;
  std::shared_ptr<Shared> shared_;
  std::thread thread_;
};

}  // namespace cohort::train
