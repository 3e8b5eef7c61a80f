// HierarchicalAllReduce: all-reduce across hosts that each run several ranks, sending each byte
// across the network as few times as a ring can.
//
// A flat ring over 2 hosts x 2 ranks makes every byte cross each host's link 2(n-1)/n = 1.5
// times; the network only has to carry what the hosts, not the ranks, exchange: 2(h-1)/h = 1
// time for 2 hosts. With L ranks per host and the buffer cut into L blocks:
//   1. reduce-scatter within each host (a ring over the host's ranks): local rank p ends with
//      block OwnedBlockAfterReduceScatter(p, L) reduced over its host;
//   2. an all-reduce of that block across hosts, among the ranks with the same local position
//      (one ring per position, all L rings at once, each carrying 1/L of the buffer);
//   3. all-gather within each host.
// Each host's link then carries 2(h-1)/h of the buffer each way, spread over L connections, and the
// local phases never touch the network. The local phases run as rings over loopback TCP, or, when
// the ranks of a host may read each other's memory (same_host_algorithms.h), by reading it: one
// copy per byte instead of TCP's two. Then the reduction within the host happens a segment at a
// time, just before the ring across hosts sends or adds to that segment (RingPlan::prepare), so
// that it overlaps the network; after the ring, each rank says "my block is final" to the others
// on its host, copies their blocks from their buffers and says "done reading yours". All messages
// from the host's other ranks are posted for before the first read, so that a rank that gave up
// on the operation (a peer failed) is heard of before what was read from it leaves this rank.
// Results are bit-identical on every rank: each element is reduced in one fixed order (within its
// host, then across hosts by the ring) and then copied.
//
// Used by the Communicator when the topology has several hosts with the same number (at least 2)
// of ranks each (Topology::IsUniformWithSeveralRanksPerHost).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "base/status.h"
#include "collective/data_type.h"
#include "collective/operation.h"
#include "collective/ring_all_reduce.h"
#include "collective/topology.h"

namespace cohort::collective {

class HierarchicalAllReduce {
 public:
  // `topology` must be uniform with several ranks per host, and the same on every rank.
  HierarchicalAllReduce(const OperationContext& context, void* data, size_t count, DataType type,
                        ReduceOp op, RingTuning tuning, std::vector<uint8_t>* scratch,
                        std::vector<uint8_t>* peer_scratch, const Topology& topology,
                        bool same_host_memory_within_hosts);

  Status Run();

 private:
  // Steps 1 and 3 by reading the memory of `local` (this host's ranks, this rank among them).
  Status RunReadingMemoryWithinHost(const std::vector<int>& local, int block,
                                    const RingPlan& across_hosts);

  const OperationContext& context_;
  uint8_t* const data_;
  const size_t count_;
  const DataType type_;
  const ReduceOp op_;
  const RingTuning tuning_;
  std::vector<uint8_t>* const scratch_;
  std::vector<uint8_t>* const peer_scratch_;
  const Topology& topology_;
  const bool same_host_memory_within_hosts_;
};

}  // namespace cohort::collective
