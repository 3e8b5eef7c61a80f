// TcpTransport: the TCP implementation of net::ConnectionSet (connection_set.h): authenticated,
// framed TCP connections between the ranks of one training group, with the same-host memory
// capability (reads of peers' memory, shared memory files) where the handshake proved it works.
//
//   auto transport = net::TcpTransport::Connect(members, rank, options);   // rendezvous
//   ... collective operations open exchanges (tcp_exchange.h) through the ConnectionSet ...
//
// Who takes part: a plain list of members, each a task identity and an endpoint ("host:port"),
// in rank order, and this task's rank. The job name and secret (TransportOptions) are the job
// identity the handshake proves. GroupFromCluster turns a cluster spec (TF_CONFIG) into that list:
// the tasks whose type is in TransportOptions::participant_types ("chief", "master", "worker" by
// default), in that order of types and by index within a type: with a chief and three workers,
// chief:0 is rank 0 and worker:2 is rank 3. Parameter servers and evaluators take no part.
//
// Rendezvous needs nothing but the members. Each task listens on the port of its own endpoint
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
// operation (see tcp_exchange.h).
//
// Shutdown. The destructor sends every peer a goodbye and waits (at most shutdown_timeout) until
// each peer has read everything and acknowledged, so that a task that finishes first cannot
// destroy data a slower peer still has to read.
//
// One Communicator (collective/communicator.h) per transport: operation numbers belong to the
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
#include "net/connection.h"
#include "net/connection_set.h"

namespace cohort::net {

struct TransportOptions {
  // Compared in the handshake: tasks of different jobs never talk.
  std::string job_name;
  // The job secret. Unset: read COHORT_JOB_SECRET. Empty: open mode (with a warning).
  std::optional<std::string> secret;
  // Task types that take part in collectives, in rank order (read only by the cluster-spec form
  // of TcpTransport::Connect).
  std::vector<std::string> participant_types = {"chief", "master", "worker"};
  // How long the rendezvous waits for every peer to be reachable and to pass the handshake.
  std::chrono::milliseconds startup_timeout = std::chrono::minutes(5);
  // How often the rendezvous logs whom it still waits for (net/rendezvous.h); zero: never.
  std::chrono::milliseconds waiting_report_interval = std::chrono::seconds(10);
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

// One member of a group: who it is (the identity its handshake proves) and where it listens.
struct GroupMember {
  cluster::TaskId task;
  std::string endpoint;  // "host:port"
};

// The members of the group a task of `cluster` joins, in rank order, and its own rank: the tasks
// whose type is in `participant_types`, in that order of types and by index within a type. Fails
// when `self` takes no part. The adapter from TF_CONFIG's cluster to a plain list of endpoints.
struct Group {
  std::vector<GroupMember> members;
  int rank = 0;
};
StatusOr<Group> GroupFromCluster(const cluster::ClusterSpec& cluster, const cluster::TaskId& self,
                                 const std::vector<std::string>& participant_types);

class TcpExchange;

// Thread-safe: any thread may read the accessors and health(); exchanges from several threads
// take turns on the connections they share.
class TcpTransport : public ConnectionSet, public SameHostMemory {
 public:
  // Rendezvous: returns once this task (members[rank]) has an authenticated connection to every
  // other member, or fails naming the peers it could not reach or trust.
  static StatusOr<std::unique_ptr<TcpTransport>> Connect(std::vector<GroupMember> members, int rank,
                                                         TransportOptions options);
  // The same for the participants of a cluster spec (GroupFromCluster with
  // options.participant_types). The sparse form of TF_CONFIG does not list the other workers, so
  // collectives cannot use it.
  static StatusOr<std::unique_ptr<TcpTransport>> Connect(const cluster::ClusterSpec& cluster,
                                                         const cluster::TaskId& self,
                                                         TransportOptions options);

  // Says goodbye to every peer (so that they can tell an orderly exit from a crash), waits until
  // each has read everything this task sent (at most shutdown_timeout) and closes.
  ~TcpTransport() override;

  TcpTransport(const TcpTransport&) = delete;
  TcpTransport& operator=(const TcpTransport&) = delete;

  // ConnectionSet.
  int rank() const override { return rank_; }
  int size() const override { return static_cast<int>(tasks_.size()); }
  // "worker:2 (localhost:23456)".
  const std::string& PeerName(int rank) const override { return names_[rank]; }
  // As the rank's handshake described it (boot id and namespaces, see same_host.h).
  const std::string& HostIdentity(int rank) const override;
  size_t MaxMessageBytes() const override { return kMaxDataPayload; }
  // OK while every peer is healthy; afterwards the first failure, which names the peer.
  Status health() const override;
  // Payload bytes of the collectives' messages this task has sent to all peers so far (the
  // same-host paths excepted): what the network carried.
  uint64_t DataBytesSent() const override;
  // The same, to one peer (0 for this task).
  uint64_t DataBytesSentTo(int rank) const override;
  // A TcpExchange (tcp_exchange.h).
  std::unique_ptr<PeerExchange> OpenExchange(std::vector<int> peers, uint64_t tag,
                                             std::string description, Deadline deadline) override;
  // This transport: CanReadMemoryOf says whose memory the handshakes proved readable.
  SameHostMemory* same_host_memory() override { return this; }

  // SameHostMemory: process_vm_readv where the handshake's probe read back (same_host.h), and
  // memory files (shared_memory_file.h). Each task decides on its own, so the tasks must agree
  // (for example by an all-reduce) before relying on it.
  bool CanReadMemoryOf(int rank) const override;
  bool CanReadMemoryOfAllPeers() const override { return can_read_all_peers_; }
  StatusOr<std::unique_ptr<SharedMemory>> CreateSharedMemory(size_t bytes) override;
  StatusOr<std::unique_ptr<SharedMemory>> OpenSharedMemory(
      const SharedMemory::Invitation& invitation, size_t bytes) override;

  const cluster::TaskId& task(int rank) const { return tasks_[rank]; }
  const TransportOptions& options() const { return options_; }

  // Records a failure (the first one wins) and wakes every waiting exchange. With `tell_peers`
  // the monitor also sends it to every peer; a failure that arrived as a notice was already sent
  // to everyone by the task that detected it. `peer_report` names the peer that failed
  // (cluster/peer_report.h), or is empty when the failure names none.
  void RecordFailure(const Status& failure, bool tell_peers = true,
                     const std::string& peer_report = "");

  // The peer report of the first failure, or empty (no failure yet, or one that names no peer).
  std::string FailurePeerReport() const;

 private:
  friend class TcpExchange;

  TcpTransport(TransportOptions options, std::vector<cluster::TaskId> tasks,
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
