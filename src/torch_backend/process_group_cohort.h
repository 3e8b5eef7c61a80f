// ProcessGroupCohort: Cohort's collectives as a torch.distributed backend, a c10d::ProcessGroup
// (PyTorch 1.13's API, as ProcessGroupGloo is one) over Cohort's transport and Communicator.
//
//   import cohort_torch                       # registers the backend "cohort"
//   torch.distributed.init_process_group("cohort")   # env:// (MASTER_ADDR, RANK, WORLD_SIZE...)
//   torch.distributed.all_reduce(tensor)      # or DDP, which overlaps its buckets with backward
//
// Rendezvous goes through the c10d::Store torch hands every backend (store_rendezvous.h): each
// rank listens on a free port, publishes "address:port" in the store, reads everybody else's and
// connects with net::TcpTransport, which proves COHORT_JOB_SECRET when set and finds which ranks
// share a host; collective::Communicator then takes the same-host path (shared memory, reads of
// peers' memory) when every rank runs on this host, TCP otherwise.
//
// Every operation is checked on the calling thread (CPU tensors only, dense, a dtype and reduce
// operator this backend supports; anything else raises at once, naming the operation and what is
// wrong), then queued; one worker thread runs the queue in call order, so calls return at once
// with an asynchronous Work (and its Future, which DDP's communication hooks chain on) that
// completes when the operation ends. When a rank dies or hangs, every pending and later operation
// completes with an error naming the rank and why (killed: at once, from the closed connection;
// hung: after the peer timeout), and the group cannot be used again, as with Gloo or NCCL.
//
// What runs where:
//   - all_reduce of SUM, AVG (floating dtypes), MIN and MAX over float32/64, float16, bfloat16,
//     int32 and int64: Cohort's ring or same-host all-reduce (bit-identical on every rank);
//   - every other reduce operator Gloo offers for CPU (PRODUCT; BAND, BOR, BXOR on integer and
//     bool dtypes) and the other dtypes (int8, uint8, int16, bool): an all-gather, then each rank
//     reduces the gathered tensors in rank order with torch's own kernels (same result everywhere);
//   - broadcast, all_gather (and _allgather_base), barrier: the Communicator's;
//   - reduce_scatter (and _reduce_scatter_base): Cohort's reduce-scatter for the operators and
//     dtypes of its all-reduce (half an all-reduce's traffic), the all-reduce of a copy otherwise;
//   - reduce, gather, scatter, allreduce_coalesced: composed from those (an all-reduce then the
//     root keeps it; an all-gather; a broadcast of every block);
//   - send/recv, all_to_all, monitored_barrier, PREMUL_SUM: refused with an error naming them.
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#include <torch/csrc/distributed/c10d/Store.hpp>
#include <torch/csrc/distributed/c10d/Work.hpp>
#include <vector>

#include "base/status.h"
#include "collective/communicator.h"
#include "net/connection_set.h"

