// Status and StatusOr: how every module reports failure across its boundary.
//
// Cohort does not throw exceptions across module boundaries (LevelDB style). A function that can
// fail returns a Status (or a StatusOr<T> when it also produces a value). The message is written
// for the person who will read it: it says what failed and where (file:line:column and field path
// for specs, the replica or peer for runtime faults).
//
// Both are [[nodiscard]] and the build treats a dropped result as an error: a caller handles it,
// returns it, or discards it on purpose with `IgnoreError(status, "why it does not matter")`.
#pragma once

#include <cassert>
#include <optional>
#include <string>
#include <utility>

namespace cohort {

class [[nodiscard]] Status {
 public:
  enum class Code {
    kOk = 0,
    kInvalidArgument,  // bad input: spec, flags, data files, frames, TF_CONFIG
    kNotFound,         // a job, file or replica that does not exist
    kAlreadyExists,    // e.g. submitting a job whose name is taken by a live job
    kFailedPrecondition,
    kUnavailable,       // a peer or process is gone; retrying later may help
    kDeadlineExceeded,  // a wait ran out of time
    kIOError,
    kInternal,
    // A concurrent change won: the object was modified since it was read (an API server's 409
    // Conflict on a stale resourceVersion). Read it again and retry.
    kAborted,
    // What was asked for is older than the other side keeps (an API server's 410 Gone for an
    // expired watch resourceVersion): start again from a fresh list.
    kOutOfRange,
  };

  Status() = default;  // OK
  static Status OK() { return Status(); }
  static Status InvalidArgument(std::string m) {
    return Status(Code::kInvalidArgument, std::move(m));
  }
  static Status NotFound(std::string m) { return Status(Code::kNotFound, std::move(m)); }
  static Status AlreadyExists(std::string m) { return Status(Code::kAlreadyExists, std::move(m)); }
  static Status FailedPrecondition(std::string m) {
    return Status(Code::kFailedPrecondition, std::move(m));
  }
  static Status Unavailable(std::string m) { return Status(Code::kUnavailable, std::move(m)); }
  static Status DeadlineExceeded(std::string m) {
    return Status(Code::kDeadlineExceeded, std::move(m));
  }
  static Status IOError(std::string m) { return Status(Code::kIOError, std::move(m)); }
  static Status Internal(std::string m) { return Status(Code::kInternal, std::move(m)); }
  static Status Aborted(std::string m) { return Status(Code::kAborted, std::move(m)); }
  static Status OutOfRange(std::string m) { return Status(Code::kOutOfRange, std::move(m)); }

  bool ok() const { return code_ == Code::kOk; }
  Code code() const { return code_; }
  const std::string& message() const { return message_; }

  // "OK", or "<code name>: <message>".
  std::string ToString() const;

  // Returns a copy whose message is "<context>: <message>"; OK stays OK.
  Status WithContext(const std::string& context) const;

 private:
  Status(Code code, std::string message) : code_(code), message_(std::move(message)) {}
  Code code_ = Code::kOk;
  std::string message_;
};

// A value or the Status that explains why there is none.
template <typename T>
class [[nodiscard]] StatusOr {
 public:
  StatusOr(T value) : value_(std::move(value)) {}  // NOLINT: implicit by design
  StatusOr(Status status) : status_(std::move(status)) { assert(!status_.ok()); }  // NOLINT

  bool ok() const { return status_.ok(); }
  const Status& status() const { return status_; }
  T& value() & { return *value_; }
  const T& value() const& { return *value_; }
  T&& value() && { return std::move(*value_); }
  T* operator->() { return &*value_; }
  const T* operator->() const { return &*value_; }
  T& operator*() & { return *value_; }
  const T& operator*() const& { return *value_; }

 private:
  Status status_;
  std::optional<T> value_;
};

// Drops a result on purpose. `reason` says why its failure does not matter here (best-effort
// clean-up, a failure already being reported); it is for the reader and costs nothing.
inline void IgnoreError(const Status& status, const char* reason) {
  (void)status;
  (void)reason;
}
template <typename T>
void IgnoreError(const StatusOr<T>& result, const char* reason) {
  (void)result;
  (void)reason;
}

}  // namespace cohort

// Returns early from the enclosing function when `expr` is not OK.
#define COHORT_RETURN_IF_ERROR(expr)   \
  do {                                 \
    ::cohort::Status _status = (expr); \
    if (!_status.ok()) return _status; \
  } while (0)
