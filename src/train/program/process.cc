#include "train/program/process.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <utility>

#include "base/file.h"
#include "cluster/peer_report.h"

namespace cohort::train::program {
namespace {

Program& ProgramSetting() {
  static Program program;
  return program;
}

bool IsRetryable(const Status& status) {
  return status.code() == Status::Code::kUnavailable ||
         status.code() == Status::Code::kDeadlineExceeded;
}

}  // namespace

void SetProgram(Program program) { ProgramSetting() = std::move(program); }

const Program& CurrentProgram() { return ProgramSetting(); }

void Print(const std::string& line) {
  std::printf("%s\n", line.c_str());
  std::fflush(stdout);
}

void PrintError(const std::string& message) {
  std::fflush(stdout);
  std::fprintf(stderr, "%s: error: %s\n", CurrentProgram().name.c_str(), message.c_str());
  std::fflush(stderr);
}

[[noreturn]] void Fail(const Status& status) {
  if (status.code() == Status::Code::kIOError) {
    PrintError(status.ToString() + " (exit " + std::to_string(kExitIOError) +
               ": an I/O error, which a restart does not cure)");
    std::_Exit(kExitIOError);
  }
  PrintError(status.ToString());
  const int code = IsRetryable(status) ? kExitRetryable : kExitFailed;
  if (code == kExitRetryable) {
    std::fprintf(stderr, "%s: exiting with %d so that this task is restarted and resumes from %s\n",
                 CurrentProgram().name.c_str(), code, CurrentProgram().resumes_from.c_str());
  }
  std::fflush(stderr);
  std::_Exit(code);
}

void WriteTerminationMessage(const std::string& message) {
  const char* path = std::getenv(cluster::kTerminationMessagePathVariable);
  if (path == nullptr || *path == '\0') return;
  const Status written = WriteFileInPlace(
      path, std::string_view(message).substr(0, cluster::kMaxTerminationMessageBytes));
  if (!written.ok()) {
    std::fprintf(stderr, "%s: warning: cannot leave the termination message: %s\n",
                 CurrentProgram().name.c_str(), written.message().c_str());
  }
}

std::chrono::milliseconds Milliseconds(double seconds) {
  return std::chrono::milliseconds(static_cast<int64_t>(seconds * 1000));
}

int ComputeThreads(int requested, const cluster::TfConfig& config) {
  if (requested > 0) return requested;
  const int hardware = std::max(1u, std::thread::hardware_concurrency());
  int local_workers = 0;
  for (const cluster::TaskId& task : cluster::WorkerTasks(config.cluster)) {
    const std::string endpoint = config.cluster.Endpoint(task);
    const std::string host = endpoint.substr(0, endpoint.rfind(':'));
    if (host == "localhost" || host == "127.0.0.1" || host == "[::1]") ++local_workers;
  }
  return std::max(1, hardware / std::max(1, local_workers));
}

BlasLibrary SetUpCompute(int threads) {
  if (Status status = SetComputeThreads(threads); !status.ok()) Fail(status);
  const BlasLibrary blas = DetectBlas();
  if (std::string warning = BlasWarning(blas); !warning.empty()) {
    std::fprintf(stderr, "%s: %s\n", CurrentProgram().name.c_str(), warning.c_str());
  }
  return blas;
}

}  // namespace cohort::train::program