namespace cohort::torch_backend {

struct ProcessGroupCohortOptions {
  // How long one operation may take (torch's init_process_group timeout), and how long the
  // rendezvous waits for every rank.
  std::chrono::milliseconds timeout = std::chrono::minutes(30);
  // Silence after which a rank counts as hung (COHORT_PEER_TIMEOUT_S; a dead rank is found at
  // once from its closed connection).
  std::chrono::milliseconds peer_timeout = std::chrono::seconds(30);
  // The address the other ranks reach this one at (StoreRendezvous picks one when empty).
  std::string address;
  // Where to leave the peer report (cluster/peer_report.h: "peer rank:2 died (...)") when a
  // peer's failure stops the group, for job control to read once the process has exited: the
  // file COHORT_TERMINATION_MESSAGE_PATH names (Cohort's executors set it; a pod's
  // terminationMessagePath). Job control then restarts this replica as part of the failed one's
  // group restart, which counts once against backoffLimit. Empty: no report is left.
  std::string termination_message_path;
};

// The options from the environment: COHORT_PEER_TIMEOUT_S (seconds, > 0, at most a day),
// COHORT_TORCH_ADDRESS and COHORT_TERMINATION_MESSAGE_PATH, with `timeout` from torch. Fails
// naming a malformed variable.
StatusOr<ProcessGroupCohortOptions> OptionsFromEnvironment(std::chrono::milliseconds timeout);

// One operation's completion, as torch waits on it: Work::wait() and the Future (whose value is
// the operation's output tensors) both end with the operation's result.
//
// The Future is made only when someone asks for it (DDP and comm hooks do; a plain
// torch.distributed.all_reduce does not), because completing one means handing it to a
// CompletionPool thread: its callbacks may block. An operation nobody asked the Future of
// completes with one wake-up (the waiting caller's) instead of two, which on a loaded machine is
// most of a small operation's time.
class CohortWork : public c10d::Work {
 public:
  CohortWork(int rank, c10d::OpType type, std::vector<at::Tensor> outputs);

  // The operation's Future: made now when it is the first request, and then already completed
  // (on this thread: it has no callbacks yet) when the operation has ended.
  c10::intrusive_ptr<c10::ivalue::Future> getFuture() override;
  std::vector<at::Tensor> result() override { return outputs_; }

  // Completes the Work with `status` (an error becomes a std::runtime_error, which Python sees
  // as RuntimeError with the same message). Called once, by the worker. Returns whether the
  // Future had been asked for: then the caller must CompleteFuture, on a thread free to block.
  bool CompleteWork(const Status& status);
  // Completes the Future with the status CompleteWork got, running its callbacks on the calling
  // thread. Called once, by a CompletionPool thread, only when CompleteWork returned true: a
  // callback may start another operation and wait for it (PowerSGD does), which the worker must
  // be free to run.
  void CompleteFuture();

 private:
  static void Complete(c10::ivalue::Future& future, const std::vector<at::Tensor>& outputs,
                       const Status& status);

  const std::vector<at::Tensor> outputs_;
  std::mutex future_mutex_;
  c10::intrusive_ptr<c10::ivalue::Future> future_;  // null until asked for
  bool completed_ = false;                          // CompleteWork ran
  Status status_;                                   // its status
};

// Threads that complete Futures, so that their callbacks never run on (and block) the worker. A
// task goes to an idle thread, or to a new one (while there are fewer than kMaxThreads) when
// every idle thread already has a task waiting; a
// callback that waits for a later operation holds its thread, and the others go on.
class CompletionPool {
 public:
  static constexpr int kMaxThreads = 64;
  CompletionPool() = default;
  // Runs what is queued, then joins every thread.
  ~CompletionPool();
  void Run(std::function<void()> task);

 private:
  void ThreadLoop();

  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<std::function<void()>> tasks_;
  int idle_ = 0;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

class ProcessGroupCohort : public c10d::ProcessGroup {
 public:
  // Rendezvous through `store` (this rank is `rank` of `size`), then the Communicator's
  // agreement on algorithms. Fails naming what did not work (a rank that never came, a refused
  // handshake).
  static StatusOr<c10::intrusive_ptr<ProcessGroupCohort>> Create(
      const c10::intrusive_ptr<c10d::Store>& store, int rank, int size,
      ProcessGroupCohortOptions options);
  // Use Create; public for c10::make_intrusive.
  ProcessGroupCohort(int rank, int size, std::shared_ptr<net::ConnectionSet> connections,
                     std::unique_ptr<collective::Communicator> communicator);
  // Shutdown(), then the transport says goodbye to every peer.
  ~ProcessGroupCohort() override;

  // Runs what is queued, stops the worker and closes the connections (saying goodbye, so that
  // the peers tell an orderly exit from a crash). Idempotent; later operations raise.
  void Shutdown();

