// StagedAllReduce: the same-host all-reduce through shared memory (staging_area.h).
//
// The buffer is cut into chunks of the area's slot size; each chunk into one part per rank. For
// every chunk, each rank
//   1. copies the parts its peers own into its slot and says so ("staged");
//   2. once every rank staged, reduces its own part: its buffer op= that part of every peer's slot
//      (peers in rank order), copies the result into its slot and says so ("reduced");
//   3. once every rank reduced, copies every peer's final part out of that peer's slot into its
//      buffer and says so ("consumed").
// Slots alternate between two per rank, so a rank may stage the next chunk while a slower peer
// still copies the last. Per chunk that is three small writes to shared memory and no system call
// unless a rank waits long enough to sleep; nothing ever reads or writes a rank's own buffer but
// that rank, so a rank that fails and reuses its buffer harms nobody.
//
// Waits: a short spin, then yielding the core, then a futex sleep (staging_area.h). Every
// millisecond of waiting drives the operation's connections (net::PeerExchange::Service):
// heartbeats flow, and a peer that died, hung or gave up fails the operation with the error that
// names it, as on every other path. Each rank also announces what operation it is in
// (AnnounceOperation), so ranks that called collectives with different sizes, or different
// collectives, fail with a clear error rather than wait out the deadline.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "base/status.h"
#include "collective/data_type.h"
#include "collective/operation.h"
#include "collective/staging_area.h"
#include "net/connection_set.h"

namespace cohort::collective {

// Tells the other ranks of `area` which operation this rank runs now (context.tag) and its size;
// every operation of a Communicator that has an area calls it first.
void AnnounceOperation(StagingArea& area, int rank, uint64_t tag, uint64_t bytes);

// What a rank announced.
struct StagingAnnouncement {
  uint64_t tag = 0;
  uint64_t bytes = 0;
};
StagingAnnouncement ReadAnnouncement(const StagingProgress& line);

class StagedAllReduce {
 public:
  // `next_chunk` numbers chunks across operations; it advances by the chunks this one used (the
  // same count on every rank, since all run the same sizes or fail).
  StagedAllReduce(const OperationContext& context, StagingArea& area, uint32_t* next_chunk,
                  void* data, size_t count, DataType type, ReduceOp op);
  Status Run();

 private:
  using Counter = std::atomic<uint32_t> StagingProgress::*;

  // Waits until `counter` of every peer reached `target`. `what` and `index` (this operation's
  // chunk) name the step in errors: "... to <what> chunk <index + 1> of <chunks>".
  Status WaitForPeers(Counter counter, uint32_t target, size_t index, const char* what);
  Status WaitForPeer(int peer, Counter counter, uint32_t target, size_t index, const char* what);
  // While waiting: drives the connections, checks the deadline and what the peer announced.
  Status CheckOnPeer(int peer, Counter counter, uint32_t target, size_t index, const char* what);
  // Fails when what a peer announced is this operation with another size, or another operation
  // (one behind this one only when `may_lag`).
  Status CheckAnnouncement(int peer, const StagingAnnouncement& announced, bool may_lag);

  const OperationContext& context_;
  StagingArea& area_;
  uint32_t* const next_chunk_;
  uint8_t* const data_;
  const size_t count_;
  const DataType type_;
  const ReduceOp op_;
  std::vector<int> peers_;
  net::PeerExchange* exchange_ = nullptr;
  uint32_t first_chunk_ = 0;
  size_t chunks_ = 0;
};

}  // namespace cohort::collective
