#include "torch_backend/process_group_cohort.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <stdexcept>
#include <string_view>

#include "base/file.h"
#include "cluster/peer_report.h"
#include "torch_backend/store_rendezvous.h"

namespace cohort::torch_backend {
namespace {

using RedOp = c10d::ReduceOp::RedOpType;

constexpr double kMaxPeerTimeoutSeconds = 24 * 3600;
// No tensor of a real program comes near; it keeps size arithmetic far from overflowing.
constexpr size_t kMaxTensorBytes = size_t{1} << 48;

const char* OpName(RedOp op) {
  switch (op) {
    case c10d::ReduceOp::SUM:
      return "SUM";
    case c10d::ReduceOp::AVG:
      return "AVG";
    case c10d::ReduceOp::PRODUCT:
      return "PRODUCT";
    case c10d::ReduceOp::MIN:
      return "MIN";
    case c10d::ReduceOp::MAX:
      return "MAX";
    case c10d::ReduceOp::BAND:
      return "BAND";
    case c10d::ReduceOp::BOR:
      return "BOR";
    case c10d::ReduceOp::BXOR:
      return "BXOR";
    case c10d::ReduceOp::PREMUL_SUM:
      return "PREMUL_SUM";
    default:
      return "UNUSED";
  }
}

// The dtypes Cohort's own all-reduce reduces.
std::optional<collective::DataType> CohortType(at::ScalarType type) {
  switch (type) {
    case at::kFloat:
      return collective::DataType::kFloat32;
    case at::kDouble:
      return collective::DataType::kFloat64;
    case at::kBFloat16:
      return collective::DataType::kBFloat16;
    case at::kHalf:
      return collective::DataType::kFloat16;
    case at::kInt:
      return collective::DataType::kInt32;
    case at::kLong:
      return collective::DataType::kInt64;
    default:
      return std::nullopt;
  }
}

std::optional<collective::ReduceOp> CohortOp(RedOp op) {
  switch (op) {
    case c10d::ReduceOp::SUM:
      return collective::ReduceOp::kSum;
    case c10d::ReduceOp::AVG:
      return collective::ReduceOp::kAverage;
    case c10d::ReduceOp::MIN:
      return collective::ReduceOp::kMin;
    case c10d::ReduceOp::MAX:
      return collective::ReduceOp::kMax;
    default:
      return std::nullopt;
  }
}

bool SupportedDtype(at::ScalarType type) {
  switch (type) {
    case at::kFloat:
    case at::kDouble:
    case at::kBFloat16:
    case at::kHalf:
    case at::kChar:
    case at::kByte:
    case at::kShort:
    case at::kInt:
    case at::kLong:
    case at::kBool:
      return true;
    default:
      return false;
  }
}

// Raises (as torch's API wants) with the message of a failed check.
void ThrowIfError(const Status& status) { TORCH_CHECK(status.ok(), status.message()); }

// What every tensor handed to an operation must be: defined, on the CPU, dense, of a dtype this
// backend moves.
Status CheckTensor(const at::Tensor& tensor, const std::string& operation) {
  const std::string where = "cohort backend: " + operation + ": ";
  if (!tensor.defined()) return Status::InvalidArgument(where + "an undefined tensor");
  if (!tensor.device().is_cpu()) {
    return Status::InvalidArgument(
        where + "a tensor on " + tensor.device().str() +
        "; the cohort backend takes CPU tensors only (use the nccl backend for CUDA tensors)");
  }
  if (tensor.layout() != at::kStrided) {
    return Status::InvalidArgument(where + "a sparse tensor; the cohort backend takes dense ones");
  }
  if (!SupportedDtype(tensor.scalar_type())) {
    return Status::InvalidArgument(where + "dtype " +
                                   std::string(c10::toString(tensor.scalar_type())) +
                                   " is not supported (float32/64, float16, bfloat16, int8/16/"
                                   "32/64, uint8 and bool are)");
  }
  return Status::OK();
}

Status CheckOne(const std::vector<at::Tensor>& tensors, const std::string& operation) {
  if (tensors.size() != 1) {
    return Status::InvalidArgument("cohort backend: " + operation +
                                   " takes one tensor per process, got " +
                                   std::to_string(tensors.size()));
  }
  return CheckTensor(tensors[0], operation);
}

// Whether `op` is defined for `type` on this backend; an error naming both otherwise.
Status CheckReduceOp(RedOp op, at::ScalarType type, const std::string& operation) {
  const std::string where = "cohort backend: " + operation + ": ";
  switch (op) {
    case c10d::ReduceOp::SUM:
    case c10d::ReduceOp::PRODUCT:
    case c10d::ReduceOp::MIN:
    case c10d::ReduceOp::MAX:
      return Status::OK();
    case c10d::ReduceOp::AVG:
      if (at::isFloatingType(type)) return Status::OK();
      return Status::InvalidArgument(where + "ReduceOp.AVG needs a floating-point dtype, not " +
                                     c10::toString(type));
    case c10d::ReduceOp::BAND:
    case c10d::ReduceOp::BOR:
    case c10d::ReduceOp::BXOR:
      if (at::isIntegralType(type, /*includeBool=*/true)) return Status::OK();
      return Status::InvalidArgument(where + "ReduceOp." + OpName(op) +
                                     " needs an integer or bool dtype, not " + c10::toString(type));
    default:
      return Status::InvalidArgument(where + "ReduceOp." + OpName(op) +
                                     " is not supported by the cohort backend (SUM, AVG, PRODUCT, "
                                     "MIN, MAX, BAND, BOR and BXOR are)");
  }
}

// Runs `body` on a contiguous form of `tensor`, copying the result back when that was a copy.
Status InPlaceContiguous(const at::Tensor& tensor, const std::function<Status(at::Tensor&)>& body) {
  if (tensor.is_contiguous()) {
    at::Tensor same = tensor;
    return body(same);
  }
  at::Tensor dense = tensor.contiguous();
  COHORT_RETURN_IF_ERROR(body(dense));
  at::Tensor target = tensor;
  target.copy_(dense);
  return Status::OK();
}

size_t Bytes(const at::Tensor& tensor) { return tensor.numel() * tensor.element_size(); }

}  // namespace

StatusOr<ProcessGroupCohortOptions> OptionsFromEnvironment(std::chrono::milliseconds timeout) {
  ProcessGroupCohortOptions options;
  options.timeout = timeout;
  if (const char* text = std::getenv("COHORT_PEER_TIMEOUT_S"); text != nullptr && *text != '\0') {
    char* end = nullptr;
    const double seconds = std::strtod(text, &end);
    if (*end != '\0' || !(seconds > 0) || seconds > kMaxPeerTimeoutSeconds) {
      return Status::InvalidArgument(std::string("COHORT_PEER_TIMEOUT_S=\"") + text +
                                     "\": want a number of seconds above 0, at most 86400");
    }
    options.peer_timeout = std::chrono::milliseconds(static_cast<int64_t>(seconds * 1000));
  }
  if (const char* address = std::getenv("COHORT_TORCH_ADDRESS"); address != nullptr) {
    options.address = address;
  }
  if (const char* path = std::getenv(cluster::kTerminationMessagePathVariable); path != nullptr) {
    options.termination_message_path = path;
  }
  return options;
}

CohortWork::CohortWork(int rank, c10d::OpType type, std::vector<at::Tensor> outputs)
    : c10d::Work(rank, type), outputs_(std::move(outputs)) {}

c10::intrusive_ptr<c10::ivalue::Future> CohortWork::getFuture() {
  c10::intrusive_ptr<c10::ivalue::Future> future;
  bool complete_now = false;
  {
    std::lock_guard<std::mutex> lock(future_mutex_);
    if (future_) return future_;
    future_ =
        c10::make_intrusive<c10::ivalue::Future>(c10::ListType::create(c10::TensorType::get()));
    future = future_;
    complete_now = completed_;
  }
  // Made after the operation ended: nobody holds it yet, so it has no callbacks to run.
  if (complete_now) Complete(*future, outputs_, status_);
  return future;
}

bool CohortWork::CompleteWork(const Status& status) {
  bool future_asked_for = false;
  {
    std::lock_guard<std::mutex> lock(future_mutex_);
    completed_ = true;
    status_ = status;
    future_asked_for = static_cast<bool>(future_);
  }
  if (status.ok()) {
    finish();
  } else {
    finish(std::make_exception_ptr(std::runtime_error(status.message())));
  }
  return future_asked_for;
}

void CohortWork::CompleteFuture() {
  c10::intrusive_ptr<c10::ivalue::Future> future;
  {
    std::lock_guard<std::mutex> lock(future_mutex_);
    future = future_;
  }
  Complete(*future, outputs_, status_);
}

void CohortWork::Complete(c10::ivalue::Future& future, const std::vector<at::Tensor>& outputs,
                          const Status& status) {
  if (status.ok()) {
    future.markCompleted(c10::IValue(outputs));
  } else {
    future.setError(std::make_exception_ptr(std::runtime_error(status.message())));
  }
}

CompletionPool::~CompletionPool() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  changed_.notify_all();
  for (std::thread& thread : threads_) thread.join();
}

