#include "collective/ring_all_gather.h"

#include <algorithm>

#include "net/connection_set.h"

namespace cohort::collective {

RingAllGather::RingAllGather(const OperationContext& context, void* output, size_t block_bytes,
                             size_t segment_bytes)
    : context_(context),
      output_(static_cast<uint8_t*>(output)),
      block_bytes_(block_bytes),
      segment_bytes_(std::clamp<size_t>(segment_bytes, 1, context.connections->MaxMessageBytes())) {
}

Status RingAllGather::Run() {
  net::ConnectionSet& connections = *context_.connections;
  const int size = connections.size();
  const int rank = connections.rank();
  if (block_bytes_ == 0 || size == 1) return Status::OK();
  const int left = (rank - 1 + size) % size;
  const int right = (rank + 1) % size;
  std::unique_ptr<net::PeerExchange> opened = connections.OpenExchange(
      {left, right}, context_.tag, context_.description, context_.deadline);
  net::PeerExchange& exchange = *opened;
  COHORT_RETURN_IF_ERROR(exchange.status());

  const size_t segments = SegmentCount(block_bytes_, segment_bytes_);
  auto segment = [&](int block, size_t index) {
    return output_ + block * block_bytes_ + index * segment_bytes_;
  };
  auto segment_size = [&](size_t index) {
    return std::min(segment_bytes_, block_bytes_ - index * segment_bytes_);
  };
  for (size_t index = 0; index < segments; ++index) {
    exchange.Send(right, segment(rank, index), segment_size(index));
  }
  for (int step = 0; step < size - 1; ++step) {
    const int block = (rank - step - 1 + size) % size;
    for (size_t index = 0; index < segments; ++index) {
      exchange.Receive(left, segment(block, index), segment_size(index));
    }
  }
  uint64_t received = 0;
  for (int step = 0; step < size - 1; ++step) {
    const int block = (rank - step - 1 + size) % size;
    for (size_t index = 0; index < segments; ++index) {
      COHORT_RETURN_IF_ERROR(exchange.WaitForReceives(left, ++received));
      // The block received in step s is the one to send in step s+1.
      if (step < size - 2) exchange.Send(right, segment(block, index), segment_size(index));
    }
  }
  return exchange.Finish();
}

}  // namespace cohort::collective
