#include "collective/dissemination_barrier.h"

#include <vector>

#include "net/connection_set.h"

namespace cohort::collective {

Status DisseminationBarrier::Run() {
  net::ConnectionSet& connections = *context_.connections;
  const int size = connections.size();
  const int rank = connections.rank();
  if (size == 1) return Status::OK();
  std::vector<int> peers;
  for (int distance = 1; distance < size; distance *= 2) {
    peers.push_back((rank + distance) % size);
    peers.push_back((rank - distance + size) % size);
  }
  std::unique_ptr<net::PeerExchange> opened =
      connections.OpenExchange(peers, context_.tag, context_.description, context_.deadline);
  net::PeerExchange& exchange = *opened;
  COHORT_RETURN_IF_ERROR(exchange.status());
  // Distinct powers of two below n are distinct modulo n, so each peer sends at most one word.
  for (int distance = 1; distance < size; distance *= 2) {
    exchange.Receive((rank - distance + size) % size, nullptr, 0);
  }
  for (int distance = 1; distance < size; distance *= 2) {
    exchange.Send((rank + distance) % size, nullptr, 0);
    COHORT_RETURN_IF_ERROR(exchange.WaitForReceives((rank - distance + size) % size, 1));
  }
  return exchange.Finish();
}

}  // namespace cohort::collective