void CompletionPool::Run(std::function<void()> task) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    tasks_.push_back(std::move(task));
    if (idle_ < static_cast<int>(tasks_.size()) &&
        static_cast<int>(threads_.size()) < kMaxThreads) {
      threads_.emplace_back([this] { ThreadLoop(); });
      ++idle_;
    }
  }
  changed_.notify_one();
}

void CompletionPool::ThreadLoop() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (true) {
    changed_.wait(lock, [this] { return stopping_ || !tasks_.empty(); });
    if (tasks_.empty()) return;
    std::function<void()> task = std::move(tasks_.front());
    tasks_.pop_front();
    --idle_;
    lock.unlock();
    try {
      task();
    } catch (const std::exception& error) {
      std::fprintf(stderr, "cohort backend: a completion callback failed: %s\n", error.what());
    }
    lock.lock();
    ++idle_;
  }
}

StatusOr<c10::intrusive_ptr<ProcessGroupCohort>> ProcessGroupCohort::Create(
    const c10::intrusive_ptr<c10d::Store>& store, int rank, int size,
    ProcessGroupCohortOptions options) {
  auto address = ChooseAddress(options.address);
  if (!address.ok()) return address.status().WithContext("cohort backend");
  net::TransportOptions transport_options;
  transport_options.peer_timeout = options.peer_timeout;
  transport_options.heartbeat_interval =
      std::min<std::chrono::milliseconds>(std::chrono::seconds(1), options.peer_timeout / 4);
  if (!options.termination_message_path.empty()) {
    // Called once, before any operation sees the failure, so the report is out before Python can
    // raise and exit.
    transport_options.on_peer_failure = [path = options.termination_message_path](
                                            const std::string& peer_report) {
      const Status written = WriteFileInPlace(
          path, std::string_view(peer_report).substr(0, cluster::kMaxTerminationMessageBytes));
      if (!written.ok()) {
        std::fprintf(stderr, "cohort backend: warning: cannot leave the peer report in %s: %s\n",
                     path.c_str(), written.message().c_str());
      }
    };
  }
  auto transport = ConnectThroughStore(store, rank, size, *address, options.timeout,
                                       std::move(transport_options));
  if (!transport.ok()) return transport.status().WithContext("cohort backend: rendezvous");
  std::shared_ptr<net::ConnectionSet> connections = std::move(*transport);
  collective::CommunicatorOptions communicator_options;
  communicator_options.operation_timeout = options.timeout;
  auto communicator = collective::Communicator::Create(connections, communicator_options);
  if (!communicator.ok()) return communicator.status().WithContext("cohort backend");
  return c10::make_intrusive<ProcessGroupCohort>(rank, size, std::move(connections),
                                                 std::move(*communicator));
}

