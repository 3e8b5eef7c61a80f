#include "collective/hierarchical_all_reduce.h"

#include <algorithm>

#include "collective/same_host_algorithms.h"
#include "net/connection_set.h"

namespace cohort::collective {

HierarchicalAllReduce::HierarchicalAllReduce(const OperationContext& context, void* data,
                                             size_t count, DataType type, ReduceOp op,
                                             RingTuning tuning, std::vector<uint8_t>* scratch,
                                             std::vector<uint8_t>* peer_scratch,
                                             const Topology& topology,
                                             bool same_host_memory_within_hosts)
    : context_(context),
      data_(static_cast<uint8_t*>(data)),
      count_(count),
      type_(type),
      op_(op),
      tuning_(tuning),
      scratch_(scratch),
      peer_scratch_(peer_scratch),
      topology_(topology),
      same_host_memory_within_hosts_(same_host_memory_within_hosts) {}

Status HierarchicalAllReduce::Run() {
  const int rank = context_.connections->rank();
  if (!topology_.IsUniformWithSeveralRanksPerHost() ||
      topology_.ranks() != context_.connections->size()) {
    return Status::Internal(context_.description +
                            ": hierarchical all-reduce needs several hosts with the same number "
                            "of ranks each, got " +
                            topology_.Describe());
  }
  if (count_ == 0) return Status::OK();
  const std::vector<int>& local = topology_.RanksOn(topology_.HostOf(rank));
  const int local_size = static_cast<int>(local.size());
  const int position =
      static_cast<int>(std::find(local.begin(), local.end(), rank) - local.begin());
  // The block this rank reduces over its host and then across hosts, with the ranks at the same
  // position on every host; an average is divided once, across hosts.
  const int block = OwnedBlockAfterReduceScatter(position, local_size);
  RingPlan across_hosts;
  for (int host = 0; host < topology_.hosts(); ++host) {
    across_hosts.members.push_back(topology_.RanksOn(host)[position]);
  }
  across_hosts.average_over = topology_.ranks();
  if (same_host_memory_within_hosts_) {
    return RunReadingMemoryWithinHost(local, block, across_hosts);
  }

  // 1. Reduce-scatter on this host.
  RingPlan within_host;
  within_host.members = local;
  within_host.all_gather = false;
  within_host.average_over = 1;
  within_host.right_on_another_host = false;
  COHORT_RETURN_IF_ERROR(
      RingAllReduce(context_, data_, count_, type_, op_, tuning_, scratch_, within_host).Run());
  // 2. Across hosts.
  BlockPartition blocks(count_, local_size);
  COHORT_RETURN_IF_ERROR(RingAllReduce(context_, data_ + blocks.offset(block) * SizeOf(type_),
                                       blocks.size(block), type_, op_, tuning_, scratch_,
                                       across_hosts)
                             .Run());
  // 3. All-gather on this host.
  RingPlan gather;
  gather.members = local;
  gather.reduce_scatter = false;
  gather.right_on_another_host = false;
  return RingAllReduce(context_, data_, count_, type_, op_, tuning_, scratch_, gather).Run();
}

Status HierarchicalAllReduce::RunReadingMemoryWithinHost(const std::vector<int>& local, int block,
                                                         const RingPlan& across_hosts) {
  net::ConnectionSet& connections = *context_.connections;
  const size_t element_size = SizeOf(type_);
  std::vector<int> peers;
  for (int member : local) {
    if (member != connections.rank()) peers.push_back(member);
  }
  auto addresses = ExchangeBufferAddresses(context_, peers, data_, count_ * element_size);
  if (!addresses.ok()) return addresses.status();

  const BlockPartition blocks(count_, static_cast<int>(local.size()));
  const size_t block_offset = blocks.offset(block);
  RingPlan plan = across_hosts;
  plan.prepare = [&](net::PeerExchange& exchange, size_t offset, size_t elements) -> Status {
    COHORT_RETURN_IF_ERROR(ReduceFromPeers(exchange, peers, *addresses, data_,
                                           block_offset + offset, elements, type_, op_,
                                           tuning_.segment_bytes, peer_scratch_));
    // A peer that gave up told this rank before it changed its buffer: look before the data
    // read from it leaves this rank.
    return exchange.Service();
  };
  RingAllReduce ring(context_, data_ + block_offset * element_size, blocks.size(block), type_, op_,
                     tuning_, scratch_, plan);
  std::vector<int> claimed = peers;
  claimed.push_back(ring.left());
  claimed.push_back(ring.right());
  std::unique_ptr<net::PeerExchange> opened =
      connections.OpenExchange(claimed, context_.tag, context_.description, context_.deadline);
  net::PeerExchange& exchange = *opened;
  COHORT_RETURN_IF_ERROR(exchange.status());
  // From every other rank of this host: "my block is final", then "I am done reading yours".
  for (int peer : peers) {
    exchange.Receive(peer, nullptr, 0);
    exchange.Receive(peer, nullptr, 0);
  }
  // 1 and 2: reduced over this host just in time, and across hosts.
  COHORT_RETURN_IF_ERROR(ring.RunWith(exchange));
  for (int peer : peers) exchange.Send(peer, nullptr, 0);  // my block is final
  // 3. Every other block, from its owner's buffer once the owner says it is final. Peers read
  // only this rank's block, which stays as it is now.
  for (int peer : peers) {
    COHORT_RETURN_IF_ERROR(exchange.WaitForReceives(peer, 1));
    const int position =
        static_cast<int>(std::find(local.begin(), local.end(), peer) - local.begin());
    const int peer_block = OwnedBlockAfterReduceScatter(position, static_cast<int>(local.size()));
    const size_t offset_bytes = blocks.offset(peer_block) * element_size;
    COHORT_RETURN_IF_ERROR(CopyFromPeer(exchange, peer, (*addresses)[peer] + offset_bytes,
                                        data_ + offset_bytes,
                                        blocks.size(peer_block) * element_size));
  }
  for (int peer : peers) exchange.Send(peer, nullptr, 0);  // done reading yours
  COHORT_RETURN_IF_ERROR(exchange.Finish());
  // The last look for a peer that gave up while this rank copied from it.
  return exchange.Service();
}

}  // namespace cohort::collective
