#include "collective/hierarchical_all_reduce.h"

#include <algorithm>

#include "collective/same_host_algorithms.h"

namespace cohort::collective {

HierarchicalAllReduce::HierarchicalAllReduce(const OperationContext& context, void* data,
                                             size_t count, DataType type, ReduceOp op,
                                             RingTuning tuning, std::vector<uint8_t>* scratch,
                                             const Topology& topology,
                                             bool same_host_memory_within_hosts)
    : context_(context),
      data_(static_cast<uint8_t*>(data)),
      count_(count),
      type_(type),
      op_(op),
      tuning_(tuning),
      scratch_(scratch),
      topology_(topology),
      same_host_memory_within_hosts_(same_host_memory_within_hosts) {}

Status HierarchicalAllReduce::Run() {
  const int rank = context_.transport->rank();
  if (!topology_.IsUniformWithSeveralRanksPerHost() ||
      topology_.ranks() != context_.transport->size()) {
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

  // 1. Reduce-scatter on this host; an average is divided once, across hosts.
  if (same_host_memory_within_hosts_) {
    COHORT_RETURN_IF_ERROR(SameHostReduceScatter(context_, data_, count_, type_, op_,
                                                 tuning_.segment_bytes, scratch_, local)
                               .Run());
  } else {
    RingPlan within_host;
    within_host.members = local;
    within_host.all_gather = false;
    within_host.average_over = 1;
    COHORT_RETURN_IF_ERROR(
        RingAllReduce(context_, data_, count_, type_, op_, tuning_, scratch_, within_host).Run());
  }

  // 2. The block this rank holds, all-reduced with the ranks at the same position on every host.
  BlockPartition blocks(count_, local_size);
  const int block = OwnedBlockAfterReduceScatter(position, local_size);
  RingPlan across_hosts;
  for (int host = 0; host < topology_.hosts(); ++host) {
    across_hosts.members.push_back(topology_.RanksOn(host)[position]);
  }
  across_hosts.average_over = topology_.ranks();
  COHORT_RETURN_IF_ERROR(RingAllReduce(context_, data_ + blocks.offset(block) * SizeOf(type_),
                                       blocks.size(block), type_, op_, tuning_, scratch_,
                                       across_hosts)
                             .Run());

  // 3. All-gather on this host.
  if (same_host_memory_within_hosts_) {
    return SameHostBlockGather(context_, data_, count_, type_, local).Run();
  }
  RingPlan gather;
  gather.members = local;
  gather.reduce_scatter = false;
  return RingAllReduce(context_, data_, count_, type_, op_, tuning_, scratch_, gather).Run();
}

}  // namespace cohort::collective
