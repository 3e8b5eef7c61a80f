// The process side of cohort-train: exit codes, output lines, failing, and setting up the compute
// threads.
//
// Exit status: 0 trained (or evaluated); 1 a permanent failure (bad data, TF_CONFIG, files);
// 2 bad flags; 138 a failure a restart can cure (a peer died or stopped answering), so that a
// restartPolicy of OnFailure or ExitCode restarts the worker, which then resumes from the backup.
#pragma once

#include <chrono>
#include <string>

#include "base/status.h"
#include "cluster/tf_config.h"
#include "train/compute_threads.h"

namespace cohort::train::cli {

constexpr int kExitOk = 0;
constexpr int kExitFailed = 1;
constexpr int kExitUsage = 2;
// 128 + SIGUSR1: the code TensorFlow's docs reserve for "restart me"; any non-zero code restarts
// under OnFailure, and ExitCode restarts exactly the codes of 128 and above.
constexpr int kExitRetryable = 138;

// `line` and a newline on stdout, flushed.
void Print(const std::string& line);

// "cohort-train: error: <message>" on stderr (stdout flushed first, so the lines keep their order).
void PrintError(const std::string& message);

// Ends the process at once on a failure: collective operations or the prefetch thread may still
// hold buffers that orderly destruction would free under them, and a restart is coming anyway.
// Unavailable and DeadlineExceeded exit with kExitRetryable, everything else with kExitFailed.
[[noreturn]] void Fail(const Status& status);

// A flag given in seconds, as the clock types want it.
std::chrono::milliseconds Milliseconds(double seconds);

// Hardware threads divided among the training tasks that share this host (all of them when every
// endpoint is on localhost, as with Cohort's local executor), so that co-located workers do not
// oversubscribe the cores.
int AutomaticThreads(const cluster::TfConfig& config);

// Pins libtorch's and OpenBLAS's threads, and warns when the math would run on the reference BLAS.
// Returns the BLAS in use.
BlasLibrary SetUpCompute(int threads);

}  // namespace cohort::train::cli
