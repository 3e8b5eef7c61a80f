// Communicator: the collective operations of one group of tasks, over one net::ConnectionSet (the
// transport seam, net/connection_set.h; TCP is net/tcp/tcp_transport.h), c10d's ProcessGroup.
//
//   std::shared_ptr<net::ConnectionSet> connections = ...;   // made by the caller's transport
//   auto communicator = collective::Communicator::Create(connections, {});
//   Status status = (*communicator)->AllReduce(gradients, count, DataType::kFloat32,
//                                              ReduceOp::kSum);
//
//   // Start now, wait later (overlap communication with the backward pass):
//   auto pending = (*communicator)->StartAllReduce(bucket, bucket_count, DataType::kFloat32,
//                                                  ReduceOp::kAverage);
//   ... compute ...
//   Status done = pending->Wait(std::chrono::minutes(1));
//
// Rules, as in every collective library: every rank calls the same operations in the same order
// with the same counts, types, operators and roots, and the same CommunicatorOptions. Operations
// are numbered, and every message carries its operation's number, so a rank that is out of step
// gets an error naming the peer instead of mixing data. Buffers are contiguous and the
// operations work in place.
//
// Operations run one at a time, in the order they were started; started operations run on the
// Communicator's own thread, and a blocking call made while started ones are still pending waits
// its turn. Call from one thread, or order the calls yourself: the order of calls is the order of
// operations.
//
// Failure: when a peer dies or hangs, every pending and later operation fails with an error that
// names it ("worker:2 (host:2222) closed the connection without saying goodbye..."); the group
// cannot be used again and must be rebuilt (see net/connection_set.h). The buffers of a failed
// operation hold unspecified values, on every rank.
//
// Algorithms, chosen per call: ring reduce-scatter + all-gather for all-reduce, a pipelined chain
// for broadcast, a ring for all-gather, the ring's reduce-scatter phase alone for reduce-scatter
// and a dissemination barrier, all over the set's messages;
// and, when every rank runs on this host and the set's same-host capability
// (net::SameHostMemory) lets each read the others' memory, all-reduce through shared memory
// (staged_all_reduce.h) and, for buffers of at least same_host_min_bytes, the other same-host
// algorithms of same_host_algorithms.h (smaller reduce-scatters then take the staged all-reduce
// of a copy, whose fixed cost is lower than any exchange of buffer addresses). The Communicator
// knows which ranks share a host (topology.h, from ConnectionSet::HostIdentity): over several hosts
// with the same number of ranks each, at least two, all-reduce is hierarchical
// (hierarchical_all_reduce.h); otherwise the all-reduce ring visits the ranks host by host, so
// that it crosses the network once per host.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "base/status.h"
#include "collective/data_type.h"
#include "collective/ring_all_reduce.h"
#include "collective/staging_area.h"
#include "collective/topology.h"
#include "net/connection_set.h"

namespace cohort::collective {

struct CommunicatorOptions {
  // How long one operation may take before it fails (and the group with it). Peer failures are
  // detected much sooner (TransportOptions::peer_timeout); this catches a live but stuck peer.
  std::chrono::milliseconds operation_timeout = std::chrono::minutes(30);
  RingTuning ring;
  // Use the same-host path between ranks on this host (when every rank can read every other's
  // memory) for buffers of at least same_host_min_bytes; and process_vm_readv within each host in
  // the hierarchical all-reduce (when every rank can read the other ranks of its host).
  bool same_host_memory = true;
  size_t same_host_min_bytes = 256 * 1024;
  // When every rank runs on this host, all-reduce buffers of at least same_host_staging_min_bytes
  // through shared memory that the ranks map (staged_all_reduce.h), in chunks of
  // same_host_staging_bytes; 0: read peers' buffers with process_vm_readv instead
  // (same_host_algorithms.h, from same_host_min_bytes), as broadcast and all-gather always do.
  // Staging has no round trip over sockets, so it beats TCP at every size.
  size_t same_host_staging_bytes = 1024 * 1024;
  size_t same_host_staging_min_bytes = 0;
  // The host of each rank, by rank (equal labels: the same host), in place of what the handshakes
  // said; for tests and benchmarks that emulate several hosts on one machine. Empty: from the
  // connection set (net::ConnectionSet::HostIdentity).
  std::vector<int> host_labels;
  // Use HierarchicalAllReduce where the topology allows it.
  bool hierarchical_all_reduce = true;
};

// An operation that has been started and may not have finished.
class PendingOperation {
 public:
  // Waits until the operation finished or `timeout` passed, and returns its result; when the
  // timeout passes first, DeadlineExceeded names the operation, which goes on running (Wait may be
  // called again). The buffers must stay valid until a Wait returns the result.
  Status Wait(std::chrono::milliseconds timeout);
  // Waits for the result as long as the operation may take (its own deadline plus a margin).
  Status Wait();
  bool done() const;
  const std::string& description() const { return description_; }

 private:
  friend class Communicator;
  PendingOperation(std::string description, net::Deadline deadline)
      : description_(std::move(description)), deadline_(deadline) {}
  // The operation began to run and must finish by `deadline`.
  void Start(net::Deadline deadline);
  void Complete(Status status);

  const std::string description_;
  mutable std::mutex mutex_;
  std::condition_variable completed_;
  net::Deadline deadline_;
  bool started_ = false;
  bool done_ = false;
  Status status_;
};

class Communicator {
 public:
  // Agrees with every peer on the algorithms to use (a small all-reduce), then returns.
  static StatusOr<std::unique_ptr<Communicator>> Create(
      std::shared_ptr<net::ConnectionSet> connections, CommunicatorOptions options);
  // Fails operations that have not started; waits for the running one to finish or fail.
  ~Communicator();

