// Strategy: how the workers of a training run talk to each other, in the terms the fit loop needs.
//
// The fit loop is written once against this interface; it does not know whether it runs alone
// (SingleProcessStrategy, when TF_CONFIG is absent) or as one of several MultiWorkerMirrored
// workers (mirrored_strategy.h, all-reduce over src/collective). Every method is collective: all
// workers call it in the same order with the same sizes, as TensorFlow requires of MWMS
// ("run the exact same program everywhere").
//
// A failure that a restart can cure (a peer died or stopped answering) comes back as Unavailable
// or DeadlineExceeded naming the peer; cohort-train turns those into its retryable exit code.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "base/status.h"
#include "collective/data_type.h"

namespace cohort::train {

// An asynchronous in-place sum that has been started and not yet waited for.
class PendingSum {
 public:
  virtual ~PendingSum() = default;
  // Blocks until the sum is complete in the buffer that was passed to StartSum, or the timeout
  // passes. Called at most once.
  virtual Status Wait(std::chrono::milliseconds timeout) = 0;
};

class Strategy {
 public:
  virtual ~Strategy() = default;

  // "single-process" or "multi-worker-mirrored", for logs.
  virtual std::string name() const = 0;
  // Workers in the all-reduce group (TF's num_replicas_in_sync with one device per worker).
  virtual int num_workers() const = 0;
  // This worker's position in the group; the chief is rank 0.
  virtual int rank() const = 0;
  // Whether this worker writes checkpoints, summaries and the saved model.
  virtual bool is_chief() const = 0;
  // This task's index within its TF_CONFIG type; names its temporary directory
  // (workertemp_<index>), as TensorFlow's distributed_file_utils does.
  virtual int task_index() const = 0;

  // Replaces `bytes` on every worker with the chief's `bytes` (other workers' contents are
  // ignored and may be empty).
  virtual Status Broadcast(std::string* bytes) = 0;

  // Replaces every element of `values` with its sum over all workers.
  virtual Status SumAcrossWorkers(std::vector<double>* values) = 0;

  // Starts summing data[0, count) over all workers in place and returns at once, so that the
  // caller can keep computing (gradient buckets during backward). `data` must stay valid and
  // untouched until the returned PendingSum's Wait returns. Sums are matched across workers by
  // the order in which they are started.
  virtual StatusOr<std::unique_ptr<PendingSum>> StartSum(float* data, size_t count) = 0;

  // Starts averaging data[0, count) over all workers in place (the sum divided by num_workers()),
  // with the same rules as StartSum. This default sums with StartSum and divides once Wait
  // returns; a strategy whose collective divides each part of the buffer while the rest is still
  // on the wire overrides it, so that averaging costs no pass of its own after communication.
  virtual StatusOr<std::unique_ptr<PendingSum>> StartAverage(float* data, size_t count);

  // The same for 16-bit floats (gradient_compression.h): `type` is collective::DataType::kBFloat16
  // or kFloat16, each element a uint16_t; the sum is rounded to that type.
  virtual StatusOr<std::unique_ptr<PendingSum>> StartSum16(uint16_t* data, size_t count,
                                                           collective::DataType type) = 0;

  // Waits until every worker has called Barrier.
  virtual Status Barrier() = 0;

  // Whether large collectives read the other workers' memory directly (every worker on this
  // host; see collective/same_host_algorithms.h) instead of going over TCP.
  virtual bool uses_same_host_memory() const { return false; }
};

// The strategy of a process training alone: every collective is the identity.
class SingleProcessStrategy : public Strategy {
 public:
  std::string name() const override { return "single-process"; }
  int num_workers() const override { return 1; }
  int rank() const override { return 0; }
  bool is_chief() const override { return true; }
  int task_index() const override { return 0; }
  Status Broadcast(std::string*) override { return Status::OK(); }
  Status SumAcrossWorkers(std::vector<double>*) override { return Status::OK(); }
  StatusOr<std::unique_ptr<PendingSum>> StartSum(float* data, size_t count) override;
  StatusOr<std::unique_ptr<PendingSum>> StartSum16(uint16_t* data, size_t count,
                                                   collective::DataType type) override;
  Status Barrier() override { return Status::OK(); }
};

}  // namespace cohort::train
