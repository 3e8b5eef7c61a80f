#include "collective/chain_broadcast.h"

#include <algorithm>
#include <vector>

#include "net/connection_set.h"

namespace cohort::collective {

ChainBroadcast::ChainBroadcast(const OperationContext& context, void* data, size_t bytes, int root,
                               size_t segment_bytes)
    : context_(context),
      data_(static_cast<uint8_t*>(data)),
      bytes_(bytes),
      root_(root),
      segment_bytes_(std::clamp<size_t>(segment_bytes, 1, context.connections->MaxMessageBytes())) {
}

Status ChainBroadcast::Run() {
  net::ConnectionSet& connections = *context_.connections;
  const int size = connections.size();
  const int rank = connections.rank();
  if (bytes_ == 0 || size == 1) return Status::OK();
  const int position = (rank - root_ + size) % size;  // 0 is the root, size-1 the end of the chain
  const bool receives = position > 0;
  const bool forwards = position < size - 1;
  const int previous = (rank - 1 + size) % size;
  const int next = (rank + 1) % size;

  std::vector<int> peers;
  if (receives) peers.push_back(previous);
  if (forwards) peers.push_back(next);
  std::unique_ptr<net::PeerExchange> opened =
      connections.OpenExchange(peers, context_.tag, context_.description, context_.deadline);
  net::PeerExchange& exchange = *opened;
  COHORT_RETURN_IF_ERROR(exchange.status());

  const size_t segments = SegmentCount(bytes_, segment_bytes_);
  auto segment_size = [&](size_t index) {
    return std::min(segment_bytes_, bytes_ - index * segment_bytes_);
  };
  if (!receives) {
    for (size_t index = 0; index < segments; ++index) {
      exchange.Send(next, data_ + index * segment_bytes_, segment_size(index));
    }
    return exchange.Finish();
  }
  for (size_t index = 0; index < segments; ++index) {
    exchange.Receive(previous, data_ + index * segment_bytes_, segment_size(index));
  }
  for (size_t index = 0; index < segments; ++index) {
    COHORT_RETURN_IF_ERROR(exchange.WaitForReceives(previous, index + 1));
    if (forwards) exchange.Send(next, data_ + index * segment_bytes_, segment_size(index));
  }
  return exchange.Finish();
}

}  // namespace cohort::collective
