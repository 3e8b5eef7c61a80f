// ConnectionSet and PeerExchange: the seam between the collective algorithms and the transports
// that move their bytes, in the spirit of Gloo's transport::Device / Pair / Buffer (rendezvous
// apart) and c10d's ProcessGroup.
//
//   std::shared_ptr<net::ConnectionSet> connections = ...;   // TCP today (net/tcp/tcp_transport.h)
//   auto exchange = connections->OpenExchange({left, right}, tag, "all-reduce #7", deadline);
//   exchange->Receive(left, inbox, bytes);
//   exchange->Send(right, outbox, bytes);
//   COHORT_RETURN_IF_ERROR(exchange->WaitForReceives(left, 1));
//   COHORT_RETURN_IF_ERROR(exchange->Finish());
//
// A ConnectionSet is a group of ranks, 0 .. size()-1, that has found and trusted each other (the
// rendezvous is the implementation's business, done before the set exists) and can move plain
// buffers between any two of them. It also says what the algorithms need to know about where the
// ranks run (HostIdentity) and, optionally, what a shared host's memory allows
// (same_host_memory()). It knows nothing of reductions, data types or operations: src/collective
// writes every algorithm against these two classes and never learns which transport runs them.
//
// A PeerExchange is one operation's use of some of the set's peers: posted sends and receives of
// plain buffers, waits that drive the transport on the calling thread (a receive may land straight
// in the caller's buffer), and failure. Its contract, whatever the transport:
//   - Messages between two ranks arrive in the order they were sent; the n-th message from a peer
//     lands in the n-th buffer posted for it. Each carries the exchange's tag and must have the
//     posted size (at most the posted capacity for ReceiveAtMost), so ranks out of step fail with
//     an error naming the peer instead of mixing data.
//   - Every wait ends: with the data, with the failure of a peer (named in the error, the same on
//     every rank), or at the deadline. While waiting, the exchange keeps its peers' liveness
//     checks going (heartbeats, for TCP).
//   - After the first failure anywhere in the set, every pending and later wait fails with it; the
//     set cannot be used again.
//   - One thread drives an exchange. Two exchanges that share a peer run one after the other.
//
// Cost: one virtual call per message or wait, never per byte. Algorithms send segments of about
// 256 KiB, so the indirection is lost in the noise.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "base/status.h"
#include "net/deadline.h"

namespace cohort::net {

class PeerExchange {
 public:
  virtual ~PeerExchange() = default;

  // OK unless the set had already failed when the exchange began.
  virtual Status status() const = 0;

  // Sends `size` bytes (at most ConnectionSet::MaxMessageBytes()) to `peer`. The buffer is read
  // while the exchange waits; it must stay unchanged until sends_completed(peer) counts this send.
  virtual void Send(int peer, const void* data, size_t size) = 0;
  // Posts `buffer` for the next message from `peer`, which must be exactly `size` bytes.
  virtual void Receive(int peer, void* buffer, size_t size) = 0;
  // The same for a message of at most `capacity` bytes; how many arrived is stored in
  // `*received_size` by the time receives_completed(peer) counts it.
  virtual void ReceiveAtMost(int peer, void* buffer, size_t capacity, uint32_t* received_size) = 0;

  // Messages sent to / received from `peer` in full since the exchange began.
  virtual uint64_t sends_completed(int peer) const = 0;
  virtual uint64_t receives_completed(int peer) const = 0;

  // Waits until at least `count` messages from `peer` have been received in full.
  virtual Status WaitForReceives(int peer, uint64_t count) = 0;
  // Waits until at least `count` messages to `peer` have left this rank's hands in full.
  virtual Status WaitForSends(int peer, uint64_t count) = 0;
  // Waits until every posted send and receive is complete.
  virtual Status Finish() = 0;

  // Drives the transport once without waiting: moves what is ready, keeps liveness checks going
  // and takes in failure notices. For algorithms that compute or copy for a long time between
  // waits, and for a last look before trusting what was read from a peer's memory.
  virtual Status Service() = 0;

