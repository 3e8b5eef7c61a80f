// Status and StatusOr: how the taxi example's data code (CSV files, the data set, features)
// reports failure.
//
// The example is a program of its own built on Cohort's public API, which throws (cohort/status.h);
// its data code returns a Status instead, so that a bad row can be skipped or named without
// unwinding, and main.cc turns a failed Status into an error at one place. The type is the
// example's, kept to what its data code needs:
//
//   StatusOr<TaxiCsvContents> contents = ReadTaxiCsv(path, options);
//   if (!contents.ok()) return contents.status().WithContext("train data");
#pragma once

#include <cassert>
#include <optional>
#include <string>
#include <utility>

namespace cohort::taxi {

class Status {
 public:
  enum class Code { kOk = 0, kInvalidArgument, kNotFound, kFailedPrecondition, kIOError };

  Status() = default;  // OK
  static Status OK() { return Status(); }
  static Status InvalidArgument(std::string m) {
    return Status(Code::kInvalidArgument, std::move(m));
  }
  static Status NotFound(std::string m) { return Status(Code::kNotFound, std::move(m)); }
  static Status FailedPrecondition(std::string m) {
    return Status(Code::kFailedPrecondition, std::move(m));
  }
  static Status IOError(std::string m) { return Status(Code::kIOError, std::move(m)); }

  bool ok() const { return code_ == Code::kOk; }
  Code code() const { return code_; }
  const std::string& message() const { return message_; }

  // "OK", or "<code name>: <message>".
  std::string ToString() const {
    static const char* const kNames[] = {"OK", "invalid argument", "not found",
                                         "failed precondition", "I/O error"};
    if (ok()) return kNames[0];
    return std::string(kNames[static_cast<int>(code_)]) + ": " + message_;
  }

  // A copy whose message is "<context>: <message>"; OK stays OK.
  Status WithContext(const std::string& context) const {
    return ok() ? *this : Status(code_, context + ": " + message_);
  }

 private:
  Status(Code code, std::string message) : code_(code), message_(std::move(message)) {}
  Code code_ = Code::kOk;
  std::string message_;
};

// A value or the Status that explains why there is none.
template <typename T>
class StatusOr {
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

}  // namespace cohort::taxi

// Returns early from the enclosing function when `expr` is not OK.
#define TAXI_RETURN_IF_ERROR(expr)           \
  do {                                       \
    ::cohort::taxi::Status _status = (expr); \
    if (!_status.ok()) return _status;       \
  } while (0)
