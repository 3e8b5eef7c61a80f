#include "cohort/status.h"

#include <c10/util/Exception.h>
#include <errno.h>

#include <cstdio>
#include <exception>

#include "public_api/internal.h"

namespace cohort {
namespace {

ErrorCode CodeOf(const Status& status) {
  switch (status.code()) {
    case Status::Code::kInvalidArgument:
      return ErrorCode::kInvalidArgument;
    case Status::Code::kNotFound:
      return ErrorCode::kNotFound;
    case Status::Code::kFailedPrecondition:
    case Status::Code::kAlreadyExists:
      return ErrorCode::kFailedPrecondition;
    case Status::Code::kUnavailable:
      return ErrorCode::kUnavailable;
    case Status::Code::kDeadlineExceeded:
      return ErrorCode::kDeadlineExceeded;
    case Status::Code::kIOError:
      return ErrorCode::kIOError;
    default:
      return ErrorCode::kInternal;
  }
}

// The name messages begin with: the program's own (glibc's short invocation name).
const char* ProgramName() {
  return program_invocation_short_name != nullptr && *program_invocation_short_name != '\0'
             ? program_invocation_short_name
             : "cohort";
}

int Report(const std::string& message, int code) {
  std::fflush(stdout);
  std::fprintf(stderr, "%s: error: %s\n", ProgramName(), message.c_str());
  if (code == kExitRetryable) {
    std::fprintf(stderr,
                 "%s: exiting with %d so that this task is restarted and resumes from its "
                 "backup\n",
                 ProgramName(), code);
  } else if (code == kExitIOError) {
    std::fprintf(stderr, "%s: exiting with %d: an I/O error, which a restart does not cure\n",
                 ProgramName(), code);
  }
  std::fflush(stderr);
  return code;
}

}  // namespace

Error::Error(ErrorCode code, const std::string& message)
    : std::runtime_error(message), code_(code) {}

void ThrowError(const Status& status) { throw Error(CodeOf(status), status.message()); }

int Main(const std::function<void()>& program) {
  try {
    program();
    std::fflush(stdout);
    return kExitOk;
  } catch (const Error& error) {
    const int code = error.retryable()                     ? kExitRetryable
                     : error.code() == ErrorCode::kIOError ? kExitIOError
                                                           : kExitFailed;
    return Report(error.what(), code);
  } catch (const c10::Error& error) {
    return Report(error.what_without_backtrace(), kExitFailed);
  } catch (const std::exception& error) {
    return Report(error.what(), kExitFailed);
  }
}

}  // namespace cohort
