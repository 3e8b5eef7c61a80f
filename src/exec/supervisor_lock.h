// SupervisorLock: proof that a job's supervisor is alive.
//
// The supervisor holds an exclusive flock on <job>/supervisor.lock for as long as it lives. The
// kernel drops the lock when the process dies, however it dies, so any command can tell a live
// job from one whose supervisor was killed (and then mark it Failed instead of showing Running
// for ever).
//
// The lock is taken before the job's spec is written (JobStore::CreateJob), by the process that
// creates the job, and passed on to the supervisor: `cohort run` keeps it in the same process;
// `cohort submit` hands the descriptor across fork and exec to `cohort supervise`, which adopts
// it. A flock belongs to the open file description, not to a process, so the lock is held without
// a gap from the moment the job is visible until its supervisor exits. A job being prepared or
// starting can therefore never be taken for one whose supervisor died.
#pragma once

#include <filesystem>

#include "base/status.h"

namespace cohort::exec {

class SupervisorLock {
 public:
  SupervisorLock() = default;
  ~SupervisorLock();
  SupervisorLock(SupervisorLock&& other) noexcept;
  SupervisorLock& operator=(SupervisorLock&& other) noexcept;
  SupervisorLock(const SupervisorLock&) = delete;
  SupervisorLock& operator=(const SupervisorLock&) = delete;

  // FailedPrecondition when another live supervisor holds it.
  Status Acquire(const std::filesystem::path& job_directory);

  // Takes over the lock that descriptor `fd` already holds, inherited across exec. InvalidArgument
  // when `fd` is not open on this job's supervisor.lock; FailedPrecondition when the lock is held
  // through another descriptor (so `fd` does not hold it). Marks `fd` close-on-exec, so that the
  // replicas the supervisor starts never inherit the lock.
  Status Adopt(int fd, const std::filesystem::path& job_directory);

  bool held() const { return fd_ >= 0; }
  // The descriptor, so that a forked child that must not keep the lock can close it, and one that
  // must keep it across exec (the detached supervisor) can clear its close-on-exec flag.
  int fd() const { return fd_; }

  // True when some live process holds the lock of `job_directory`.
  static bool IsHeld(const std::filesystem::path& job_directory);

 private:
  void Close();

  int fd_ = -1;
};

}  // namespace cohort::exec
