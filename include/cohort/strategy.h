// cohort/strategy.h: how the workers of a job train together.
//
// MultiWorkerMirrored is TensorFlow's MultiWorkerMirroredStrategy for any torch::nn::Module:
// synchronous data parallelism, every worker holding a whole copy of the model, gradients averaged
// over the workers while backward runs (a bucketed ring all-reduce over Cohort's authenticated
// connections), so the copies never drift apart. Connecting waits until every worker of the
// cluster has joined:
//
//   cohort::Cluster cluster = cohort::Cluster::FromEnvironment();
//   cohort::MultiWorkerMirrored strategy(cluster);     // alone: nothing to connect to
//   cohort::Fit(strategy, net, optimizer, train, test, loss, options);   // fit.h
//
// The collectives a hand-written loop needs are in collectives.h. Rules, as TensorFlow's: every
// worker runs the same program with the same model, and calls the collectives in the same order.
//
// When a peer dies or stops answering (for `peer_timeout`), every collective fails with a
// retryable cohort::Error naming it, and the task should exit (cohort::Main returns 138) to be
// restarted by the job's restart policy; the program then resumes from its backup
// (callbacks.h: BackupAndRestore). Cohort also leaves a line naming the failed peer for job
// control (COHORT_TERMINATION_MESSAGE_PATH), which stops a hung peer and counts the restart of
// the group once.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "cohort/cluster.h"

namespace cohort {

namespace internal {
class StrategyAccess;
}

// How Fit's workers keep their models together (StrategyOptions::synchronization).
enum class Synchronization {
  // Every step, the gradients' exact average over the workers (the default).
  kAllReduce,
  // Every step, a low-rank average of each weight matrix's gradient with error feedback
  // (PowerSGD, as PyTorch's powerSGD_hook): a worker sends (rows + cols) x rank floats per matrix
  // instead of rows x cols; biases and other vectors are averaged exactly.
  kPowerSgd,
  // Each worker steps alone; every sync_every_steps steps (and at each epoch's end) the workers
  // average the change of their parameters and apply it with an outer SGD step with Nesterov
  // momentum, as DiLoCo does; floating point buffers (batch norm's statistics) are averaged then.
  kLocalSgd,
};

struct PowerSgdOptions {
  // The rank of each matrix's approximation, 1 to 64.
  int rank = 2;
  // Global steps averaged exactly before compression starts.
  int64_t start_step = 10;
  // Whether each step's power iteration starts from the previous step's Q.
  bool warm_start = true;
};

struct LocalSgdOptions {
  // Local steps between synchronizations, at least 1.
  int64_t sync_every_steps = 8;
  // The outer step: learning rate in (0, 10], Nesterov momentum in [0, 1). 1 and 0 average the
  // parameters.
  double outer_learning_rate = 0.7;
  double outer_momentum = 0.9;
};

struct StrategyOptions {
  // How long to wait for every worker to join.
  std::chrono::milliseconds startup_timeout = std::chrono::minutes(5);
  // How long a silent peer is given before it is declared hung.
  std::chrono::milliseconds peer_timeout = std::chrono::seconds(30);
  // Whether workers on one host may move large collectives through each other's memory
  // (otherwise everything goes over TCP, as between hosts).
  bool same_host_path = true;
  // Whether all-reduce messages between hosts leave out the exact zeros of gradients that have
  // many (gradients behind a ReLU often do). Lossless: the results are the same bits either way.
  // The same on every task.
  bool zero_skipping = true;
  // Whether to set libtorch's compute threads to this task's share of the host's cores (the
  // training tasks on this host share them), as cohort-train does. 0 threads: that share; a
  // positive number: exactly that many.
  // How Fit keeps the workers' models together, for slow links (the two that compress are
  // approximations: measure their accuracy against kAllReduce). Fit refuses options out of range
  // (cohort::Error, kInvalidArgument). PowerSGD's errors and local SGD's anchor and momentum are
  // not in backups: a restore starts them afresh from the restored weights.
  Synchronization synchronization = Synchronization::kAllReduce;
  PowerSgdOptions power_sgd;
  LocalSgdOptions local_sgd;
  bool set_compute_threads = true;
  int compute_threads = 0;
};

class MultiWorkerMirrored {
 public:
  // Connects to the other training tasks of `cluster` (none when it trains alone). Throws
  // cohort::Error: kInvalidArgument for a ps or evaluator task, or a cluster with ps tasks
  // (parameter-server training); kDeadlineExceeded when the others do not all join within
  // startup_timeout.
  explicit MultiWorkerMirrored(const Cluster& cluster, const StrategyOptions& options = {});
  ~MultiWorkerMirrored();
  MultiWorkerMirrored(const MultiWorkerMirrored&) = delete;
  MultiWorkerMirrored& operator=(const MultiWorkerMirrored&) = delete;

  const Cluster& cluster() const { return cluster_; }
  int rank() const { return cluster_.rank(); }
  int world_size() const { return cluster_.world_size(); }
  bool is_chief() const { return cluster_.is_chief(); }
  // Whether large collectives go through same-host memory rather than TCP.
  bool uses_same_host_memory() const;
  // One line for a program's log: "worker 1 of 3 (worker:1, chief is worker:0); collectives over
  // TCP" or "single process".
  std::string Describe() const;

 private:
  friend class internal::StrategyAccess;
  struct Impl;
  Cluster cluster_;
  std::unique_ptr<Impl> impl_;
};

}  // namespace cohort
