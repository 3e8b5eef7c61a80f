// Handshake: how two tasks that just connected find out who the other is, and whether to trust it.
//
//   connecting task                                accepting task
//   hello {job, me, you, nonce, ...}      ----->   checks job, task identity, mode
//                                         <-----   hello reply {its hello, server proof}
//   checks the accepting task's proof
//   proof {client proof}                  ----->   checks the connecting task's proof
//                                         <-----   accept  (or reject {reason})
//
// Proofs are HMAC-SHA256(job secret, label || both hellos), so each covers both fresh nonces and
// every identity field: a proof cannot be replayed on another connection, and nobody can change
// what a hello says without breaking it. In open mode (no secret on either side) the proofs are
// empty. A task that has a secret never talks to one that has none: otherwise anybody could claim
// open mode and walk in.
//
// Both hellos also carry the cluster as the sender sees it: a SHA-256 digest of the job name and
// every member's task and endpoint in rank order, and a short summary ("chief 1, worker 3"). When
// both sides have one and they differ, the two TF_CONFIGs disagree and no connection can work:
// the handshake is still completed up to the proofs (so that only a task that knows the job
// secret can say so), then the accepting side refuses with a reason naming both views, and both
// sides fail with a permanent error (Aborted on the accepting side, FailedPrecondition on the
// connecting side) instead of retrying until the startup timeout. A connecting task that cannot
// verify the accepting task's proof tells it so with a refusal before it gives up, so a wrong
// COHORT_JOB_SECRET is reported by both sides at once rather than seen as a closed connection.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "cluster/cluster_spec.h"
#include "net/auth.h"
#include "net/deadline.h"
#include "net/same_host.h"

namespace cohort::net {

// What a task says about itself when it connects or is connected to.
struct HelloMessage {
  std::string job_name;
  cluster::TaskId task;        // the sender
  cluster::TaskId addressee;   // who the sender believes it is talking to
  std::string nonce;           // kNonceSize random bytes
  bool authenticated = false;  // the sender holds a job secret
  ProcessIdentity process;     // lets a peer on the same host read the sender's memory
  // The cluster as the sender sees it (ClusterView); empty when the sender does not check it.
  std::string cluster_digest;
  std::string cluster_summary;

  bool operator==(const HelloMessage&) const;
};

std::string EncodeHello(const HelloMessage& hello);
StatusOr<HelloMessage> DecodeHello(std::string_view payload);

// The cluster as one task sees it, for the handshake to compare.
struct ClusterView {
  std::string digest;  // SHA-256 hex of the job name and every (task, endpoint) in rank order
  std::string
      summary;  // "chief 1, worker 3": tasks by type in name order, for people (<= 200 bytes)
};

// The view of a cluster whose members are `tasks` at `endpoints` (by rank), for job `job_name`.
ClusterView ViewOfCluster(const std::string& job_name, const std::vector<cluster::TaskId>& tasks,
                          const std::vector<std::string>& endpoints);

// What one side of a handshake knows before it starts.
struct HandshakeConfig {
  std::string job_name;
  cluster::TaskId self;
  JobSecret secret;
  Deadline deadline = Deadline::Never();
  // Compared with the peer's when both have one (rendezvous); empty: not compared (a parameter
  // server admits any task of the job).
  ClusterView cluster;
};

// What a completed handshake learned about the peer.
struct HandshakeResult {
  HelloMessage peer;
  // This process can read the peer's memory (see same_host.h).
  bool can_read_peer_memory = false;
};

// The connecting side. `server` is the task this side means to reach and `server_name` describes
// it in errors ("worker:0 (host:2222)"). Errors are Unavailable when retrying may help (the
// connection dropped, the peer was slow) and FailedPrecondition when the peer refused this task
// or could not prove that it belongs to the job: retrying cannot fix either.
StatusOr<HandshakeResult> ConnectHandshake(int fd, const HandshakeConfig& config,
                                           const cluster::TaskId& server,
                                           const std::string& server_name);

// The accepting side. `admit` decides whether the task a hello names may connect (for example:
// it is in the cluster spec); a non-OK result is sent back as the reason for refusing. Any failure
// means the connection must be closed and never used. Aborted means that an authenticated peer
// sees another cluster (see above): no later connection can succeed either.
StatusOr<HandshakeResult> AcceptHandshake(int fd, const HandshakeConfig& config,
                                          const std::function<Status(const HelloMessage&)>& admit);

}  // namespace cohort::net
