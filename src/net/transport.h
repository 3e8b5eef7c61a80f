// Transport: authenticated, framed TCP connections between the tasks of one training cluster.
//
//   auto transport = net::Transport::Connect(cluster, self, options);   // rendezvous
//   ... collective operations drive transport->... through net::Exchange ...
//
// Who takes part. The tasks whose type is in TransportOptions::participant_types ("chief",
// "master", "worker" by default) take part, ranked in that order of types and by index within a
// type: with a chief and three workers, chief:0 is rank 0 and worker:2 is rank 3. Parameter
// servers and evaluators do not take part in collectives.
//
// Rendezvous needs nothing but the cluster spec. Each task listens on the port of its own endpoint
// and connects to every lower-ranked task, retrying with backoff until
// TransportOptions::startup_timeout, so tasks may start in any order. Every connection begins
// with the handshake of handshake.h; a process that fails it is refused and logged, and the
// rendezvous goes on without it.
//
// Failure. Each connection carries heartbeats, sent by whoever owns it (see connection.h) when it
// has been quiet for heartbeat_interval. A peer is declared failed when its connection breaks
// (the process died: the kernel closes its sockets), when it sends something malformed, or when
// nothing at all has been heard from it for peer_timeout although this task was listening. The
// first failure is recorded, sent to every other peer (so that all tasks fail with the same
// explanation, naming the task that failed), and from then on every operation, pending or new,
// fails with it: after a failure the group must be rebuilt, as with NCCL or Gloo.
//
// Threads. The transport has one thread of its own, the monitor, which sends heartbeats and
// watches connections between operations. An operation's I/O runs on the thread that runs the
// operation (see exchange.h).
//
// Shutdown. The destructor sends every peer a goodbye and waits (at most shutdown_timeout) until
// each peer has read everything and acknowledged, so that a task that finishes first cannot
// destroy data a slower peer still has to read.
//
// One Communicator (collective/communicator.h) per Transport: operation numbers belong to the
// communicator, and two communicators on one transport would mistake each other's messages.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "base/status.h"
#include "cluster/cluster_spec.h"
#include "cluster/tf_config.h"
#include "net/connection.h"

namespace cohort::net {

struct TransportOptions {
  // Compared in the handshake: tasks of different jobs never talk.
  std::string job_name;
  // The job secret. Unset: read COHORT_JOB_SECRET. Empty: open mode (with a warning).
  std::optional<std::string> secret;
  // Task types that take part in collectives, in rank order.
  std::vector<std::string> participant_types = {"chief", "master", "worker"};
  // How long the rendezvous waits for every peer to be reachable and to pass the handshake.
  std::chrono::milliseconds startup_timeout = std::chrono::minutes(5);
  // How long one handshake may take (a stalled or hostile client cannot hold a slot longer).
  std::chrono::milliseconds handshake_timeout = std::chrono::seconds(10);
  // Silence after which a peer counts as dead. Must be at least 3 heartbeat intervals.
  std::chrono::milliseconds peer_timeout = std::chrono::seconds(30);
  std::chrono::milliseconds heartbeat_interval = std::chrono::seconds(1);
  // How long the destructor waits for peers to read what this task sent and acknowledge its
  // goodbye (a dead or hung peer never does).
  std::chrono::milliseconds shutdown_timeout = std::chrono::seconds(10);
  // Address to listen on; empty means every local address.
  std::string listen_host;
  // A socket already bound and listening on this task's port (for example, passed down by the
  // launcher so that no other process can take the port first). The transport takes ownership.
  // -1: the transport binds the port of this task's endpoint itself.
  int listening_fd = -1;
  // Called once, with the peer report of cluster/peer_report.h ("peer worker:1 hung (no
  // heartbeat for 30 s)"), when the first failure names the peer that failed: this task's own
  // finding or another task's notice. A training program hands it to job control (the
  // termination-message file) before it exits to be restarted. Called from whichever thread
  // records the failure, before any operation sees the failure, so that the report is out before
  // the task can exit on it; it must be thread-safe and must not call the transport. Unset:
  // nothing is called.
  std::function<void(const std::string& peer_report)> on_peer_failure;
  // Where warnings go (open mode, refused connections, the first failure). Called from the
  // transport's own threads too, so it must be thread-safe. Default: standard error.
  std::function<void(const std::string&)> log_warning;
};

class Exchange;

// Thread-safe: any thread may read the accessors and health(); Exchanges from several threads
// take turns on the connections they share.
class Transport {
 public:
  // Rendezvous: returns once this task has an authenticated connection to every other
  // participant, or fails naming the peers it could not reach or trust.
  static StatusOr<std::unique_ptr<Transport>> Connect(const cluster::ClusterSpec& cluster,
                                                      const cluster::TaskId& self,
                                                      TransportOptions options);
  // The same, for the cluster and task that TF_CONFIG names (cluster/tf_config.h). The sparse
  // form of TF_CONFIG does not list the other workers, so collectives cannot use it.
  static StatusOr<std::unique_ptr<Transport>> Connect(const cluster::TfConfig& config,
                                                      TransportOptions options);

