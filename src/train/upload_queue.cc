#include "train/upload_queue.h"

#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <optional>
#include <utility>

namespace cohort::train {

// What the caller and the queue's thread share; the thread holds it too, so that a thread left
// running past the shutdown bound never touches a destroyed queue.
struct UploadQueue::Shared {
  std::mutex mutex;
  std::condition_variable changed;
  std::optional<Upload> waiting;
  std::string running;  // the running upload's description; "" when none runs
  Status error;         // the first error not yet taken
  bool stopping = false;

  bool Idle() const { return !waiting && running.empty(); }

  // "ckpt-3 to s3://... (uploading), ckpt-5 to s3://... (waiting)"
  std::string DescribeBusy() const {
    std::string text;
    if (!running.empty()) text = running + " (uploading)";
    if (waiting) text += (text.empty() ? "" : ", ") + waiting->description + " (waiting)";
    return text;
  }
};

UploadQueue::UploadQueue(std::string what, std::chrono::milliseconds shutdown_timeout)
    : what_(std::move(what)),
      shutdown_timeout_(shutdown_timeout),
      shared_(std::make_shared<Shared>()) {
  thread_ = std::thread([shared = shared_] {
    // The queue's thread: runs the waiting upload, one at a time, until stopped and idle.
    std::unique_lock<std::mutex> lock(shared->mutex);
    for (;;) {
      shared->changed.wait(lock, [&] { return shared->waiting || shared->stopping; });
      if (!shared->waiting) return;  // stopping, nothing left
      Upload upload = std::move(*shared->waiting);
      shared->waiting.reset();
      shared->running = upload.description;
      lock.unlock();
      Status status = upload.run();
      lock.lock();
      shared->running.clear();
      if (!status.ok() && shared->error.ok()) shared->error = std::move(status);
      shared->changed.notify_all();
    }
  });
}

UploadQueue::~UploadQueue() {
  std::unique_lock<std::mutex> lock(shared_->mutex);
  shared_->stopping = true;
  shared_->changed.notify_all();
  if (!shared_->Idle()) {
    const std::string busy = shared_->DescribeBusy();
    std::printf("%s: waiting up to %.0f s for the upload of %s\n", what_.c_str(),
                std::chrono::duration<double>(shutdown_timeout_).count(), busy.c_str());
    std::fflush(stdout);
    if (!shared_->changed.wait_for(lock, shutdown_timeout_, [&] { return shared_->Idle(); })) {
      std::printf(
          "%s: gave up waiting for the upload of %s; it may be cut short, and a restart "
          "then restores the newest backup complete in the bucket\n",
          what_.c_str(), shared_->DescribeBusy().c_str());
      std::fflush(stdout);
      lock.unlock();
      thread_.detach();
      return;
    }
  }
  if (!shared_->error.ok()) {
    std::printf("%s: an upload failed: %s\n", what_.c_str(), shared_->error.message().c_str());
    std::fflush(stdout);
  }
  lock.unlock();
  thread_.join();
}

std::string UploadQueue::Submit(Upload upload) {
  std::lock_guard<std::mutex> lock(shared_->mutex);
  std::string superseded = shared_->waiting ? shared_->waiting->description : "";
  shared_->waiting = std::move(upload);
  shared_->changed.notify_all();
  return superseded;
}

Status UploadQueue::TakeError() {
  std::lock_guard<std::mutex> lock(shared_->mutex);
  return std::exchange(shared_->error, Status::OK());
}

Status UploadQueue::Drain(std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(shared_->mutex);
  if (!shared_->changed.wait_for(lock, timeout, [&] { return shared_->Idle(); })) {
    char waited[32];
    std::snprintf(waited, sizeof waited, "%.0f", std::chrono::duration<double>(timeout).count());
    return Status::DeadlineExceeded(what_ + ": waited " + waited + " s for the upload of " +
                                    shared_->DescribeBusy() + ", which has not finished");
  }
  return std::exchange(shared_->error, Status::OK());
}

bool UploadQueue::Busy() const {
  std::lock_guard<std::mutex> lock(shared_->mutex);
  return !shared_->Idle();
}

}  // namespace cohort::train
