// MultiWorkerMirroredStrategy: synchronous data parallelism over src/collective.
//
// The tasks of TF_CONFIG that train (chief, master, worker; TensorFlow's worker_count) form one
// all-reduce group, ranked chief first, then workers by index (cluster::WorkerTasks). Rendezvous,
// authentication with COHORT_JOB_SECRET and failure detection are net::TcpTransport's; the
// collectives are collective::Communicator's, which give every rank bit-identical sums, so the
// replicas of the model never drift apart. When a peer dies, every pending and later call fails
// with Unavailable naming it: the group cannot be repaired in place, and the worker is expected to
// exit and be restarted (TensorFlow's model: "the failed worker and all other failed workers must
// be restarted").
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "base/status.h"
#include "cluster/tf_config.h"
#include "collective/communicator.h"
#include "train/strategy.h"

namespace cohort::train {

struct WorkerConnectionOptions {
  // The job name, when known (COHORT_JOB_NAME), keeps tasks of different jobs that share ports
  // from joining each other.
  std::string job_name;
  // How long to wait for every worker to join.
  std::chrono::milliseconds startup_timeout{std::chrono::minutes(5)};
  // How long a silent worker is given before it is declared dead and every pending collective
  // fails naming it (net::TransportOptions::peer_timeout; at least 3 heartbeat intervals).
  std::chrono::milliseconds peer_timeout{std::chrono::seconds(30)};
  // Whether the collectives may take the same-host path (process_vm_readv between workers on
  // this host, collective/same_host_algorithms.h). Off, every byte goes over TCP, as between
  // hosts, so that TCP training can be measured on one machine.
  bool same_host_path = true;
  // Whether all-reduce messages between hosts leave out exact zero words when there are many
  // (collective::RingTuning::skip_zero_words; lossless). The same on every worker.
  bool zero_skipping = true;
  // Told the peer report (cluster/peer_report.h) when a collective fails because a peer died or
  // hung (net::TransportOptions::on_peer_failure); a program passes it to job control with
  // program::WriteTerminationMessage. Unset: nothing is told.
  std::function<void(const std::string& peer_report)> on_peer_failure;
};

class MultiWorkerMirroredStrategy : public Strategy {
 public:
  // Connects to every other worker of `config.cluster` and returns the strategy for
  // `config.task`.
  static StatusOr<std::unique_ptr<MultiWorkerMirroredStrategy>> Connect(
      const cluster::TfConfig& config, const WorkerConnectionOptions& options);

  std::string name() const override { return "multi-worker-mirrored"; }
  int num_workers() const override { return communicator_->size(); }
  int rank() const override { return communicator_->rank(); }
  bool is_chief() const override { return communicator_->rank() == 0; }
  int task_index() const override { return task_index_; }
  Status Broadcast(std::string* bytes) override;
  Status SumAcrossWorkers(std::vector<double>* values) override;
  StatusOr<std::unique_ptr<PendingSum>> StartSum(float* data, size_t count) override;
  // The collective's own average (collective::ReduceOp::kAverage): each block is divided by the
  // rank that finished reducing it, while other blocks are still on the wire.
  StatusOr<std::unique_ptr<PendingSum>> StartAverage(float* data, size_t count) override;
  StatusOr<std::unique_ptr<PendingSum>> StartSum16(uint16_t* data, size_t count,
                                                   collective::DataType type) override;
  Status Barrier() override;
  bool uses_same_host_memory() const override { return communicator_->uses_same_host_memory(); }

  // The collectives themselves, for callers that reduce or share tensors of their own (the public
  // API's collectives, include/cohort/collectives.h). Calls on it are ordered with this
  // strategy's, as Communicator orders every call.
  collective::Communicator& communicator() { return *communicator_; }

 private:
  MultiWorkerMirroredStrategy(std::unique_ptr<collective::Communicator> communicator,
                              int task_index)
      : communicator_(std::move(communicator)), task_index_(task_index) {}

  std::unique_ptr<collective::Communicator> communicator_;
  int task_index_;
};

// The strategy TF_CONFIG asks for: SingleProcessStrategy when the cluster is empty (no TF_CONFIG)
// or has a single worker, MultiWorkerMirroredStrategy otherwise. A task that does not train in
// all-reduce style (ps, evaluator) is an InvalidArgument naming its type.
StatusOr<std::unique_ptr<Strategy>> MakeStrategy(const cluster::TfConfig& config,
                                                 const WorkerConnectionOptions& options);

}  // namespace cohort::train
