// Peer reports: how a training task tells job control which peer made it give up, the second half
// of the contract between the runtime and job control (TF_CONFIG is the first).
//
// Job control gives every replica a file to write its last words to and names it in the
// environment variable COHORT_TERMINATION_MESSAGE_PATH; the runtime never knows which executor
// started it. A task that gives up because a peer died or hung writes one line there before it
// exits with 138 (the retryable code), for example
//
//   peer worker:1 hung (no heartbeat for 30 s)
//   peer worker:1 died (closed the connection without saying goodbye)
//
// and job control reads the file once the task has exited. Locally the executor owns the file
// (logs/<replica>.termination-log); on Kubernetes the same path is the container's
// terminationMessagePath, and the text comes back in the pod's
// status.containerStatuses[].state.terminated.message. Kubernetes keeps at most 4096 bytes of it,
// which is also the bound here.
//
//   std::string line = cluster::FormatPeerReport({{"worker", 1}, "hung", "no heartbeat for 30 s"});
//   std::optional<cluster::PeerReport> report = cluster::ParsePeerReport(message);
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include "cluster/cluster_spec.h"

namespace cohort::cluster {

// The environment variable that names the termination-message file.
inline constexpr char kTerminationMessagePathVariable[] = "COHORT_TERMINATION_MESSAGE_PATH";
// The most of a termination message that is written or read, as Kubernetes keeps per container.
inline constexpr size_t kMaxTerminationMessageBytes = 4096;

// What one task says about the peer that made it give up.
struct PeerReport {
  TaskId peer;         // the task that failed, "worker:1"
  std::string what;    // one word: "hung" (silent past the peer timeout) or "died"
  std::string detail;  // free text without a newline, e.g. "no heartbeat for 30 s"
  bool operator==(const PeerReport&) const = default;
};

// "peer worker:1 hung (no heartbeat for 30 s)", cut to kMaxTerminationMessageBytes.
std::string FormatPeerReport(const PeerReport& report);

// The report in the first line of a termination message, or nullopt when that line is not one
// (any other last words). Only the first kMaxTerminationMessageBytes are looked at.
std::optional<PeerReport> ParsePeerReport(std::string_view message);

}  // namespace cohort::cluster