ProcessGroupCohort::ProcessGroupCohort(int rank, int size,
                                       std::shared_ptr<net::ConnectionSet> connections,
                                       std::unique_ptr<collective::Communicator> communicator)
    : c10d::ProcessGroup(rank, size),
      connections_(std::move(connections)),
      communicator_(std::move(communicator)) {
  init();
  worker_ = std::thread([this] { WorkerLoop(); });
}

ProcessGroupCohort::~ProcessGroupCohort() { Shutdown(); }

void ProcessGroupCohort::Shutdown() {
  std::lock_guard<std::mutex> shutdown_lock(shutdown_mutex_);
  if (shut_down_) return;
  shut_down_ = true;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  queue_changed_.notify_all();
  if (worker_.joinable()) worker_.join();
  completions_.reset();  // every Future completed
  communicator_.reset();
  connections_.reset();  // the transport says goodbye to every peer
}

c10::intrusive_ptr<c10d::Work> ProcessGroupCohort::Enqueue(c10d::OpType type,
                                                           std::vector<at::Tensor> outputs,
                                                           Body body) {
  auto work = c10::make_intrusive<CohortWork>(rank_, type, std::move(outputs));
  {
    std::lock_guard<std::mutex> lock(mutex_);
    TORCH_CHECK(!stopping_, "cohort backend: ", c10d::opTypeToString(type),
                " after the process group was shut down");
    queue_.push_back({work, std::move(body)});
  }
  queue_changed_.notify_one();
  return work;
}

