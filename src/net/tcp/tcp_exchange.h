// TcpExchange: net::PeerExchange (connection_set.h) over TcpTransport's connections: one
// collective operation's use of the transport.
//
// An algorithm opens an exchange over the peers it talks to (ConnectionSet::OpenExchange), posts
// sends and receives of plain buffers, and waits for them; the exchange drives the sockets on the
// calling thread, so a receive lands straight in the caller's buffer with no hand-off to another
// thread:
//
//   net::TcpExchange exchange(transport, {left, right}, tag, "all-reduce #7", deadline);
//   exchange.Receive(left, inbox, bytes);
//   exchange.Send(right, outbox, bytes);
//   COHORT_RETURN_IF_ERROR(exchange.WaitForReceives(left, 1));
//   COHORT_RETURN_IF_ERROR(exchange.Finish());
//
// Messages between two tasks arrive in the order they were sent, and the n-th message from a peer
// lands in the n-th buffer posted for it; each frame carries this operation's tag and must have
// exactly the posted size, so tasks that call collectives in different orders or with different
// sizes fail with a clear error instead of mixing data. While it waits, the exchange sends
// heartbeats on its connections and checks that its peers are alive, so a wait always ends: with
// the data, with the failure of a peer (named in the error), or at the operation's deadline.
//
// Not thread-safe: one thread drives an exchange. Two exchanges that share a peer run one after
// the other (the second waits for the first to finish).
#pragma once

#include <poll.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "base/status.h"
#include "net/connection_set.h"
#include "net/deadline.h"
#include "net/tcp/tcp_transport.h"

namespace cohort::net {

class TcpExchange : public PeerExchange {
 public:
  // Claims the connections to `peers` (ranks other than this task's) until destruction.
  // `description` starts every error ("all-reduce #7 (float32 x 1024, sum)").
  TcpExchange(TcpTransport& transport, std::vector<int> peers, uint64_t tag,
              std::string description, Deadline deadline);
  // Releases the connections. Transfers that did not finish are abandoned safely.
  ~TcpExchange() override;

  TcpExchange(const TcpExchange&) = delete;
  TcpExchange& operator=(const TcpExchange&) = delete;

  // OK unless the transport had already failed when the Exchange began.
  Status status() const override { return initial_status_; }

  // Sends `size` bytes (at most kMaxDataPayload) to `peer`. The buffer is read while the
  // Exchange waits; it must stay unchanged until sends_completed(peer) counts this send.
  void Send(int peer, const void* data, size_t size) override;
  // Posts `buffer` for the next message from `peer`, which must be exactly `size` bytes.
  void Receive(int peer, void* buffer, size_t size) override;
  // The same for a message of at most `capacity` bytes; how many arrived is stored in
  // `*received_size` by the time receives_completed(peer) counts it.
  void ReceiveAtMost(int peer, void* buffer, size_t capacity, uint32_t* received_size) override;

  // Messages sent to / received from `peer` in full since the Exchange began.
  uint64_t sends_completed(int peer) const override;
  uint64_t receives_completed(int peer) const override;

  // Waits until at least `count` messages from `peer` have been received in full.
  Status WaitForReceives(int peer, uint64_t count) override;
  // Waits until at least `count` messages to `peer` have been handed to the kernel in full.
  Status WaitForSends(int peer, uint64_t count) override;
  // Waits until every posted send and receive is complete.
  Status Finish() override;

  // Drives the connections once without waiting: moves whatever bytes are ready, sends heartbeats
  // that are due and checks that peers are alive. For algorithms that compute or copy for a long
  // time between waits.
  Status Service() override;

  // Copies `size` bytes at `address` in `peer`'s memory into `destination` (same host only; see
  // TcpTransport::CanReadMemoryOf).
  Status ReadPeerMemory(int peer, uint64_t address, void* destination, size_t size) override;

  // Records a failure the algorithm found by itself (a peer announced a wrong size, say) and
  // returns it with this operation's description. `peer_report` names the peer that failed
  // (cluster/peer_report.h) when the failure is that peer's.
  Status Fail(const Status& failure, const std::string& peer_report = "") override;

 private:
  struct Link {
    int rank;
    Connection* connection;
    uint64_t sends_at_start;
    uint64_t receives_at_start;
    uint64_t sends_posted = 0;
    uint64_t receives_posted = 0;
  };

  Link& LinkTo(int peer);
  const Link& LinkTo(int peer) const;
  // Drives the sockets until `done()` holds. `waiting_for()` describes the wait for errors.
  Status WaitUntil(const std::function<bool()>& done,
                   const std::function<std::string()>& waiting_for);
  Status PumpLink(Link& link);
  // After a failure: drops this operation's transfers and tells the peers of this Exchange at
  // once, before the caller gets the error back and perhaps reuses its buffers. Peers on this host
  // may still be reading those buffers; the notice is in their sockets before the buffers change,
  // so a peer that read changed data fails too (see same_host_algorithms.h) instead of returning
  // it. A failure learnt from a notice is passed on as well: the peers may not have it yet.
  void TellPeersNow();
  // The failure of the transport, or of this peer, with the operation's description in front.
  Status WithDescription(const Status& status) const;

  TcpTransport& transport_;
  const uint64_t tag_;
  const std::string description_;
  const Deadline deadline_;
  std::vector<Link> links_;
  std::vector<int> link_of_rank_;  // index into links_, or -1
  std::vector<pollfd> poll_fds_;   // reused by every wait
  Status initial_status_;
};

}  // namespace cohort::net
