// cohort/collectives.h: the low level, for a training loop of your own.
//
// What Fit (fit.h) does for you, in pieces: average gradients over the workers during backward,
// start every worker from the chief's state, wait for each other, and reduce or share tensors.
//
//   cohort::MultiWorkerMirrored strategy(cohort::Cluster::FromEnvironment());
//   Net net;
//   torch::optim::SGD optimizer(net->parameters(), 0.01);
//   cohort::BroadcastFromChief(strategy, *net);        // parameters and buffers
//   cohort::BroadcastFromChief(strategy, optimizer);   // e.g. after the chief loaded a checkpoint
//   cohort::GradientAllReduce all_reduce(strategy, *net);
//   for (...) {
//     all_reduce.BeginStep();                 // clears the gradients
//     loss_fn(net->forward(x), y).backward(); // buckets of gradients are summed as they fill
//     all_reduce.FinishStep();                // every .grad is now the mean over the workers
//     optimizer.step();
//   }
//   if (strategy.is_chief()) cohort::SaveModule(*net, "/tmp/job/model.pt");
//   cohort::Barrier(strategy);
//
// Every function here is collective: every worker calls it, in the same order, with tensors of
// the same shapes and types (the chief's values win where one is broadcast). Alone (no TF_CONFIG)
// each is the identity. Errors throw cohort::Error; a dead or hung peer's is retryable.
#pragma once

#include <torch/nn/module.h>
#include <torch/optim/optimizer.h>
#include <torch/types.h>

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "cohort/strategy.h"

namespace cohort {

// Gradient averaging during backward, bucketed like PyTorch DDP's reducer: the parameters are
// packed into buckets of about `bucket_bytes` in reverse order (roughly the order backward
// produces their gradients); a hook on each parameter copies its gradient into its bucket the
// moment autograd computes it, and a full bucket's all-reduce starts at once while backward goes
// on with earlier layers. A parameter that got no gradient counts as zero.
class GradientAllReduce {
 public:
  // Registers the hooks on `module`'s parameters (those that require grad). Throws
  // cohort::Error when the module has no parameters. `strategy` and `module` must outlive it.
  GradientAllReduce(MultiWorkerMirrored& strategy, torch::nn::Module& module,
                    size_t bucket_bytes = size_t{4} << 20);
  ~GradientAllReduce();
  GradientAllReduce(const GradientAllReduce&) = delete;
  GradientAllReduce& operator=(const GradientAllReduce&) = delete;

  // Before backward: clears every parameter's .grad (autograd must not accumulate into a bucket).
  void BeginStep();
  // After backward: starts what backward left, waits (at most `timeout`) and points every .grad
  // at the mean over the workers.
  void FinishStep(std::chrono::milliseconds timeout = std::chrono::minutes(2));
  // The number of buckets.
  size_t num_buckets() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Copies the chief's parameters and buffers (batch norm's running statistics among them) into
// `module` on every worker. First checks that every worker's module has the same parameters and
// buffers (names, shapes, types): a difference throws cohort::Error (kInvalidArgument) on every
// worker, naming the first parameter that differs and the workers that differ. A module without
// parameters is an error too.
void BroadcastFromChief(MultiWorkerMirrored& strategy, torch::nn::Module& module);

// Copies the chief's optimizer state (Adam's moments and step counts, momentum buffers...) and
// hyper-parameters into `optimizer` on every worker.
void BroadcastFromChief(MultiWorkerMirrored& strategy, torch::optim::Optimizer& optimizer);

// Returns once every worker has called it.
void Barrier(MultiWorkerMirrored& strategy);

enum class ReduceOp { kSum, kAverage, kMin, kMax };

// In place: `tensor` becomes op(tensor of every worker) on every worker. A contiguous CPU tensor
// of float32, float64, int32 or int64.
void AllReduce(MultiWorkerMirrored& strategy, torch::Tensor& tensor, ReduceOp op = ReduceOp::kSum);

// In place: `tensor` becomes the `root` worker's (rank) on every worker.
void Broadcast(MultiWorkerMirrored& strategy, torch::Tensor& tensor, int root = 0);

// Every worker's `tensor` stacked along a new first dimension, in rank order: [world_size, ...].
torch::Tensor AllGather(MultiWorkerMirrored& strategy, const torch::Tensor& tensor);

// Writes `module`'s parameters and buffers to `path` (libtorch's format, torch::load reads it)
// atomically: a reader sees the old file or the new one, never part of one, and a full disk is a
// cohort::Error (kIOError) naming the path. Their SHA-256 goes beside them, in `<path>.sha256` as
// sha256sum writes it (`sha256sum -c` checks it), for LoadModule to verify. Call it on the chief
// only.
void SaveModule(torch::nn::Module& module, const std::string& path);

// Loads what SaveModule wrote into `module`. Throws cohort::Error naming the path. The bytes are
// first verified against `<path>.sha256` (SaveModule's) or, for the weights of a saved model (a
// manifest.json beside `path` names the file, as Fit and the ParameterServer strategy write it),
// the manifest's SHA-256: flipped or missing bytes throw (kFailedPrecondition, naming the file,
// the expected and the found checksum) and nothing is loaded. A file with neither record (written
// by torch::save, say) is loaded as it is.
void LoadModule(torch::nn::Module& module, const std::string& path);

}  // namespace cohort
