// Same-host algorithms: collectives that read peers' buffers directly instead of sending them.
//
// When every rank runs on one host and the kernel allows cross-memory attach (see
// net/same_host.h), a rank can copy a peer's data straight out of the peer's buffer with one
// process_vm_readv: one copy instead of loopback TCP's two plus the protocol. The messages that
// remain are tiny and only say "here is my buffer", "this part of it is final" and "I am done
// with yours", so that nobody reads a buffer before it is ready or after its owner moved on.
// Processes only ever read each other's memory, never write it: a rank that gives up on an
// operation (a peer failed) and reuses its buffer cannot be corrupted by a slower peer. That
// slower peer may copy changed data, but the giving-up rank's failure notice reaches it first, and
// it checks for notices after its last copy, so it fails rather than return the data.
//
// SameHostAllReduce: each rank owns one block; a segment at a time, it reads that block from
// every peer into a cache-sized scratch buffer, reduces it into its own buffer and announces the
// segment as final. In between, it copies the segments its peers announced, straight from their
// buffers, while they are still in the shared cache: reduce-scatter and all-gather overlap.
// SameHostBroadcast: every rank copies the root's buffer. SameHostAllGather: every rank copies
// every peer's contribution. SameHostReduceScatter: every rank reads its block from every peer's
// input and reduces it into its output.
//
// For the hierarchical all-reduce (hierarchical_all_reduce.h), among the ranks of this host:
// ExchangeBufferAddresses, ReduceFromPeers and CopyFromPeer, the steps it builds its own
// protocol from.
//
// They pay off for large buffers; for small ones the fixed round trips cost more than the copies
// save, and the Communicator uses the TCP algorithms instead.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "base/status.h"
#include "collective/data_type.h"
#include "collective/operation.h"
#include "net/connection_set.h"

namespace cohort::collective {

class SameHostAllReduce {
 public:
  SameHostAllReduce(const OperationContext& context, void* data, size_t count, DataType type,
                    ReduceOp op, size_t segment_bytes, std::vector<uint8_t>* scratch);
  Status Run();

 private:
  const OperationContext& context_;
  uint8_t* const data_;
  const size_t count_;
  const DataType type_;
  const ReduceOp op_;
  const size_t segment_bytes_;
  std::vector<uint8_t>* const scratch_;
};

// The first step of reading the memory of `peers` (ranks on this host): tells each the address
// of this rank's `data` and returns theirs, by rank (0 for ranks not among `peers`), after
// checking that each announced a buffer of `bytes`.
StatusOr<std::vector<uint64_t>> ExchangeBufferAddresses(const OperationContext& context,
                                                        const std::vector<int>& peers,
                                                        const void* data, size_t bytes);

// data[offset, offset + count) op= the same elements of every peer's buffer (in `peers` order),
// read through `exchange`, which must claim the peers, via `scratch`. Never divides.
Status ReduceFromPeers(net::PeerExchange& exchange, const std::vector<int>& peers,
                       const std::vector<uint64_t>& addresses, void* data, size_t offset,
                       size_t count, DataType type, ReduceOp op, size_t segment_bytes,
                       std::vector<uint8_t>* scratch);

// Copies `bytes` at `address` of `peer`'s memory into `destination` through `exchange`, in
// pieces, keeping heartbeats flowing between them.
Status CopyFromPeer(net::PeerExchange& exchange, int peer, uint64_t address, uint8_t* destination,
                    size_t bytes);

class SameHostBroadcast {
 public:
  SameHostBroadcast(const OperationContext& context, void* data, size_t bytes, int root);
  Status Run();

 private:
  const OperationContext& context_;
  uint8_t* const data_;
  const size_t bytes_;
  const int root_;
};

class SameHostReduceScatter {
 public:
  // `input` holds size() blocks of `count` elements; `output` (count elements) receives this
  // rank's block reduced over every rank's input, in rank order of the peers after this rank's
  // own values.
  SameHostReduceScatter(const OperationContext& context, const void* input, void* output,
                        size_t count, DataType type, ReduceOp op, size_t segment_bytes,
                        std::vector<uint8_t>* scratch);
  Status Run();

 private:
  const OperationContext& context_;
  const uint8_t* const input_;
  uint8_t* const output_;
  const size_t count_;
  const DataType type_;
  const ReduceOp op_;
  const size_t segment_bytes_;
  std::vector<uint8_t>* const scratch_;
};

class SameHostAllGather {
 public:
  // `output` holds size() blocks of `block_bytes`; this rank's block is already in place.
  SameHostAllGather(const OperationContext& context, void* output, size_t block_bytes);
  Status Run();

 private:
  const OperationContext& context_;
  uint8_t* const output_;
  const size_t block_bytes_;
};

}  // namespace cohort::collective
