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
// every peer's contribution.
//
// SameHostReduceScatter and SameHostBlockGather: the two halves of an all-reduce among some of
// the ranks, all on this host, for the hierarchical all-reduce (hierarchical_all_reduce.h). After
// the reduce-scatter, the member at ring position p holds block OwnedBlockAfterReduceScatter(p, m)
// (of m, BlockPartition) reduced over the members, never divided; in between, each member changes
// only that block; the gather then copies every block from its owner.
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

class SameHostReduceScatter {
 public:
  // `members`: the ranks taking part, in ring order, this rank among them.
  SameHostReduceScatter(const OperationContext& context, void* data, size_t count, DataType type,
                        ReduceOp op, size_t segment_bytes, std::vector<uint8_t>* scratch,
                        std::vector<int> members);
  Status Run();

 private:
  const OperationContext& context_;
  uint8_t* const data_;
  const size_t count_;
  const DataType type_;
  const ReduceOp op_;
  const size_t segment_bytes_;
  std::vector<uint8_t>* const scratch_;
  const std::vector<int> members_;
};

class SameHostBlockGather {
 public:
  SameHostBlockGather(const OperationContext& context, void* data, size_t count, DataType type,
                      std::vector<int> members);
  Status Run();

 private:
  const OperationContext& context_;
  uint8_t* const data_;
  const size_t count_;
  const DataType type_;
  const std::vector<int> members_;
};

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
