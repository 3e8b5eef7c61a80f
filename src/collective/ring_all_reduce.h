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
// net::PeerExchange), so there is no hand-off between a network thread and a compute thread.
//
// Every rank ends with bit-identical results: each block is reduced once, by one fixed order of
// additions, and then copied.
//
// Zero skipping (RingTuning::skip_zero_words). When this rank's right neighbour is on another host
// (RingPlan::right_on_another_host) and a sample of its data is at least one eighth zero words,
// each segment it sends is encoded without its zero words whenever that is
// shorter (zero_skipping.h); segments are received with room for the plain data and expanded in
// place when they arrive shorter, so the arithmetic, and so every result bit, is the same as
// without it. Encoded sends are written into a region of the scratch buffer sized for every send
// of the operation, so the data is never waited for.
//
// Rings and phases (RingPlan). The ring may be any subset of the ranks in any order, and either
// phase may run alone, which is what hierarchical_all_reduce.h builds on: after reduce-scatter the
// member at ring position p holds block (p + 1) % m of m fully reduced
// (OwnedBlockAfterReduceScatter), and an all-gather alone starts from exactly that state.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

#include "base/status.h"
#include "collective/data_type.h"
#include "collective/operation.h"
#include "net/connection_set.h"

namespace cohort::collective {

struct RingTuning {
  // Bytes per message. Large enough to amortise per-message costs, small enough that a scratch
  // slot stays in the L2 cache between arriving and being reduced.
  size_t segment_bytes = 256 * 1024;
  // Reduce-scatter segments that may be in flight towards this rank at once.
  int receive_slots = 4;
  // Sends segments of 32-bit elements that are at least one eighth exact zeros without the zeros
  // (zero_skipping.h), and accepts such segments. Lossless; must be the same on every rank.
  bool skip_zero_words = true;
};

// Which ranks form the ring, and which phases run. The default is the whole all-reduce over every
// rank in rank order.
struct RingPlan {
  // Ranks in ring order, this rank among them; empty means every rank, in rank order.
  std::vector<int> members;
  bool reduce_scatter = true;
  bool all_gather = true;
  // With ReduceOp::kAverage, the reduced values are divided by this many ranks at the end of
  // reduce-scatter; 0 means the size of the ring, 1 leaves the sum undivided.
  int average_over = 0;
  // With reduce-scatter: called once for every segment of this rank's data (offset and count in
  // elements) just before the ring first uses it (sends it, or adds what arrived to it), with the
  // ring's Exchange. The hierarchical all-reduce reduces the segment over its host there, so that
  // this overlaps the network.
  std::function<Status(net::PeerExchange& exchange, size_t offset, size_t elements)> prepare;
  // Whether this rank's right neighbour runs on another host. Zero skipping encodes only what
  // crosses hosts: over loopback TCP, bytes are cheaper than the passes that would save them.
  bool right_on_another_host = true;
};

// The block (of `ring_size`, BlockPartition) that ring position `position` holds fully reduced
// after reduce-scatter, and sends first in all-gather.
inline int OwnedBlockAfterReduceScatter(int position, int ring_size) {
  return (position + 1) % ring_size;
}

class RingAllReduce {
 public:
  // Reduces data[0, count) in place across the ranks of `plan`. `scratch` is reused between
  // operations so that steady-state all-reduces allocate nothing.
  RingAllReduce(const OperationContext& context, void* data, size_t count, DataType type,
                ReduceOp op, RingTuning tuning, std::vector<uint8_t>* scratch, RingPlan plan = {});

  Status Run();
  // The same over an Exchange the caller opened, which must claim both neighbours and carry no
  // other transfers with them; it may claim more peers. Returns once the ring's own transfers are
  // complete.
  Status RunWith(net::PeerExchange& exchange);

  // This rank's neighbours in the ring (the same rank when the ring has two members).
  int left() const;
  int right() const;

 private:
  // One message from the left neighbour, in the order it arrives.
  struct Segment {
    bool reduce_scatter;  // false: all-gather
    int step;             // 0 .. n-2 within its phase
    size_t offset;        // in elements
    size_t elements;
  };

  std::vector<Segment> ReceiveSchedule(size_t segment_elements) const;
  // A ring of one, or nothing to reduce: no transfers.
  Status RunAlone();
  int ring_size() const { return static_cast<int>(members_.size()); }

  const OperationContext& context_;
  uint8_t* const data_;
  const size_t count_;
  const DataType type_;
  const ReduceOp op_;
  const RingTuning tuning_;
  std::vector<uint8_t>* const scratch_;
  RingPlan plan_;
  std::vector<int> members_;
  int position_ = -1;  // this rank's index in members_
};

}  // namespace cohort::collective
