// cohort/status.h: how Cohort's public API reports failure.
//
// Decision: the public API throws. Every call in include/cohort/ that can fail throws a
// cohort::Error (a std::runtime_error with a code); none returns a Status. Why:
//   - A training program is written around libtorch, which already throws c10::Error from every
//     tensor operation, module and optimizer call. Its author handles one kind of failure (an
//     exception) in one place; a second kind (a Status to check after each call) would double
//     the error handling of a program whose every failure is fatal anyway.
//   - Almost every error of a training program ends it: the job's restart policy, not the program,
//     decides what happens next. What the program must get right is the exit code (a lost peer is
//     retryable, a full disk is not), and cohort::Main below gets it right in one line.
//   - Cohort's internals keep Status/StatusOr (no exception crosses an internal module boundary);
//     the conversion happens once, at this API's edge, and keeps the code (Error::code()).
// Before throwing a collective failure, the API waits until no collective still uses a buffer,
// so unwinding the stack frees nothing in use.
//
// Usage:
//
//   int main() {
//     return cohort::Main([] {
//       cohort::Cluster cluster = cohort::Cluster::FromEnvironment();
//       ...  // anything that throws: cohort::Error, c10::Error, std::exception
//     });
//   }
//
// cohort::Main prints "<program>: error: <what>" and returns the exit code that Cohort's job
// control (and Kubernetes' restart policies) expect: 0 done; 1 a permanent failure; 3 an I/O error
// (a full disk: a restart would not help); 138 a retryable failure (a peer died or hung: the task
// is restarted and resumes from its backup).
#pragma once

#include <functional>
#include <stdexcept>
#include <string>

namespace cohort {

enum class ErrorCode {
  kInvalidArgument,     // bad input: options, data, TF_CONFIG, a model that differs between workers
  kNotFound,            // a file or directory that does not exist
  kFailedPrecondition,  // a call in the wrong state
  kUnavailable,         // a peer died: retryable
  kDeadlineExceeded,    // a peer or a wait ran out of time: retryable
  kIOError,             // the file system failed (full disk, no permission): permanent
  kInternal,            // anything else, libtorch errors inside Cohort's loop among them
};

class Error : public std::runtime_error {
 public:
  Error(ErrorCode code, const std::string& message);

  ErrorCode code() const { return code_; }

  // Whether restarting the task can cure the failure: a peer died or stopped answering.
  bool retryable() const {
    return code_ == ErrorCode::kUnavailable || code_ == ErrorCode::kDeadlineExceeded;
  }

 private:
  ErrorCode code_;
};

// The exit codes of a training task, as cohort-train uses them.
inline constexpr int kExitOk = 0;
inline constexpr int kExitFailed = 1;
inline constexpr int kExitIOError = 3;
inline constexpr int kExitRetryable = 138;

// Runs `program`; returns kExitOk when it returns. When it throws, prints the error on stderr
// (prefixed with the program's name) and returns the exit code for it: kExitRetryable for a
// retryable cohort::Error, kExitIOError for an I/O error, kExitFailed for anything else
// (c10::Error and other std::exception included).
int Main(const std::function<void()>& program);

}  // namespace cohort
