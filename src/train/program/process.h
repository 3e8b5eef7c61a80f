// The process side of a training program (cohort-train, the taxi example's taxi-train): exit
// codes, output lines, failing, and setting up the compute threads. Messages start with the
// program's name, set once at the start of main:
//
//   int main(int argc, char** argv) {
//     SetProgram({"taxi-train", "the latest checkpoint"});
//     ...
//     if (!config.ok()) Fail(config.status());   // "taxi-train: error: ..." and exit 1
//
// Exit status: 0 trained (or evaluated); 1 a permanent failure (bad data, TF_CONFIG, files);
// 2 bad flags; 3 an I/O error (a full disk, a failing device, no permission), also permanent:
// the file and the system's words are on the error line, the last good backup is intact, and a
// restart would only train up to the same write again, so under ExitCode (1-127: no retry) the
// job fails at once; 138 a failure a restart can cure (a peer died or stopped answering), so that
// a restartPolicy of OnFailure or ExitCode restarts the task, which then resumes.
#pragma once

#include <chrono>
#include <string>

#include "base/status.h"
#include "cluster/tf_config.h"
#include "train/compute_threads.h"

namespace cohort::train::program {

constexpr int kExitOk = 0;
constexpr int kExitFailed = 1;
constexpr int kExitUsage = 2;
// Status::kIOError: below 128, so ExitCode does not retry it.
constexpr int kExitIOError = 3;
// 128 + SIGUSR1: the code TensorFlow's docs reserve for "restart me"; any non-zero code restarts
// under OnFailure, and ExitCode restarts exactly the codes of 128 and above.
constexpr int kExitRetryable = 138;

// Who is talking in the messages below.
struct Program {
  std::string name;  // "cohort-train": the prefix of messages on stderr
  // What a restarted task resumes from, for the message of a retryable failure ("... restarted
  // and resumes from <resumes_from>"), e.g. "the latest checkpoint".
  std::string resumes_from;
};

// Sets the program the messages name; call it once, first thing in main.
void SetProgram(Program program);

// The program set by SetProgram.
const Program& CurrentProgram();

// `line` and a newline on stdout, flushed.
void Print(const std::string& line);

// "<program>: error: <message>" on stderr (stdout flushed first, so the lines keep their order).
void PrintError(const std::string& message);

// Ends the process at once on a failure: collective operations, the prefetch thread or a
// background pull may still hold buffers that orderly destruction would free under them, and a
// restart is coming anyway. Unavailable and DeadlineExceeded exit with kExitRetryable (saying
// what the restarted task resumes from), IOError with kExitIOError (the error line says that a
// restart does not cure it), everything else with kExitFailed.
[[noreturn]] void Fail(const Status& status);

// Leaves `message` as this task's last words for job control, in the file that the environment
// variable COHORT_TERMINATION_MESSAGE_PATH names (cluster/peer_report.h): a peer report before a
// retryable exit, so that job control stops the peer that failed and counts the group's restart
// once. Written in place (on Kubernetes the file is the container's terminationMessagePath, which
// cannot be replaced by a rename), at most cluster::kMaxTerminationMessageBytes. Without the
// variable it does nothing; a failure to write is a warning on stderr, never fatal.
void WriteTerminationMessage(const std::string& message);

// A flag given in seconds, as the clock types want it.
std::chrono::milliseconds Milliseconds(double seconds);

// The compute threads of this task: `requested` (--threads) when positive, else the hardware
// threads divided among the training tasks of `config` that share this host (all of them when
// every endpoint is on localhost, as with Cohort's local executor), so that co-located tasks do
// not oversubscribe the cores. A process alone (an empty config, as for --evaluate) gets every
// hardware thread.
int ComputeThreads(int requested, const cluster::TfConfig& config);

// Pins libtorch's and OpenBLAS's threads (Fail on an error), and warns on stderr when the math
// would run on the reference BLAS. Returns the BLAS in use.
BlasLibrary SetUpCompute(int threads);

}  // namespace cohort::train::program
