// LocalSgdAverager: local SGD with an outer optimizer, as DiLoCo does (Douillard et al.,
// "DiLoCo: Distributed Low-Communication Training of Language Models", 2023).
//
// Each worker takes `sync_every_steps` (H) optimizer steps on its own gradients alone, talking to
// nobody; then every worker averages the change of its parameters since the last
// synchronization (the outer gradient, anchor - theta) over the workers, and applies one step of
// SGD with Nesterov momentum to the anchor with it: v = momentum * v + delta;
// theta = anchor - outer_learning_rate * (delta + momentum * v), PyTorch's Nesterov SGD. The
// result is the new anchor, the same bits on every worker. With outer_learning_rate 1 and
// momentum 0 this is plain periodic parameter averaging (theta = the workers' mean). Floating
// point buffers (batch norm's running statistics) are averaged at each synchronization too. One
// all-reduce of the model's size every H steps instead of one every step; the inner optimizer's
// state (Adam's moments) stays each worker's own, as in DiLoCo.
//
// The all-reduce also carries how many of each worker's steps since the last synchronization
// were not applied because their loss or gradient was NaN or infinite, so that every worker
// learns the same total at the same point and decides the same (trainer.h's non-finite policy).
//
//   LocalSgdAverager averager(&module, &strategy, {.sync_every_steps = 8});
//   averager.Reset();            // after the chief's weights were broadcast
//   ... H local steps ...
//   averager.Synchronize(timeout, &skipped_steps);
#pragma once

#include <torch/nn/module.h>
#include <torch/types.h>

#include <chrono>
#include <cstdint>
#include <vector>

#include "base/status.h"
#include "train/strategy.h"

namespace cohort::train {

struct LocalSgdOptions {
  // H: local steps between synchronizations (at least 1; 1 averages every step).
  int64_t sync_every_steps = 8;
  // The outer optimizer: SGD with Nesterov momentum on the averaged parameter change. DiLoCo's
  // are 0.7 and 0.9; 1 and 0 average the parameters.
  double outer_learning_rate = 0.7;
  double outer_momentum = 0.9;
};

// InvalidArgument naming the option when `options` are out of range.
Status CheckLocalSgdOptions(const LocalSgdOptions& options);

class LocalSgdAverager {
 public:
  // `module` (its parameters and buffers, in the same order on every worker) and `strategy` must
  // outlive the averager. The options must have passed CheckLocalSgdOptions.
  LocalSgdAverager(torch::nn::Module* module, Strategy* strategy, LocalSgdOptions options);

  // Takes the current parameters as the anchor and zeroes the outer momentum: at the start, and
  // after the weights were replaced (a restore or a rollback, which every worker takes alike).
  void Reset();

  // The outer step described above. `local_skipped_steps` is this worker's count of steps it did
  // not apply since the last call; `*total_skipped_steps` becomes the sum over the workers.
  // Errors: the collective's (Unavailable naming a dead peer), or DeadlineExceeded after
  // `timeout`.
  Status Synchronize(std::chrono::milliseconds timeout, double local_skipped_steps,
                     double* total_skipped_steps);

  // Floats each worker sends per synchronization.
  size_t floats_per_synchronization() const;

 private:
  torch::nn::Module* module_;
  Strategy* strategy_;
  LocalSgdOptions options_;
  std::vector<torch::Tensor> parameters_;
  std::vector<torch::Tensor> buffers_;  // floating point ones only
  std::vector<torch::Tensor> anchor_;   // the parameters after the last synchronization
  std::vector<torch::Tensor> momentum_;
};

}  // namespace cohort::train
