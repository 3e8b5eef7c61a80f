// RingAllReduce: bandwidth-optimal all-reduce over TCP, pipelined in segments.
//
// The buffer is cut into one block per rank. In the reduce-scatter phase each rank sends a block
// to its right neighbour, which adds its own values and passes the partial sum on; after n-1 steps
// every rank holds one block fully reduced. In the all-gather phase the reduced blocks travel once
// more around the ring until every rank has all of them. Each rank sends and receives 2(n-1)/n of
// the buffer, the least any algorithm can (the NCCL-tests bus bandwidth is defined against it).
//
// Pipelining. Blocks are cut into segments (TuningOptions::segment_bytes), and each segment moves
// on as soon as it is ready: a segment received in step s is reduced and sent right at once, while
// later segments of step s are still arriving. Reduce-scatter segments are received into a few
// small scratch slots, which stay in cache between the receive and the reduction, and the number
// of slots bounds how far the left neighbour can run ahead (TCP holds back the rest). All-gather
// segments are received straight into the caller's buffer. One thread drives everything (see
// net::Exchange), so there is no hand-off between a network thread and a compute thread.
//
// Every rank ends with bit-identical results: each block is reduced once, by one fixed order of
// additions, and then copied.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "base/status.h"
#include "collective/data_type.h"
#include "collective/operation.h"

namespace cohort::collective {

struct RingTuning {
  // Bytes per message. Large enough to amortise per-message costs, small enough that a scratch
  // slot stays in the L2 cache between arriving and being reduced.
  size_t segment_bytes = 256 * 1024;
  // Reduce-scatter segments that may be in flight towards this rank at once.
  int receive_slots = 4;
};

class RingAllReduce {
 public:
  // Reduces data[0, count) in place across all ranks. `scratch` is reused between operations so
  // that steady-state all-reduces allocate nothing.
  RingAllReduce(const OperationContext& context, void* data, size_t count, DataType type,
                ReduceOp op, RingTuning tuning, std::vector<uint8_t>* scratch);

  Status Run();

 private:
  // One message from the left neighbour, in the order it arrives.
  struct Segment {
    bool reduce_scatter;  // false: all-gather
    int step;             // 0 .. n-2 within its phase
    size_t offset;        // in elements
    size_t elements;
  };

  std::vector<Segment> ReceiveSchedule(size_t segment_elements) const;

  const OperationContext& context_;
  uint8_t* const data_;
  const size_t count_;
  const DataType type_;
  const ReduceOp op_;
  const RingTuning tuning_;
  std::vector<uint8_t>* const scratch_;
};

}  // namespace cohort::collective
