// PowerSgdReducer: low-rank gradient compression with error feedback (Vogels, Karimireddy and
// Jaggi, "PowerSGD: Practical Low-Rank Gradient Compression for Distributed Optimization", 2019),
// the algorithm of PyTorch's powerSGD_hook, on Cohort's all-reduce.
//
// For each gradient that is a matrix (a weight of two or more dimensions, viewed as [shape[0],
// rest]) a worker adds the error it left out last step (M = G + E), computes P = M Q with a
// Q of `rank` columns that is the same on every worker, averages P over the workers, makes its
// columns orthonormal, computes Q = M^T P, averages Q, and applies P Q^T in place of the gradient;
// what the approximation left out (E = M - P Q^T) is added to the next step's gradient, so that
// nothing is lost, only delayed. Instead of rows x cols numbers a worker sends (rows + cols) x
// rank. Vectors (biases, batch-norm scales) and matrices that low rank would not shrink at least
// twice are averaged as they are, in the same all-reduce as P, as the paper does. With warm start,
// Q is last step's Q (one step of power iteration per training step); without, a fresh random Q
// each step, drawn from the same seed on every worker. Before `start_step` every gradient is
// averaged uncompressed (PyTorch's start_powerSGD_iter), which lets the fast early phase of
// training run at full precision.
//
// Every worker applies the same bits: the averaged P and Q are identical everywhere (the
// collective gives every rank the same result) and everything after them is computed from them
// alone, so the replicas never drift apart.
//
//   PowerSgdReducer reducer(model.parameters(), &strategy, {.rank = 2});
//   loss.backward();
//   reducer.Reduce(global_step, timeout);   // each .grad becomes the (compressed) average
//   optimizer.step();
#pragma once

#include <torch/types.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "base/status.h"
#include "train/strategy.h"

namespace cohort::train {

struct PowerSgdOptions {
  // Columns of P and Q: the rank of each matrix's approximation (1 to 64).
  int rank = 2;
  // Global steps before this one are averaged uncompressed; compression starts at it.
  int64_t start_step = 10;
  // Whether each step starts from the previous step's Q (else a fresh random Q each step).
  bool warm_start = true;
  // Seeds Q's random draws; the same on every worker.
  uint64_t seed = 42;
};

// InvalidArgument naming the option when `options` are out of range.
Status CheckPowerSgdOptions(const PowerSgdOptions& options);

class PowerSgdReducer {
 public:
  // `parameters` are the model's trainable tensors, in the same order on every worker; `strategy`
  // must outlive the reducer. The options must have passed CheckPowerSgdOptions.
  PowerSgdReducer(std::vector<torch::Tensor> parameters, Strategy* strategy,
                  PowerSgdOptions options);

  // Replaces every parameter's .grad (none counts as zero) with its average over the workers:
  // exact before options.start_step, the low-rank approximation with error feedback from it on.
  // Two all-reduces when compressing (P with the vectors, then Q), one before. Errors: the
  // collective's (Unavailable naming a dead peer), or DeadlineExceeded after `timeout`.
  Status Reduce(int64_t global_step, std::chrono::milliseconds timeout);

  // Forgets the errors and Q, as at the start (after the weights were replaced by a restore).
  void Reset();

  // Whether parameter `index` is compressed (a matrix that low rank shrinks at least twice).
  bool compresses(size_t index) const;
  // Floats each worker sends into the all-reduces per step: uncompressed, and compressed.
  size_t uncompressed_floats() const { return total_floats_; }
  size_t compressed_floats() const;

 private:
  struct Matrix {
    size_t parameter = 0;
    int64_t rows = 0;
    int64_t cols = 0;
    int64_t rank = 0;
    torch::Tensor error;  // [rows, cols], what earlier steps left out
    torch::Tensor q;      // [cols, rank], the last step's averaged Q
  };

  // The .grad of every parameter, created as zeros where backward left none.
  std::vector<torch::Tensor> Gradients();
  Status Average(torch::Tensor& flat, std::chrono::milliseconds timeout);
  Status ReduceUncompressed(std::chrono::milliseconds timeout);

  std::vector<torch::Tensor> parameters_;
  Strategy* strategy_;
  PowerSgdOptions options_;
  std::vector<Matrix> matrices_;
  std::vector<size_t> vectors_;  // parameters averaged as they are
  std::vector<int> matrix_of_;   // by parameter: its index in matrices_, or -1
  size_t total_floats_ = 0;
};

}  // namespace cohort::train
