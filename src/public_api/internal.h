// What the public API's implementation files (src/public_api/*.cc) share and users never see:
// turning an internal Status into the cohort::Error the API throws, and reaching the internals
// behind the public classes' opaque parts.
#pragma once

#include <torch/nn/module.h>

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "base/status.h"
#include "cluster/tf_config.h"
#include "cohort/callbacks.h"
#include "cohort/fit.h"
#include "cohort/status.h"
#include "cohort/strategy.h"
#include "collective/communicator.h"
#include "train/callback.h"
#include "train/strategy.h"

namespace cohort {

// Throws the cohort::Error for `status` (which must not be OK), with its code.
[[noreturn]] void ThrowError(const Status& status);

// Throws when `status` is not OK.
inline void ThrowIfError(const Status& status) {
  if (!status.ok()) ThrowError(status);
}

template <typename T>
T ValueOrThrow(StatusOr<T> value) {
  if (!value.ok()) ThrowError(value.status());
  return std::move(value).value();
}

struct MultiWorkerMirrored::Impl {
  // Buffers that a collective may still write into after an error (a failed step's gradient
  // buckets), kept until the collectives are gone: declared before `strategy`, they are destroyed
  // after it, and the Communicator's destructor waits for the operation that runs and fails the
  // queued ones.
  std::mutex kept_mutex;
  std::vector<std::shared_ptr<void>> kept;
  cluster::TfConfig config;
  // The options it was made with (Fit reads how to synchronize from them).
  StrategyOptions options;
  std::unique_ptr<train::Strategy> strategy;
  collective::Communicator* communicator = nullptr;  // null when training alone
};

namespace internal {

class StrategyAccess {
 public:
  static MultiWorkerMirrored::Impl& impl(MultiWorkerMirrored& strategy) { return *strategy.impl_; }
  static train::Strategy& strategy(MultiWorkerMirrored& strategy) {
    return *strategy.impl_->strategy;
  }
  // Keeps `object` until the strategy's collectives are gone.
  static void KeepUntilCollectivesEnd(MultiWorkerMirrored& strategy, std::shared_ptr<void> object) {
    std::lock_guard lock(strategy.impl_->kept_mutex);
    strategy.impl_->kept.push_back(std::move(object));
  }
};

class CallbackAccess {
 public:
  static train::Callback* callback(const Callback& callback);
  static const Callback::Impl& impl(const Callback& callback);
};

}  // namespace internal

struct Callback::Impl {
  std::unique_ptr<train::Callback> callback;
  // Set for BackupAndRestore, which Fit also asks about a completed run and tells the end of one.
  std::string backup_dir;
  int64_t backup_every_steps = 0;
  // What parameter-server training (parameter_server.h), which runs its own loop, needs to know
  // to do each callback's work itself.
  std::string checkpoint_dir;  // ModelCheckpoint
  bool save_best_only = false;
  std::string log_dir;  // TensorBoard
  int64_t update_every_steps = 0;
  bool progress = false;
};

// The task at `rank` of `cluster`, "worker:1".
std::string TaskAtRank(const Cluster& cluster, int rank);

// Checks that every worker's module has the parameters and buffers the chief's has (names,
// types, shapes); a difference is an InvalidArgument on every worker naming it. Collective.
Status CheckSameModel(MultiWorkerMirrored& strategy, torch::nn::Module& module);

// Checks that every worker's source yields the same number of samples (so batches); `what`
// names the data ("the training data"). Collective.
Status CheckSameBatchCount(MultiWorkerMirrored& strategy, int64_t samples, int64_t per_worker_batch,
                           const std::string& what);

// Sets libtorch's compute threads for this task (0: its share of the host's cores), once per
// process: the first strategy's call decides.
void SetComputeThreadsOnce(int requested, const cluster::TfConfig& config);

// InvalidArgument when `module` has no parameters.
Status CheckHasParameters(torch::nn::Module& module);

// Throws kInvalidArgument for what every Fit refuses: no module or forward, no loss, a batch
// smaller than 1.
void CheckFitArguments(const Model& model, const LossFunction& loss, const FitOptions& options);

}  // namespace cohort