void ProcessGroupCohort::WorkerLoop() {
  while (true) {
    Queued next;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      queue_changed_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;
      next = std::move(queue_.front());
      queue_.pop_front();
    }
    Status status = Status::OK();
    try {
      status = next.body();
    } catch (const std::exception& error) {
      status = Status::Internal(std::string("cohort backend: ") + error.what());
    }
    if (!status.ok() && status.message().rfind("cohort backend", 0) != 0) {
      status = status.WithContext("cohort backend");
    }
    if (next.work->CompleteWork(status)) {
      completions_->Run([work = next.work] { work->CompleteFuture(); });
    }
  }
}

Status ProcessGroupCohort::BroadcastBytes(void* data, size_t bytes, int root) {
  if (bytes == 0) return Status::OK();
  if (bytes > kMaxTensorBytes) {
    return Status::InvalidArgument("cohort backend: broadcast of " + std::to_string(bytes) +
                                   " bytes");
  }
  if (bytes % 2 == 0) {
    return communicator_->Broadcast(data, bytes / 2, collective::DataType::kBFloat16, root);
  }
  std::vector<uint8_t> padded(bytes + 1, 0);
  std::memcpy(padded.data(), data, bytes);
  COHORT_RETURN_IF_ERROR(communicator_->Broadcast(padded.data(), padded.size() / 2,
                                                  collective::DataType::kBFloat16, root));
  std::memcpy(data, padded.data(), bytes);
  return Status::OK();
}

Status ProcessGroupCohort::AllGatherBytes(const void* input, void* output, size_t bytes) {
  if (bytes == 0 || input == nullptr || output == nullptr) return Status::OK();
  if (bytes > kMaxTensorBytes) {
    return Status::InvalidArgument("cohort backend: all-gather of " + std::to_string(bytes) +
                                   " bytes per rank");
  }
  if (bytes % 2 == 0) {
    return communicator_->AllGather(input, output, bytes / 2, collective::DataType::kBFloat16);
  }
  const size_t block = bytes + 1;
  std::vector<uint8_t> padded_input(block, 0);
  std::memcpy(padded_input.data(), input, bytes);
  std::vector<uint8_t> padded_output(block * size_);
  COHORT_RETURN_IF_ERROR(communicator_->AllGather(padded_input.data(), padded_output.data(),
                                                  block / 2, collective::DataType::kBFloat16));
  for (int rank = 0; rank < size_; ++rank) {
    std::memcpy(static_cast<uint8_t*>(output) + rank * bytes, padded_output.data() + rank * block,
                bytes);
  }
  return Status::OK();
}

