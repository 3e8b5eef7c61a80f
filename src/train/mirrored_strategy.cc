#include "train/mirrored_strategy.h"

#include <cstring>

#include "net/tcp/tcp_transport.h"

namespace cohort::train {
namespace {

using collective::DataType;
using collective::ReduceOp;

// A started all-reduce; the Communicator keeps the buffer's pointer until it completes.
class CollectiveSum : public PendingSum {
 public:
  explicit CollectiveSum(std::shared_ptr<collective::PendingOperation> operation)
      : operation_(std::move(operation)) {}
  Status Wait(std::chrono::milliseconds timeout) override { return operation_->Wait(timeout); }

 private:
  std::shared_ptr<collective::PendingOperation> operation_;
};

}  // namespace

StatusOr<std::unique_ptr<MultiWorkerMirroredStrategy>> MultiWorkerMirroredStrategy::Connect(
    const cluster::TfConfig& config, const WorkerConnectionOptions& options) {
  net::TransportOptions transport_options;
  transport_options.job_name = options.job_name;
  transport_options.startup_timeout = options.startup_timeout;
  transport_options.peer_timeout = options.peer_timeout;
  transport_options.on_peer_failure = options.on_peer_failure;
  // TF_CONFIG's cluster becomes the TCP transport's list of members (net::GroupFromCluster); the
  // collectives see only the connection set.
  auto transport =
      net::TcpTransport::Connect(config.cluster, config.task, std::move(transport_options));
  if (!transport.ok()) return transport.status().WithContext("connecting to the other workers");
  collective::CommunicatorOptions communicator_options;
  communicator_options.same_host_memory = options.same_host_path;
  communicator_options.ring.skip_zero_words = options.zero_skipping;
  auto communicator = collective::Communicator::Create(
      std::shared_ptr<net::ConnectionSet>(std::move(transport).value()), communicator_options);
  if (!communicator.ok()) {
    return communicator.status().WithContext("setting up collectives");
  }
  return std::unique_ptr<MultiWorkerMirroredStrategy>(
      new MultiWorkerMirroredStrategy(std::move(communicator).value(), config.task.index));
}

Status MultiWorkerMirroredStrategy::Broadcast(std::string* bytes) {
  // The size first, so that receivers can make room; then the bytes, padded to whole int32
  // elements (a broadcast copies and never interprets them).
  int64_t size = is_chief() ? static_cast<int64_t>(bytes->size()) : 0;
  COHORT_RETURN_IF_ERROR(communicator_->Broadcast(&size, 1, DataType::kInt64, /*root=*/0));
  const size_t words = (static_cast<size_t>(size) + 3) / 4;
  std::vector<int32_t> buffer(words, 0);
  if (is_chief() && size > 0) std::memcpy(buffer.data(), bytes->data(), bytes->size());
  COHORT_RETURN_IF_ERROR(
      communicator_->Broadcast(buffer.data(), words, DataType::kInt32, /*root=*/0));
  if (!is_chief()) bytes->assign(reinterpret_cast<const char*>(buffer.data()), size);
  return Status::OK();
}

Status MultiWorkerMirroredStrategy::SumAcrossWorkers(std::vector<double>* values) {
  return communicator_->AllReduce(values->data(), values->size(), DataType::kFloat64,
                                  ReduceOp::kSum);
}

StatusOr<std::unique_ptr<PendingSum>> MultiWorkerMirroredStrategy::StartSum(float* data,
                                                                            size_t count) {
  return std::unique_ptr<PendingSum>(std::make_unique<CollectiveSum>(
      communicator_->StartAllReduce(data, count, DataType::kFloat32, ReduceOp::kSum)));
}

StatusOr<std::unique_ptr<PendingSum>> MultiWorkerMirroredStrategy::StartAverage(float* data,
                                                                                size_t count) {
  return std::unique_ptr<PendingSum>(std::make_unique<CollectiveSum>(
      communicator_->StartAllReduce(data, count, DataType::kFloat32, ReduceOp::kAverage)));
}

StatusOr<std::unique_ptr<PendingSum>> MultiWorkerMirroredStrategy::StartSum16(uint16_t* data,
                                                                              size_t count,
                                                                              DataType type) {
  if (type != DataType::kBFloat16 && type != DataType::kFloat16) {
    return Status::InvalidArgument(std::string("StartSum16 takes bfloat16 or float16, not ") +
                                   collective::Name(type));
  }
  return std::unique_ptr<PendingSum>(std::make_unique<CollectiveSum>(
      communicator_->StartAllReduce(data, count, type, ReduceOp::kSum)));
}

Status MultiWorkerMirroredStrategy::Barrier() { return communicator_->Barrier(); }

StatusOr<std::unique_ptr<Strategy>> MakeStrategy(const cluster::TfConfig& config,
                                                 const WorkerConnectionOptions& options) {
  if (config.sparse) {
    return Status::InvalidArgument(
        "TF_CONFIG has a sparseCluster, which only parameter-server training uses; "
        "MultiWorkerMirrored training needs the full \"cluster\"");
  }
  if (config.cluster.jobs.empty()) return std::unique_ptr<Strategy>(new SingleProcessStrategy());
  if (!cluster::WorkerRank(config.cluster, config.task).has_value()) {
    return Status::InvalidArgument("TF_CONFIG names this task " + config.task.ToString() +
                                   "; MultiWorkerMirrored training runs only as chief, master or "
                                   "worker (a ps or evaluator task has nothing to do here)");
  }
  if (cluster::NumWorkers(config.cluster) == 1) {
    return std::unique_ptr<Strategy>(new SingleProcessStrategy());
  }
  auto strategy = MultiWorkerMirroredStrategy::Connect(config, options);
  if (!strategy.ok()) return strategy.status();
  return std::unique_ptr<Strategy>(std::move(strategy).value());
}

}  // namespace cohort::train
