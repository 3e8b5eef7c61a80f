// Rendezvous: how the participants of a cluster find and authenticate each other.
//
// Task i accepts connections from every task ranked above it and connects to every task ranked
// below it, so each pair ends up with exactly one connection and no task needs to know which of
// its peers already runs. Connecting retries with exponential backoff (50 ms doubling to 1 s, with
// jitter so that restarted tasks do not knock in lockstep) until the startup deadline. Accepted
// connections are handshaken on their own threads, so a slow or hostile client cannot delay the
// real peers; whatever fails the handshake is logged at once and closed. A peer proven to see
// another cluster (handshake.h) ends the rendezvous at once, on both sides, with a permanent
// error. While peers are missing, every `waiting_report_interval` (10 s by default) the log says
// whom this task still waits for and the last error seen for each, so a stuck start-up names its
// cause long before the startup timeout.
#pragma once

#include <condition_variable>
#include <functional>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "base/status.h"
#include "cluster/cluster_spec.h"
#include "net/handshake.h"
#include "net/socket.h"

namespace cohort::net {

// A connection that passed the handshake.
struct EstablishedConnection {
  Socket socket;
  HandshakeResult handshake;
};

class Rendezvous {
 public:
  struct Participants {
    std::vector<cluster::TaskId> tasks;  // by rank
    std::vector<std::string> names;      // "worker:1 (host:port)", by rank
    std::vector<Endpoint> endpoints;     // by rank
    int self_rank = 0;
  };

  Rendezvous(Participants participants, HandshakeConfig handshake,
             std::chrono::milliseconds startup_timeout, std::chrono::milliseconds handshake_timeout,
             std::function<void(const std::string&)> log_warning);

  // How often Run logs whom it still waits for; zero or less: never.
  void set_waiting_report_interval(std::chrono::milliseconds interval) {
    waiting_report_interval_ = interval;
  }

  // Connects to every other participant through `listener` (already listening on this task's
  // port). Returns the connections by rank (this task's own slot stays empty). Fails when a peer
  // refused this task or proved to be an impostor (no retry can help), or when the startup
  // deadline passed, naming every peer still missing and the last error seen for it.
  StatusOr<std::vector<EstablishedConnection>> Run(Socket listener);

 private:
  void AcceptLoop(const Socket& listener);
  void AcceptOne(Socket socket);
  void ConnectLoop(int rank);
  void Register(int rank, EstablishedConnection connection);
  void Fail(const Status& status);
  // Sleeps `duration` unless the rendezvous ends first. Returns false if it ended.
  bool SleepUnlessStopped(std::chrono::milliseconds duration);
  Deadline HandshakeDeadline() const;
  // Tracks sockets in a handshake, so that stopping can interrupt them.
  void TrackInFlight(int fd, bool add);
  int RankOf(const cluster::TaskId& task) const;
  // The peers still missing, each with the last error seen for it ("; "-separated). Caller holds
  // mutex_.
  std::string MissingPeers() const;

  const Participants participants_;
  const HandshakeConfig handshake_;
  const std::chrono::milliseconds handshake_timeout_;
  const std::function<void(const std::string&)> log_warning_;
  Deadline deadline_;
  std::chrono::milliseconds waiting_report_interval_ = std::chrono::seconds(10);

  std::mutex mutex_;
  std::condition_variable changed_;
  std::vector<EstablishedConnection> connections_;
  std::vector<bool> connected_;
  std::vector<std::string> last_error_;
  int missing_ = 0;
  Status fatal_;
  bool stopped_ = false;
  std::set<int> in_flight_fds_;
  std::vector<std::thread> handshake_threads_;
};

}  // namespace cohort::net