Status ProcessGroupCohort::AllReduceTensor(at::Tensor& tensor, RedOp op) {
  if (tensor.numel() == 0) return Status::OK();
  const auto type = CohortType(tensor.scalar_type());
  const auto cohort_op = CohortOp(op);
  if (type && cohort_op) {
    return communicator_->AllReduce(tensor.data_ptr(), tensor.numel(), *type, *cohort_op);
  }
  // Operators and dtypes Cohort's kernels lack: every rank gathers every input and reduces them
  // in rank order with torch's kernels, so that every rank computes the same result.
  at::Tensor flat = tensor.reshape({-1});
  at::Tensor gathered = at::empty({size_, tensor.numel()}, tensor.options());
  COHORT_RETURN_IF_ERROR(AllGatherBytes(flat.data_ptr(), gathered.data_ptr(), Bytes(tensor)));
  at::Tensor result = gathered[0].clone();
  for (int rank = 1; rank < size_; ++rank) {
    const at::Tensor other = gathered[rank];
    switch (op) {
      case c10d::ReduceOp::SUM:
        result = tensor.scalar_type() == at::kBool ? at::logical_or(result, other)
                                                   : at::add(result, other);
        break;
      case c10d::ReduceOp::PRODUCT:
        result = tensor.scalar_type() == at::kBool ? at::logical_and(result, other)
                                                   : at::mul(result, other);
        break;
      case c10d::ReduceOp::MIN:
        result = at::minimum(result, other);
        break;
      case c10d::ReduceOp::MAX:
        result = at::maximum(result, other);
        break;
      case c10d::ReduceOp::BAND:
        result = at::bitwise_and(result, other);
        break;
      case c10d::ReduceOp::BOR:
        result = at::bitwise_or(result, other);
        break;
      case c10d::ReduceOp::BXOR:
        result = at::bitwise_xor(result, other);
        break;
      default:
        return Status::InvalidArgument(std::string("cohort backend: ReduceOp.") + OpName(op) +
                                       " is not supported");
    }
  }
  flat.copy_(result.to(tensor.scalar_type()));
  return Status::OK();
}

at::Tensor ProcessGroupCohort::GatherScratch(const at::Tensor& input) {
  const size_t bytes = Bytes(input) * size_;
  if (gather_scratch_.size() < bytes) gather_scratch_.resize(bytes);
  return at::from_blob(gather_scratch_.data(), {size_, input.numel()}, input.options());
}

Status ProcessGroupCohort::ReduceScatterTensor(const at::Tensor& input, at::Tensor& output,
                                               RedOp op) {
  if (output.numel() == 0) return Status::OK();
  const auto type = CohortType(output.scalar_type());
  const auto cohort_op = CohortOp(op);
  if (type && cohort_op) {
    return communicator_->ReduceScatter(input.data_ptr(), output.data_ptr(), output.numel(), *type,
                                        *cohort_op);
  }
  // Operators and dtypes Cohort's kernels lack: the all-reduce of a copy (itself an all-gather
  // and a reduction in rank order), of which this rank keeps its block.
  at::Tensor reduced = input.reshape({-1}).clone();
  COHORT_RETURN_IF_ERROR(AllReduceTensor(reduced, op));
  output.view({-1}).copy_(reduced.narrow(0, rank_ * output.numel(), output.numel()));
  return Status::OK();
}