  // Says goodbye to every peer (so that they can tell an orderly exit from a crash), waits until
  // each has read everything this task sent (at most shutdown_timeout) and closes.
  ~Transport();

  Transport(const Transport&) = delete;
  Transport& operator=(const Transport&) = delete;

  int rank() const { return rank_; }
  int size() const { return static_cast<int>(tasks_.size()); }
  const cluster::TaskId& task(int rank) const { return tasks_[rank]; }
  // "worker:2 (localhost:23456)".
  const std::string& PeerName(int rank) const { return names_[rank]; }
  const TransportOptions& options() const { return options_; }

  // OK while every peer is healthy; afterwards the first failure, which names the peer.
  Status health() const;

  // Payload bytes of the collectives' messages this task has sent to all peers so far (the
  // same-host paths excepted): what the network carried, for tests and benchmarks.
  uint64_t DataBytesSent() const;
  // The same, to one peer (0 for this task).
  uint64_t DataBytesSentTo(int rank) const;

  // True when this process can read every other participant's memory directly (all run on this
  // host and the kernel allows it; see same_host.h). Each task decides this on its own,
  // so the tasks must agree (for example by an all-reduce) before relying on it.
  bool CanReadMemoryOfAllPeers() const { return can_read_all_peers_; }

  // The host `rank` runs on, as its handshake described it (boot id and namespaces, see
  // same_host.h); equal strings mean the same host, and an empty one means unknown.
  const std::string& HostIdentity(int rank) const;
  // True when this process can read `rank`'s memory directly (another participant; see
  // same_host.h). Decided by each task on its own, like CanReadMemoryOfAllPeers.
  bool CanReadMemoryOf(int rank) const;

  // Records a failure (the first one wins) and wakes every waiting Exchange. With `tell_peers`
  // the monitor also sends it to every peer; a failure that arrived as a notice was already sent
  // to everyone by the task that detected it. `peer_report` names the peer that failed
  // (cluster/peer_report.h), or is empty when the failure names none.
  void RecordFailure(const Status& failure, bool tell_peers = true,
                     const std::string& peer_report = "");

  // The peer report of the first failure, or empty (no failure yet, or one that names no peer).
  std::string FailurePeerReport() const;

 private:
  friend class Exchange;

  Transport(TransportOptions options, std::vector<cluster::TaskId> tasks,
            std::vector<std::string> names, int rank);

  Connection* connection(int rank) { return connections_[rank].get(); }
  // An eventfd that becomes readable, for good, once a failure is recorded.
  int failure_fd() const { return failure_fd_; }
  bool failed() const { return failed_.load(std::memory_order_acquire); }

  void StartMonitor();
  void MonitorLoop();
  // The peer report of `failure`, which `connection` returned: a notice's own report, or one about
  // the connection's peer ("hung" when `silent`, i.e. it failed the liveness check).
  std::string PeerReportOf(const Connection& connection, const Status& failure, bool silent) const;
  // Sends the recorded failure to every peer, once.
  void SendFailureNotices();
  // The recorded failure's message, or nothing while every peer is healthy.
  std::optional<std::string> FailureMessage() const;
  void SayGoodbye();

  const TransportOptions options_;
  const std::vector<cluster::TaskId> tasks_;
  const std::vector<std::string> names_;
  const int rank_;
  std::vector<std::unique_ptr<Connection>> connections_;  // by rank; null for this task
  bool can_read_all_peers_ = false;

  mutable std::mutex failure_mutex_;
  Status failure_;
  std::string failure_peer_report_;
  bool tell_peers_ = false;
  bool notices_sent_ = false;
  std::atomic<bool> failed_{false};
  int failure_fd_ = -1;
  int monitor_wake_fd_ = -1;
  std::atomic<bool> stopping_{false};
  std::thread monitor_;
};

}  // namespace cohort::net
