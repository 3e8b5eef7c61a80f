#include "cohort/strategy.h"

#include <cstdio>
#include <cstdlib>
#include <mutex>

#include "public_api/internal.h"
#include "train/mirrored_strategy.h"
#include "train/program/process.h"

namespace cohort {

// libtorch takes one thread count per process: the first strategy's sets it; a failure (the
// program ran parallel work before) leaves libtorch's own choice, with a warning.
void SetComputeThreadsOnce(int requested, const cluster::TfConfig& config) {
  static std::once_flag once;
  std::call_once(once, [&] {
    const int threads = train::program::ComputeThreads(requested, config);
    if (Status status = train::SetComputeThreads(threads); !status.ok()) {
      std::fprintf(stderr, "cohort: warning: %s\n", status.message().c_str());
    }
  });
}

MultiWorkerMirrored::MultiWorkerMirrored(const Cluster& cluster, const StrategyOptions& options)
    : cluster_(cluster), impl_(std::make_unique<Impl>()) {
  if (!cluster.tf_config().empty()) {
    impl_->config = ValueOrThrow(cluster::ParseTfConfig(cluster.tf_config()));
  }
  if (cluster.NumTasks("ps") > 0) {
    ThrowError(Status::InvalidArgument(
        "TF_CONFIG's cluster has ps tasks, so it asks for parameter-server training; "
        "MultiWorkerMirrored trains in a cluster of chief, master and worker tasks only"));
  }
  impl_->options = options;
  if (options.set_compute_threads) SetComputeThreadsOnce(options.compute_threads, impl_->config);
  const char* job_name = std::getenv("COHORT_JOB_NAME");
  train::WorkerConnectionOptions connection;
  connection.job_name = job_name != nullptr ? job_name : "";
  connection.startup_timeout = options.startup_timeout;
  connection.peer_timeout = options.peer_timeout;
  connection.same_host_path = options.same_host_path;
  connection.zero_skipping = options.zero_skipping;
  connection.on_peer_failure = train::program::WriteTerminationMessage;
  impl_->strategy = ValueOrThrow(train::MakeStrategy(impl_->config, connection));
  if (auto* mirrored = dynamic_cast<train::MultiWorkerMirroredStrategy*>(impl_->strategy.get())) {
    impl_->communicator = &mirrored->communicator();
  }
}

MultiWorkerMirrored::~MultiWorkerMirrored() = default;

bool MultiWorkerMirrored::uses_same_host_memory() const {
  return impl_->strategy->uses_same_host_memory();
}

std::string MultiWorkerMirrored::Describe() const {
  if (world_size() == 1) return "single process";
  return "worker " + std::to_string(rank()) + " of " + std::to_string(world_size()) + " (" +
         cluster_.task().ToString() + ", " +
         (is_chief() ? std::string("chief") : "chief is " + cluster_.chief().ToString()) +
         "); collectives over " + (uses_same_host_memory() ? "same-host memory and TCP" : "TCP");
}

}  // namespace cohort