c10::intrusive_ptr<c10d::Work> ProcessGroupCohort::broadcast(std::vector<at::Tensor>& tensors,
                                                             const c10d::BroadcastOptions& opts) {
  ThrowIfError(CheckOne(tensors, "broadcast"));
  TORCH_CHECK(opts.rootRank >= 0 && opts.rootRank < size_, "cohort backend: broadcast: root rank ",
              opts.rootRank, " is not in a group of ", size_);
  TORCH_CHECK(opts.rootTensor == 0, "cohort backend: broadcast: root tensor ", opts.rootTensor,
              " of one");
  at::Tensor tensor = tensors[0];
  const int root = static_cast<int>(opts.rootRank);
  return Enqueue(c10d::OpType::BROADCAST, tensors, [this, tensor, root] {
    return InPlaceContiguous(tensor, [&](at::Tensor& dense) {
      return BroadcastBytes(dense.data_ptr(), Bytes(dense), root);
    });
  });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupCohort::allreduce(std::vector<at::Tensor>& tensors,
                                                             const c10d::AllreduceOptions& opts) {
  ThrowIfError(CheckOne(tensors, "allreduce"));
  const RedOp op = opts.reduceOp.op_;
  ThrowIfError(CheckReduceOp(op, tensors[0].scalar_type(), "allreduce"));
  at::Tensor tensor = tensors[0];
  return Enqueue(c10d::OpType::ALLREDUCE, tensors, [this, tensor, op] {
    return InPlaceContiguous(tensor, [&](at::Tensor& dense) { return AllReduceTensor(dense, op); });
  });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupCohort::allreduce_coalesced(
    std::vector<at::Tensor>& tensors, const c10d::AllreduceCoalescedOptions& opts) {
  TORCH_CHECK(!tensors.empty(), "cohort backend: allreduce_coalesced of no tensors");
  const RedOp op = opts.reduceOp.op_;
  for (const at::Tensor& tensor : tensors) {
    ThrowIfError(CheckTensor(tensor, "allreduce_coalesced"));
    TORCH_CHECK(tensor.scalar_type() == tensors[0].scalar_type(),
                "cohort backend: allreduce_coalesced: tensors of dtypes ", tensors[0].scalar_type(),
                " and ", tensor.scalar_type());
  }
  ThrowIfError(CheckReduceOp(op, tensors[0].scalar_type(), "allreduce_coalesced"));
  std::vector<at::Tensor> targets = tensors;
  return Enqueue(c10d::OpType::ALLREDUCE_COALESCED, tensors, [this, targets, op] {
    std::vector<at::Tensor> flats;
    for (const at::Tensor& tensor : targets) flats.push_back(tensor.reshape({-1}));
    at::Tensor flat = at::cat(flats);
    COHORT_RETURN_IF_ERROR(AllReduceTensor(flat, op));
    int64_t offset = 0;
    for (const at::Tensor& tensor : targets) {
      at::Tensor target = tensor;
      target.copy_(flat.narrow(0, offset, tensor.numel()).view(tensor.sizes()));
      offset += tensor.numel();
    }
    return Status::OK();
  });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupCohort::reduce(std::vector<at::Tensor>& tensors,
                                                          const c10d::ReduceOptions& opts) {
  ThrowIfError(CheckOne(tensors, "reduce"));
  const RedOp op = opts.reduceOp.op_;
  ThrowIfError(CheckReduceOp(op, tensors[0].scalar_type(), "reduce"));
  TORCH_CHECK(opts.rootRank >= 0 && opts.rootRank < size_, "cohort backend: reduce: root rank ",
              opts.rootRank, " is not in a group of ", size_);
  at::Tensor tensor = tensors[0];
  const bool is_root = opts.rootRank == rank_;
  return Enqueue(c10d::OpType::REDUCE, tensors, [this, tensor, op, is_root] {
    at::Tensor copy = tensor.clone(at::MemoryFormat::Contiguous);
    COHORT_RETURN_IF_ERROR(AllReduceTensor(copy, op));
    if (is_root) {
      at::Tensor target = tensor;
      target.copy_(copy);
    }
    return Status::OK();
  });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupCohort::allgather(
    std::vector<std::vector<at::Tensor>>& outputs, std::vector<at::Tensor>& inputs,
    const c10d::AllgatherOptions& opts) {
  ThrowIfError(CheckOne(inputs, "allgather"));
  TORCH_CHECK(outputs.size() == 1 && static_cast<int>(outputs[0].size()) == size_,
              "cohort backend: allgather wants one list of ", size_, " output tensors");
  const at::Tensor input = inputs[0].contiguous();
  for (const at::Tensor& output : outputs[0]) {
    ThrowIfError(CheckTensor(output, "allgather"));
    TORCH_CHECK(output.numel() == input.numel() && output.scalar_type() == input.scalar_type(),
                "cohort backend: allgather: an output tensor of ", output.numel(), " ",
                output.scalar_type(), " for an input of ", input.numel(), " ", input.scalar_type());
  }
  std::vector<at::Tensor> targets = outputs[0];
  return Enqueue(c10d::OpType::ALLGATHER, targets, [this, input, targets] {
    at::Tensor gathered = GatherScratch(input);
    COHORT_RETURN_IF_ERROR(AllGatherBytes(input.data_ptr(), gathered.data_ptr(), Bytes(input)));
    for (int rank = 0; rank < size_; ++rank) {
      at::Tensor target = targets[rank];
      target.copy_(gathered[rank].view(target.sizes()));
    }
    return Status::OK();
  });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupCohort::_allgather_base(
    at::Tensor& output, at::Tensor& input, const c10d::AllgatherOptions& opts) {
  ThrowIfError(CheckTensor(input, "_allgather_base"));
  ThrowIfError(CheckTensor(output, "_allgather_base"));
  TORCH_CHECK(
      output.numel() == input.numel() * size_ && output.scalar_type() == input.scalar_type(),
      "cohort backend: _allgather_base: an output of ", output.numel(), " ", output.scalar_type(),
      " for ", size_, " inputs of ", input.numel(), " ", input.scalar_type());
  const at::Tensor dense_input = input.contiguous();
  at::Tensor target = output;
  return Enqueue(c10d::OpType::_ALLGATHER_BASE, {output}, [this, dense_input, target] {
    return InPlaceContiguous(target, [&](at::Tensor& dense) {
      return AllGatherBytes(dense_input.data_ptr(), dense.data_ptr(), Bytes(dense_input));
    });
  });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupCohort::gather(
    std::vector<std::vector<at::Tensor>>& outputs, std::vector<at::Tensor>& inputs,
    const c10d::GatherOptions& opts) {
  ThrowIfError(CheckOne(inputs, "gather"));
  TORCH_CHECK(opts.rootRank >= 0 && opts.rootRank < size_, "cohort backend: gather: root rank ",
              opts.rootRank, " is not in a group of ", size_);
  const bool is_root = opts.rootRank == rank_;
  const at::Tensor input = inputs[0].contiguous();
  std::vector<at::Tensor> targets;
  if (is_root) {
    TORCH_CHECK(outputs.size() == 1 && static_cast<int>(outputs[0].size()) == size_,
                "cohort backend: gather wants one list of ", size_, " output tensors on the root");
    for (const at::Tensor& output : outputs[0]) {
      ThrowIfError(CheckTensor(output, "gather"));
      TORCH_CHECK(output.numel() == input.numel() && output.scalar_type() == input.scalar_type(),
                  "cohort backend: gather: an output tensor unlike the input");
    }
    targets = outputs[0];
  } else {
    TORCH_CHECK(outputs.empty(), "cohort backend: gather: output tensors on a rank not the root");
  }
  return Enqueue(c10d::OpType::GATHER, targets, [this, input, targets] {
    at::Tensor gathered = GatherScratch(input);
    COHORT_RETURN_IF_ERROR(AllGatherBytes(input.data_ptr(), gathered.data_ptr(), Bytes(input)));
    for (size_t rank = 0; rank < targets.size(); ++rank) {
      at::Tensor target = targets[rank];
      target.copy_(gathered[rank].view(target.sizes()));
    }
    return Status::OK();
  });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupCohort::scatter(
    std::vector<at::Tensor>& outputs, std::vector<std::vector<at::Tensor>>& inputs,
    const c10d::ScatterOptions& opts) {
  ThrowIfError(CheckOne(outputs, "scatter"));
  TORCH_CHECK(opts.rootRank >= 0 && opts.rootRank < size_, "cohort backend: scatter: root rank ",
              opts.rootRank, " is not in a group of ", size_);
  const bool is_root = opts.rootRank == rank_;
  const int root = static_cast<int>(opts.rootRank);
  at::Tensor output = outputs[0];
  at::Tensor blocks = at::empty({size_, output.numel()}, output.options());
  if (is_root) {
    TORCH_CHECK(inputs.size() == 1 && static_cast<int>(inputs[0].size()) == size_,
                "cohort backend: scatter wants one list of ", size_, " input tensors on the root");
    for (int rank = 0; rank < size_; ++rank) {
      const at::Tensor& input = inputs[0][rank];
      ThrowIfError(CheckTensor(input, "scatter"));
      TORCH_CHECK(input.numel() == output.numel() && input.scalar_type() == output.scalar_type(),
                  "cohort backend: scatter: an input tensor unlike the output");
      blocks[rank].copy_(input.reshape({-1}));
    }
  } else {
    TORCH_CHECK(inputs.empty(), "cohort backend: scatter: input tensors on a rank not the root");
  }
  return Enqueue(c10d::OpType::SCATTER, outputs, [this, output, blocks, root] {
    COHORT_RETURN_IF_ERROR(BroadcastBytes(blocks.data_ptr(), Bytes(blocks), root));
    at::Tensor target = output;
    target.copy_(blocks[rank_].view(output.sizes()));
    return Status::OK();
  });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupCohort::reduce_scatter(
    std::vector<at::Tensor>& outputs, std::vector<std::vector<at::Tensor>>& inputs,
    const c10d::ReduceScatterOptions& opts) {
  ThrowIfError(CheckOne(outputs, "reduce_scatter"));
  const RedOp op = opts.reduceOp.op_;
  const at::Tensor output = outputs[0];
  ThrowIfError(CheckReduceOp(op, output.scalar_type(), "reduce_scatter"));
  TORCH_CHECK(inputs.size() == 1 && static_cast<int>(inputs[0].size()) == size_,
              "cohort backend: reduce_scatter wants one list of ", size_, " input tensors");
  std::vector<at::Tensor> flats;
  for (const at::Tensor& input : inputs[0]) {
    ThrowIfError(CheckTensor(input, "reduce_scatter"));
    TORCH_CHECK(input.numel() == output.numel() && input.scalar_type() == output.scalar_type(),
                "cohort backend: reduce_scatter: an input tensor of ", input.numel(), " ",
                input.scalar_type(), " for an output of ", output.numel(), " ",
                output.scalar_type());
    flats.push_back(input.reshape({-1}));
  }
  at::Tensor all = at::cat(flats);  // one buffer of size_ blocks; the inputs stay as they are
  return Enqueue(c10d::OpType::REDUCE_SCATTER, outputs, [this, output, all, op] {
    return InPlaceContiguous(
        output, [&](at::Tensor& dense) { return ReduceScatterTensor(all, dense, op); });
  });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupCohort::_reduce_scatter_base(
    at::Tensor& output, at::Tensor& input, const c10d::ReduceScatterOptions& opts) {
  ThrowIfError(CheckTensor(input, "_reduce_scatter_base"));
  ThrowIfError(CheckTensor(output, "_reduce_scatter_base"));
  const RedOp op = opts.reduceOp.op_;
  ThrowIfError(CheckReduceOp(op, output.scalar_type(), "_reduce_scatter_base"));
  TORCH_CHECK(
      input.numel() == output.numel() * size_ && input.scalar_type() == output.scalar_type(),
      "cohort backend: _reduce_scatter_base: an input of ", input.numel(), " ", input.scalar_type(),
      " for ", size_, " outputs of ", output.numel(), " ", output.scalar_type());
  const at::Tensor dense_input = input.contiguous();
  at::Tensor target = output;
  return Enqueue(c10d::OpType::_REDUCE_SCATTER_BASE, {output}, [this, target, dense_input, op] {
    return InPlaceContiguous(
        target, [&](at::Tensor& dense) { return ReduceScatterTensor(dense_input, dense, op); });
  });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupCohort::barrier(const c10d::BarrierOptions& opts) {
  return Enqueue(c10d::OpType::BARRIER, {}, [this] { return communicator_->Barrier(); });
}

}  // namespace cohort::torch_backend