  const std::string getBackendName() const override { return "cohort"; }
  // Whether large operations use the same-host path (every rank on this host).
  bool uses_same_host_memory() const { return communicator_->uses_same_host_memory(); }

  c10::intrusive_ptr<c10d::Work> broadcast(std::vector<at::Tensor>& tensors,
                                           const c10d::BroadcastOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allreduce(std::vector<at::Tensor>& tensors,
                                           const c10d::AllreduceOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allreduce_coalesced(
      std::vector<at::Tensor>& tensors, const c10d::AllreduceCoalescedOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> reduce(std::vector<at::Tensor>& tensors,
                                        const c10d::ReduceOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allgather(std::vector<std::vector<at::Tensor>>& outputs,
                                           std::vector<at::Tensor>& inputs,
                                           const c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> _allgather_base(at::Tensor& output, at::Tensor& input,
                                                 const c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> gather(std::vector<std::vector<at::Tensor>>& outputs,
                                        std::vector<at::Tensor>& inputs,
                                        const c10d::GatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> scatter(std::vector<at::Tensor>& outputs,
                                         std::vector<std::vector<at::Tensor>>& inputs,
                                         const c10d::ScatterOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> reduce_scatter(std::vector<at::Tensor>& outputs,
                                                std::vector<std::vector<at::Tensor>>& inputs,
                                                const c10d::ReduceScatterOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> _reduce_scatter_base(
      at::Tensor& output, at::Tensor& input, const c10d::ReduceScatterOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> barrier(const c10d::BarrierOptions& opts) override;

 private:
  // An operation's body: runs on the worker thread, returns its result.
  using Body = std::function<Status()>;
  struct Queued {
    c10::intrusive_ptr<CohortWork> work;
    Body body;
  };

  // Queues `body` and returns its Work, which completes with `outputs` once the body ran.
  c10::intrusive_ptr<c10d::Work> Enqueue(c10d::OpType type, std::vector<at::Tensor> outputs,
                                         Body body);
  void WorkerLoop();

  // The all-reduce of one contiguous CPU tensor, in place: Cohort's all-reduce where it has the
  // operator and dtype, otherwise all-gather and a local reduction in rank order.
  Status AllReduceTensor(at::Tensor& tensor, c10d::ReduceOp::RedOpType op);
  // Reduces `input` (size() contiguous blocks of output's numel) over the ranks into `output`
  // (contiguous), this rank's block: Cohort's reduce-scatter where it has the operator and dtype,
  // otherwise AllReduceTensor of a copy, of which this rank keeps its block.
  Status ReduceScatterTensor(const at::Tensor& input, at::Tensor& output,
                             c10d::ReduceOp::RedOpType op);
  // A [size, numel] tensor like `input` over gather_scratch_, for the all-gathers whose outputs
  // are separate tensors: a buffer reused from one operation to the next costs no page faults
  // (a fresh one of 64 MiB costs 16,384, more than the copies themselves). Worker thread only;
  // valid until the next call.
  at::Tensor GatherScratch(const at::Tensor& input);
  // Broadcast and all-gather of raw bytes (any dtype), padding odd sizes.
  Status BroadcastBytes(void* data, size_t bytes, int root);
  Status AllGatherBytes(const void* input, void* output, size_t bytes);

  std::shared_ptr<net::ConnectionSet> connections_;
  std::unique_ptr<collective::Communicator> communicator_;
  // GatherScratch's buffer: as large as the largest all-gather with separate outputs so far.
  std::vector<uint8_t> gather_scratch_;

  std::mutex mutex_;
  std::condition_variable queue_changed_;
  std::deque<Queued> queue_;
  bool stopping_ = false;
  std::thread worker_;
  std::unique_ptr<CompletionPool> completions_ = std::make_unique<CompletionPool>();
  std::mutex shutdown_mutex_;
  bool shut_down_ = false;
};

}  // namespace cohort::torch_backend