  int rank() const { return connections_->rank(); }
  int size() const { return connections_->size(); }
  net::ConnectionSet& connections() { return *connections_; }
  // Whether large operations use the same-host algorithms (the same answer on every rank).
  bool uses_same_host_memory() const { return same_host_; }
  // Which ranks share a host, as every rank agreed at Create.
  const Topology& topology() const { return topology_; }
  // Whether all-reduce uses HierarchicalAllReduce (the same answer on every rank).
  bool uses_hierarchical_all_reduce() const { return hierarchical_; }
  // Whether large all-reduces go through shared memory (staged_all_reduce.h) on the same-host
  // path (the same answer on every rank).
  bool uses_shared_memory_staging() const { return staging_ != nullptr; }
  // Whether its steps within a host read the host's other ranks' memory (for buffers of at least
  // same_host_min_bytes) rather than use loopback TCP (the same answer on every rank).
  bool uses_same_host_memory_within_hosts() const { return same_host_within_hosts_; }

  // data[0, count) becomes op(data of every rank), on every rank.
  Status AllReduce(void* data, size_t count, DataType type, ReduceOp op);
  // data[0, count) of `root` is copied to every rank.
  Status Broadcast(void* data, size_t count, DataType type, int root);
  // output[r * count, (r+1) * count) receives input[0, count) of rank r, on every rank. `input`
  // may be output + rank() * count (in place); otherwise the two must not overlap.
  Status AllGather(const void* input, void* output, size_t count, DataType type);
  // output[0, count) receives op over every rank of input[rank() * count, (rank() + 1) * count):
  // `input` holds size() blocks of `count` elements, and each rank gets its block of their
  // reduction (kAverage divides by size()). Each rank sends and receives (n-1)/n of `input`, half
  // of an all-reduce's traffic. `input` is left as it is; the two must not overlap.
  Status ReduceScatter(const void* input, void* output, size_t count, DataType type, ReduceOp op);
  // Returns once every rank has called Barrier.
  Status Barrier();

  // The same, started now and finished on the Communicator's thread. Buffers must stay valid and
  // untouched until the PendingOperation reports completion.
  std::shared_ptr<PendingOperation> StartAllReduce(void* data, size_t count, DataType type,
                                                   ReduceOp op);
  std::shared_ptr<PendingOperation> StartBroadcast(void* data, size_t count, DataType type,
                                                   int root);
  std::shared_ptr<PendingOperation> StartAllGather(const void* input, void* output, size_t count,
                                                   DataType type);
  std::shared_ptr<PendingOperation> StartBarrier();

 private:
  using Body = std::function<Status(const OperationContext&)>;
  struct QueuedOperation {
    OperationContext context;
    Body body;
    std::shared_ptr<PendingOperation> pending;
  };

  Communicator(std::shared_ptr<net::ConnectionSet> connections, CommunicatorOptions options);

  // Numbers an operation and describes it ("all-reduce #12 (float32 x 1024, sum)").
  OperationContext NewContext(const char* kind, uint8_t kind_code, const std::string& details);
  // Runs at once on the calling thread when nothing is pending, else after what is pending.
  Status RunNow(const char* kind, uint8_t kind_code, const std::string& details, Body body);
  std::shared_ptr<PendingOperation> Start(const char* kind, uint8_t kind_code,
                                          const std::string& details, Body body);
  void WorkerLoop();

  Status AllReduceBody(const OperationContext& context, void* data, size_t count, DataType type,
                       ReduceOp op);
  Status BroadcastBody(const OperationContext& context, void* data, size_t count, DataType type,
                       int root);
  Status AllGatherBody(const OperationContext& context, const void* input, void* output,
                       size_t count, DataType type);
  Status ReduceScatterBody(const OperationContext& context, const void* input, void* output,
                           size_t count, DataType type, ReduceOp op);
  Status CheckRoot(int root) const;
  // Maps a staging area shared by every rank, when all agree they could (after same_host_ is
  // known); leaves staging_ empty otherwise.
  Status SetUpStaging();
  // Tells the peers through the staging area, if any, which operation this rank runs now.
  void Announce(const OperationContext& context, uint64_t bytes);

  const std::shared_ptr<net::ConnectionSet> connections_;
  const CommunicatorOptions options_;
  bool same_host_ = false;
  Topology topology_;
  bool hierarchical_ = false;
  bool same_host_within_hosts_ = false;
  RingPlan ring_plan_;  // every rank, host by host
  std::unique_ptr<StagingArea> staging_;
  uint32_t next_staging_chunk_ = 0;  // used under run_mutex_

  // submit_mutex_ orders operations: numbering and queueing happen under it. run_mutex_ is held
  // while an operation runs. Lock order: submit_mutex_, then run_mutex_.
  std::mutex submit_mutex_;
  std::condition_variable queue_changed_;
  std::deque<QueuedOperation> queue_;
  uint64_t next_sequence_ = 1;
  bool stopping_ = false;
  std::thread worker_;
  std::mutex run_mutex_;
  std::vector<uint8_t> scratch_;       // used under run_mutex_
  std::vector<uint8_t> peer_scratch_;  // used under run_mutex_
  // ReduceScatter's copy of its input, which the ring and the staged all-reduce reduce in place.
  std::vector<uint8_t> reduce_scatter_copy_;  // used under run_mutex_
};

}  // namespace cohort::collective
