// GradientBuckets: averages gradients over all workers while backward is still running.
//
// The parameters are packed into buckets in reverse order, which is roughly the order in which
// backward produces their gradients (last layer first), as TensorFlow's group_by_size does after
// reversing: a bucket closes once it holds more than `bucket_bytes`, so it may exceed that by one
// tensor. A hook on each parameter copies its gradient into its bucket's flat buffer the moment
// autograd computes it; when a bucket is complete, its average across workers is started
// asynchronously (Strategy::StartAverage, which the collective divides while the rest of the
// bucket is still on the wire) and backward carries on with the earlier layers, so
// communication overlaps computation. Buckets are started strictly in bucket order, so that every
// worker issues the same sums in the same order even if hooks fire in a different order.
//
// With gradient compression (gradient_compression.h) the hook rounds each gradient straight into
// a 16-bit copy of its bucket, that copy is summed across workers (Strategy::StartSum16), and
// FinishStep widens the sum into the float32 bucket and averages it there: half the bytes on the
// wire.
//
// Usage per step:
//   buckets.BeginStep();          // clears .grad so autograd cannot write into a bucket
//   loss.backward();              // hooks fill buckets and start their sums
//   buckets.FinishStep(timeout);  // waits; each .grad becomes the average over workers
//   optimizer.step();
#pragma once

#include <torch/types.h>

#include <chrono>
#include <cstddef>
#include <memory>
#include <optional>
#include <vector>

#include "base/status.h"
#include "train/gradient_compression.h"
#include "train/strategy.h"

namespace cohort::train {

class GradientBuckets {
 public:
  // Registers the hooks. `parameters` are the model's trainable tensors, in the model's order;
  // `strategy` must outlive this object. The hooks stay until destruction.
  GradientBuckets(std::vector<torch::Tensor> parameters, Strategy* strategy, size_t bucket_bytes,
                  GradientCompression compression = GradientCompression::kNone);
  ~GradientBuckets();

  GradientBuckets(const GradientBuckets&) = delete;
  GradientBuckets& operator=(const GradientBuckets&) = delete;

  void BeginStep();

  // Starts the sums of buckets that backward left incomplete (a parameter without gradient counts
  // as zero), waits for all of them, and points each parameter's .grad at its averaged slice.
  // Errors: the first failure to start or finish a sum, e.g. Unavailable when a peer died.
  Status FinishStep(std::chrono::milliseconds timeout);

  size_t num_buckets() const { return buckets_.size(); }
  // The parameter indices of each bucket, in launch order (for tests and logs).
  std::vector<std::vector<size_t>> Layout() const;

 private:
  struct Bucket {
    std::vector<size_t> members;  // parameter indices
    torch::Tensor flat;           // the members' gradients, concatenated (averaged by FinishStep)
    torch::Tensor wire;           // with compression: the gradients rounded to 16 bits, summed
    size_t pending = 0;           // members whose gradient has not arrived this step
    std::unique_ptr<PendingSum> sum;
  };
  struct Slot {
    size_t bucket = 0;
    int64_t offset = 0;  // in elements, within the bucket's flat buffer
    bool arrived = false;
  };

  void OnGradient(size_t parameter, const torch::Tensor& gradient);
  // Starts every bucket from next_to_start_ on that is complete, in order.
  void StartReadyBuckets();
  void StartBucket(Bucket& bucket);

  std::vector<torch::Tensor> parameters_;
  Strategy* strategy_;
  std::optional<collective::DataType> wire_type_;  // none: float32 buckets are summed as they are
  std::vector<Bucket> buckets_;
  std::vector<Slot> slots_;
  std::vector<unsigned> hook_handles_;  // by parameter
  size_t next_to_start_ = 0;
  Status first_error_;
  // Set while a step is open; hooks outside a step (e.g. a test calling backward on its own)
  // are ignored.
  bool in_step_ = false;
};

}  // namespace cohort::train
