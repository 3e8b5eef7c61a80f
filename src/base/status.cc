#include "base/status.h"

namespace cohort {
namespace {

const char* CodeName(Status::Code code) {
  switch (code) {
    case Status::Code::kOk:
      return "OK";
    case Status::Code::kInvalidArgument:
      return "invalid argument";
    case Status::Code::kNotFound:
      return "not found";
    case Status::Code::kAlreadyExists:
      return "already exists";
    case Status::Code::kFailedPrecondition:
      return "failed precondition";
    case Status::Code::kUnavailable:
      return "unavailable";
    case Status::Code::kDeadlineExceeded:
      return "deadline exceeded";
    case Status::Code::kIOError:
      return "I/O error";
    case Status::Code::kInternal:
      return "internal error";
    case Status::Code::kAborted:
      return "aborted";
    case Status::Code::kOutOfRange:
      return "out of range";
  }
  return "unknown";
}

}  // namespace

std::string Status::ToString() const {
  if (ok()) return "OK";
  return std::string(CodeName(code_)) + ": " + message_;
}

Status Status::WithContext(const std::string& context) const {
  if (ok()) return *this;
  return Status(code_, context + ": " + message_);
}

}  // namespace cohort