  // Copies `size` bytes at `address` in `peer`'s memory into `destination`. Only between ranks
  // for which ConnectionSet::same_host_memory() says CanReadMemoryOf(peer); otherwise it fails
  // (and the set with it).
  virtual Status ReadPeerMemory(int peer, uint64_t address, void* destination, size_t size) = 0;

  // Records a failure the algorithm found by itself (a peer announced a wrong size, say), tells
  // the peers, and returns it with this operation's description. `peer_report` names the peer that
  // failed (cluster/peer_report.h) when the failure is that peer's.
  virtual Status Fail(const Status& failure, const std::string& peer_report = "") = 0;
};

// Memory that every rank of a same-host group maps at once (a staging area, for example). Nothing
// is left on the host once the last rank unmaps it.
class SharedMemory {
 public:
  // What the other ranks pass to SameHostMemory::OpenSharedMemory: two numbers, which the caller
  // sends them (a broadcast).
  using Invitation = std::array<int64_t, 2>;

  virtual ~SharedMemory() = default;
  virtual uint8_t* data() const = 0;
  virtual size_t size() const = 0;
  // Valid on the rank that created the memory until Seal(); {-1, -1} elsewhere.
  virtual Invitation invitation() const = 0;
  // Once every rank has mapped it: no other process can open it any more. The mapping stays.
  virtual void Seal() = 0;
};

// An optional capability: what the ranks of a set that share a host may do with its memory. Each
// rank decides on its own, so the ranks must agree (an all-reduce) before relying on an answer.
class SameHostMemory {
 public:
  virtual ~SameHostMemory() = default;
  // True when this rank may read `rank`'s memory (PeerExchange::ReadPeerMemory).
  virtual bool CanReadMemoryOf(int rank) const = 0;
  // True when this rank may read the memory of every other rank of the set.
  virtual bool CanReadMemoryOfAllPeers() const = 0;
  // New shared memory of `bytes`, zero-filled, mapped by this rank.
  virtual StatusOr<std::unique_ptr<SharedMemory>> CreateSharedMemory(size_t bytes) = 0;
  // Maps the memory another rank created, after checking that it holds `bytes`.
  virtual StatusOr<std::unique_ptr<SharedMemory>> OpenSharedMemory(
      const SharedMemory::Invitation& invitation, size_t bytes) = 0;
};

// Thread-safe: any thread may call the accessors and health(); exchanges from several threads take
// turns on the peers they share.
class ConnectionSet {
 public:
  virtual ~ConnectionSet() = default;

  virtual int rank() const = 0;
  virtual int size() const = 0;
  // The rank's name in errors: "worker:2 (localhost:23456)".
  virtual const std::string& PeerName(int rank) const = 0;
  // The host `rank` runs on (boot id and namespaces, say); equal strings mean the same host, an
  // empty one means unknown. The collectives' topology is built from it.
  virtual const std::string& HostIdentity(int rank) const = 0;
  // The largest message an exchange may send.
  virtual size_t MaxMessageBytes() const = 0;

  // OK while every peer is healthy; afterwards the first failure, which names the peer.
  virtual Status health() const = 0;

  // Payload bytes of the messages this rank has sent to all peers / to `rank` so far (reads of
  // peers' memory excepted): what the transport carried, for tests and benchmarks.
  virtual uint64_t DataBytesSent() const = 0;
  virtual uint64_t DataBytesSentTo(int rank) const = 0;

  // Starts one operation's exchange with `peers` (ranks other than this one), whose messages carry
  // `tag`; `description` starts every error ("all-reduce #7 (float32 x 1024, sum)"). The exchange
  // holds its peers until it is destroyed.
  virtual std::unique_ptr<PeerExchange> OpenExchange(std::vector<int> peers, uint64_t tag,
                                                     std::string description,
                                                     Deadline deadline) = 0;

  // The same-host memory capability, or null when this transport has none.
  virtual SameHostMemory* same_host_memory() { return nullptr; }
};

}  // namespace cohort::net
