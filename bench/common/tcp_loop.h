// RingExchange: the single-connection TCP loop, a reference beside the collectives over TCP.
//
// A ring all-reduce over n ranks has every rank send 2(n-1)/n of the buffer to its next rank while
// it receives as much from its previous one, both at once. RingExchange is those same transfers
// with nothing else to do: no reduction, no protocol, no synchronisation between steps. Each rank
// has one TCP connection to its next rank (which it connects) and one from its previous rank
// (which it accepts), and Exchange sends and receives the same number of bytes on them at once
// from one thread, at most 256 KiB per system call. Its "bus bandwidth" (bytes sent per rank /
// time) is comparable with an all-reduce's busbw = 2(n-1)/n * size / time.
//
// It is not a limit. It is what one plain TCP stream per neighbour does here, with this kernel,
// these call sizes and this load, and a collective can beat it (more connections, other call
// sizes, less traffic across hosts). Between hosts the limit is the link: each algorithm's least
// traffic at the shaping rate (bench/allreduce/allreduce_bench.cc). Measure the loop in turn with
// what it is set beside (the machine drifts).
//
//   auto ring = RingExchange::Connect(rank, endpoints, std::move(listener), deadline);
//   Status done = (*ring)->Exchange(send.data(), send.size(), receive.data(), receive.size(),
//                                   RingAllReduceBytesPerRank(size, ranks), deadline);
//
// MeasureTcpLoop forks the ranks of such a ring on loopback and returns one figure, for the
// benchmarks whose subject is not itself a ring (bench/ps).
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

#include "base/status.h"
#include "net/deadline.h"
#include "net/socket.h"

namespace cohort::bench {

// The bytes each rank of a ring all-reduce of `size` bytes over `ranks` ranks sends (and
// receives): 2(n-1)/n * size, rounded down.
size_t RingAllReduceBytesPerRank(size_t size, int ranks);

class RingExchange {
 public:
  // Connects rank `rank` to endpoints[(rank + 1) % n] and accepts one connection from
  // endpoints[(rank - 1 + n) % n] on `listener` (bound to endpoints[rank]). Two ranks share one
  // connection, both ways (rank 0 connects, rank 1 accepts), as a ring of two does. Fails naming
  // the peer it could not reach by `deadline`.
  static StatusOr<std::unique_ptr<RingExchange>> Connect(
      int rank, const std::vector<net::Endpoint>& endpoints, net::Socket listener,
      net::Deadline deadline);

  // Sends `bytes` to the next rank, cycling through send[0, send_size), while receiving `bytes`
  // from the previous rank, cycling through receive[0, receive_size), at most 256 KiB a call (as
  // Cohort's ring segments do); returns when both are done.
  Status Exchange(const void* send, size_t send_size, void* receive, size_t receive_size,
                  size_t bytes, net::Deadline deadline);

 private:
  RingExchange(net::Socket to_next, net::Socket from_previous)
      : to_next_(std::move(to_next)), from_previous_(std::move(from_previous)) {}

  net::Socket to_next_;
  net::Socket from_previous_;
};

// Forks `ranks` processes on loopback, connects them as a RingExchange and has each exchange
// `bytes` per rank (from and into buffers of `buffer_bytes`) twice to warm the connections up,
// then back to back until at least `total_bytes` have gone each way; returns those bytes per
// second per rank, for the slowest rank (0 when the ring could not be set up; the reason goes to
// standard error).
double MeasureTcpLoop(int ranks, size_t buffer_bytes, size_t bytes, size_t total_bytes);

}  // namespace cohort::bench
