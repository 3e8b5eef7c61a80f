#include "collective/communicator.h"

#include <algorithm>
#include <cstring>
#include <limits>

#include "collective/chain_broadcast.h"
#include "collective/dissemination_barrier.h"
#include "collective/hierarchical_all_reduce.h"
#include "collective/ring_all_gather.h"
#include "collective/same_host_algorithms.h"
#include "collective/staged_all_reduce.h"

namespace cohort::collective {
namespace {

enum OperationKind : uint8_t {
  kAllReduceKind = 1,
  kBroadcastKind = 2,
  kAllGatherKind = 3,
  kBarrierKind = 4,
  kReduceScatterKind = 5,
};

// How long Wait() gives an operation beyond its own deadline before reporting it as lost.
constexpr std::chrono::seconds kCompletionMargin(10);

std::string Details(size_t count, DataType type) {
  return std::string(Name(type)) + " x " + std::to_string(count);
}

bool BytesOverflow(size_t count, DataType type) {
  return count > std::numeric_limits<size_t>::max() / SizeOf(type);
}

}  // namespace

// ---- PendingOperation ----

void PendingOperation::Complete(Status status) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    status_ = std::move(status);
    done_ = true;
  }
  completed_.notify_all();
}

bool PendingOperation::done() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return done_;
}

Status PendingOperation::Wait(std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mutex_);
  if (!completed_.wait_for(lock, timeout, [&] { return done_; })) {
    return Status::DeadlineExceeded(description_ + " is still running after waiting " +
                                    net::FormatSeconds(timeout) + " for it");
  }
  return status_;
}

Status PendingOperation::Wait() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (!done_) {
    // The operation enforces its own deadline once it runs; an operation still queued waits for
    // the one ahead of it, which enforces its own.
    completed_.wait_for(lock, std::chrono::seconds(1));
    if (!done_ && started_ && !deadline_.IsNever() &&
        net::SteadyClock::now() > deadline_.time() + kCompletionMargin) {
      return Status::DeadlineExceeded(description_ +
                                      " did not report completion within its deadline");
    }
  }
  return status_;
}

void PendingOperation::Start(net::Deadline deadline) {
  std::lock_guard<std::mutex> lock(mutex_);
  started_ = true;
  deadline_ = deadline;
}

// ---- Communicator ----

StatusOr<std::unique_ptr<Communicator>> Communicator::Create(
    std::shared_ptr<net::ConnectionSet> connections, CommunicatorOptions options) {
  if (connections == nullptr) return Status::InvalidArgument("communicator needs a connection set");
  if (options.ring.segment_bytes == 0 || options.ring.receive_slots < 1) {
    return Status::InvalidArgument("ring segments must be at least one byte and one slot");
  }
  if (options.operation_timeout <= std::chrono::milliseconds::zero()) {
    return Status::InvalidArgument("operation timeout must be positive");
  }
  std::unique_ptr<Communicator> communicator(
      new Communicator(std::move(connections), std::move(options)));
  // Every rank must pick the same algorithms. The same-host path is used only if every rank can
  // read every other rank's memory, and the topology only if every rank sees the same one: one
  // all-reduce (min) over the set's messages of each rank's answer, its host labels and their
  // negations (so that the minimum of the negations gives the maximum).
  Communicator& self = *communicator;
  const int size = self.size();
  Topology topology;
  if (!self.options_.host_labels.empty()) {
    if (static_cast<int>(self.options_.host_labels.size()) != size) {
      return Status::InvalidArgument("host_labels names " +
                                     std::to_string(self.options_.host_labels.size()) +
                                     " ranks, but the group has " + std::to_string(size));
    }
    topology = Topology::FromHostLabels(self.options_.host_labels);
  } else {
    std::vector<std::string> identities;
    for (int rank = 0; rank < size; ++rank) {
      identities.push_back(self.connections_->HostIdentity(rank));
    }
    topology = Topology::FromHostIdentities(identities);
  }
  std::vector<int32_t> agreement(2 + 2 * static_cast<size_t>(size));
  const net::SameHostMemory* memory =
      self.options_.same_host_memory ? self.connections_->same_host_memory() : nullptr;
  agreement[0] = memory != nullptr && memory->CanReadMemoryOfAllPeers() ? 1 : 0;
  bool reads_own_host = memory != nullptr;
  for (int rank : topology.RanksOn(topology.HostOf(self.rank()))) {
    reads_own_host = reads_own_host && (rank == self.rank() || memory->CanReadMemoryOf(rank));
  }
  agreement[1] = reads_own_host ? 1 : 0;
  for (int rank = 0; rank < size; ++rank) {
    agreement[2 + rank] = topology.HostOf(rank);
    agreement[2 + size + rank] = -topology.HostOf(rank);
  }
  COHORT_RETURN_IF_ERROR(
      self.AllReduce(agreement.data(), agreement.size(), DataType::kInt32, ReduceOp::kMin));
  bool agreed = true;
  for (int rank = 0; rank < size; ++rank) {
    agreed = agreed && agreement[2 + rank] == -agreement[2 + size + rank];
  }
  self.topology_ = agreed ? topology : Topology::Flat(size);
  self.same_host_ = agreement[0] == 1 && self.topology_.hosts() == 1;
  self.hierarchical_ =
      self.options_.hierarchical_all_reduce && self.topology_.IsUniformWithSeveralRanksPerHost();
  self.same_host_within_hosts_ = self.hierarchical_ && agreement[1] == 1;
  self.ring_plan_.members = self.topology_.RingOrder();
  const std::vector<int>& ring = self.ring_plan_.members;
  const auto position = std::find(ring.begin(), ring.end(), self.rank()) - ring.begin();
  const int right = ring[(position + 1) % static_cast<long>(ring.size())];
  self.ring_plan_.right_on_another_host =
      self.topology_.HostOf(right) != self.topology_.HostOf(self.rank());
  if (self.same_host_ && self.options_.same_host_staging_bytes > 0) {
    COHORT_RETURN_IF_ERROR(self.SetUpStaging());
  }
  return communicator;
}

Status Communicator::SetUpStaging() {
  // Rank 0 creates the area; the others open it through rank 0's descriptor; then all agree (a
  // minimum of "mapped it") before anyone uses it, and rank 0 closes its descriptor.
  const size_t slot_bytes = options_.same_host_staging_bytes;
  // Every rank agreed that it may read every other's memory, so every rank has the capability.
  net::SameHostMemory& memory = *connections_->same_host_memory();
  std::unique_ptr<StagingArea> area;
  net::SharedMemory::Invitation invitation = {-1, -1};  // from rank 0
  if (rank() == 0) {
    auto created = StagingArea::Create(memory, size(), slot_bytes);
    if (created.ok()) {
      area = std::move(*created);
      invitation = area->invitation();
    }
  }
  COHORT_RETURN_IF_ERROR(Broadcast(invitation.data(), invitation.size(), DataType::kInt64, 0));
  if (rank() != 0 && invitation[1] >= 0) {
    auto opened = StagingArea::Open(memory, invitation, size(), slot_bytes);
    if (opened.ok()) area = std::move(*opened);
  }
  int32_t mapped = area != nullptr ? 1 : 0;
  COHORT_RETURN_IF_ERROR(AllReduce(&mapped, 1, DataType::kInt32, ReduceOp::kMin));
  if (area != nullptr) area->Seal();
  if (mapped == 1) staging_ = std::move(area);
  return Status::OK();
}

void Communicator::Announce(const OperationContext& context, uint64_t bytes) {
  if (staging_ != nullptr) AnnounceOperation(*staging_, rank(), context.tag, bytes);
}

Communicator::Communicator(std::shared_ptr<net::ConnectionSet> connections,
                           CommunicatorOptions options)
    : connections_(std::move(connections)),
      options_(std::move(options)),
      topology_(Topology::Flat(connections_->size())) {}

Communicator::~Communicator() {
  std::deque<QueuedOperation> abandoned;
  {
    std::lock_guard<std::mutex> lock(submit_mutex_);
    stopping_ = true;
    abandoned.swap(queue_);
  }
  queue_changed_.notify_all();
  for (QueuedOperation& operation : abandoned) {
    operation.pending->Complete(Status::FailedPrecondition(
        operation.context.description + " never ran: its communicator was destroyed"));
  }
  if (worker_.joinable()) worker_.join();
}

OperationContext Communicator::NewContext(const char* kind, uint8_t kind_code,
                                          const std::string& details) {
  const uint64_t sequence = next_sequence_++;
  OperationContext context;
  context.connections = connections_.get();
  context.tag = (sequence << 8) | kind_code;
  context.description = std::string(kind) + " #" + std::to_string(sequence);
  if (!details.empty()) context.description += " (" + details + ")";
  return context;
}

Status Communicator::RunNow(const char* kind, uint8_t kind_code, const std::string& details,
                            Body body) {
  std::unique_lock<std::mutex> submit(submit_mutex_);
  if (stopping_) return Status::FailedPrecondition("communicator is shutting down");
  OperationContext context = NewContext(kind, kind_code, details);
  if (queue_.empty()) {
    // Taking run_mutex_ before letting go of submit_mutex_ keeps operations in number order: a
    // running started operation finishes first, and none queued later can overtake this one.
    std::unique_lock<std::mutex> run(run_mutex_);
    submit.unlock();
    context.deadline = net::Deadline::After(options_.operation_timeout);
    return body(context);
  }
  auto pending = std::shared_ptr<PendingOperation>(
      new PendingOperation(context.description, net::Deadline::Never()));
  queue_.push_back({std::move(context), std::move(body), pending});
  submit.unlock();
  queue_changed_.notify_all();
  return pending->Wait();
}

std::shared_ptr<PendingOperation> Communicator::Start(const char* kind, uint8_t kind_code,
                                                      const std::string& details, Body body) {
  std::unique_lock<std::mutex> submit(submit_mutex_);
  OperationContext context = NewContext(kind, kind_code, details);
  auto pending = std::shared_ptr<PendingOperation>(
      new PendingOperation(context.description, net::Deadline::Never()));
  if (stopping_) {
    pending->Complete(Status::FailedPrecondition("communicator is shutting down"));
    return pending;
  }
  queue_.push_back({std::move(context), std::move(body), pending});
  if (!worker_.joinable()) worker_ = std::thread([this] { WorkerLoop(); });
  submit.unlock();
  queue_changed_.notify_all();
  return pending;
}

void Communicator::WorkerLoop() {
  while (true) {
    std::unique_lock<std::mutex> submit(submit_mutex_);
    // Idle waits are bounded too; the loop simply looks again.
    queue_changed_.wait_for(submit, std::chrono::seconds(1),
                            [&] { return stopping_ || !queue_.empty(); });
    if (queue_.empty()) {
      if (stopping_) return;
      continue;
    }
    QueuedOperation operation = std::move(queue_.front());
    queue_.pop_front();
    std::unique_lock<std::mutex> run(run_mutex_);
    submit.unlock();
    operation.context.deadline = net::Deadline::After(options_.operation_timeout);
    operation.pending->Start(operation.context.deadline);
    Status status = operation.body(operation.context);
    run.unlock();
    operation.pending->Complete(std::move(status));
  }
}

Status Communicator::CheckRoot(int root) const {
  if (root < 0 || root >= size()) {
    return Status::InvalidArgument("broadcast root " + std::to_string(root) +
                                   " is not a rank of this group of " + std::to_string(size()));
  }
  return Status::OK();
}

Status Communicator::AllReduceBody(const OperationContext& context, void* data, size_t count,
                                   DataType type, ReduceOp op) {
  if (count == 0 || size() == 1) return Status::OK();
  if (data == nullptr || BytesOverflow(count, type)) {
    return Status::InvalidArgument(context.description + ": no buffer, or a size that overflows");
  }
  Announce(context, count * SizeOf(type));
  if (staging_ != nullptr && count * SizeOf(type) >= options_.same_host_staging_min_bytes) {
    return StagedAllReduce(context, *staging_, &next_staging_chunk_, data, count, type, op).Run();
  }
  if (same_host_ && count * SizeOf(type) >= options_.same_host_min_bytes) {
    return SameHostAllReduce(context, data, count, type, op, options_.ring.segment_bytes, &scratch_)
        .Run();
  }
  if (hierarchical_) {
    const bool within_hosts =
        same_host_within_hosts_ && count * SizeOf(type) >= options_.same_host_min_bytes;
    return HierarchicalAllReduce(context, data, count, type, op, options_.ring, &scratch_,
                                 &peer_scratch_, topology_, within_hosts)
        .Run();
  }
  return RingAllReduce(context, data, count, type, op, options_.ring, &scratch_, ring_plan_).Run();
}

Status Communicator::BroadcastBody(const OperationContext& context, void* data, size_t count,
                                   DataType type, int root) {
  COHORT_RETURN_IF_ERROR(CheckRoot(root).WithContext(context.description));
  if (count == 0 || size() == 1) return Status::OK();
  if (data == nullptr || BytesOverflow(count, type)) {
    return Status::InvalidArgument(context.description + ": no buffer, or a size that overflows");
  }
  const size_t bytes = count * SizeOf(type);
  Announce(context, bytes);
  if (same_host_ && bytes >= options_.same_host_min_bytes) {
    return SameHostBroadcast(context, data, bytes, root).Run();
  }
  return ChainBroadcast(context, data, bytes, root, options_.ring.segment_bytes).Run();
}

Status Communicator::AllGatherBody(const OperationContext& context, const void* input, void* output,
                                   size_t count, DataType type) {
  if (count == 0) return Status::OK();
  if (input == nullptr || output == nullptr || BytesOverflow(count, type) ||
      BytesOverflow(count * SizeOf(type), DataType::kFloat64)) {
    return Status::InvalidArgument(context.description + ": no buffer, or a size that overflows");
  }
  const size_t block_bytes = count * SizeOf(type);
  uint8_t* own_block = static_cast<uint8_t*>(output) + rank() * block_bytes;
  if (input != own_block) std::memcpy(own_block, input, block_bytes);
  if (size() == 1) return Status::OK();
  Announce(context, block_bytes);
  if (same_host_ && block_bytes * size() >= options_.same_host_min_bytes) {
    return SameHostAllGather(context, output, block_bytes).Run();
  }
  return RingAllGather(context, output, block_bytes, options_.ring.segment_bytes).Run();
}

Status Communicator::ReduceScatterBody(const OperationContext& context, const void* input,
                                       void* output, size_t count, DataType type, ReduceOp op) {
  if (count == 0) return Status::OK();
  const int size = this->size();
  if (input == nullptr || output == nullptr || BytesOverflow(count, type) ||
      count * SizeOf(type) > std::numeric_limits<size_t>::max() / static_cast<size_t>(size)) {
    return Status::InvalidArgument(context.description + ": no buffer, or a size that overflows");
  }
  const size_t block_bytes = count * SizeOf(type);
  const size_t total_bytes = block_bytes * size;
  const uint8_t* in = static_cast<const uint8_t*>(input);
  uint8_t* out = static_cast<uint8_t*>(output);
  if (size == 1) {
    std::memcpy(out, in, block_bytes);
    return Status::OK();
  }
  Announce(context, total_bytes);
  if (same_host_ && total_bytes >= options_.same_host_min_bytes) {
    return SameHostReduceScatter(context, input, output, count, type, op,
                                 options_.ring.segment_bytes, &scratch_)
        .Run();
  }
  reduce_scatter_copy_.resize(total_bytes);
  uint8_t* copy = reduce_scatter_copy_.data();
  if (staging_ != nullptr) {
    // A small buffer on this host: the staged all-reduce's few microseconds beat the round trips
    // of any exchange; this rank keeps its block.
    std::memcpy(copy, in, total_bytes);
    COHORT_RETURN_IF_ERROR(
        StagedAllReduce(context, *staging_, &next_staging_chunk_, copy, count * size, type, op)
            .Run());
    std::memcpy(out, copy + rank() * block_bytes, block_bytes);
    return Status::OK();
  }
  // The ring's reduce-scatter phase alone, over the ring's order: ring position p ends with block
  // (p + 1) % n of the ring's buffer reduced, so rank ring[p]'s block goes there.
  RingPlan plan = ring_plan_;
  plan.all_gather = false;
  if (plan.members.empty()) {
    for (int rank = 0; rank < size; ++rank) plan.members.push_back(rank);
  }
  int position = 0;
  for (int p = 0; p < size; ++p) {
    const int owner = OwnedBlockAfterReduceScatter(p, size);
    std::memcpy(copy + owner * block_bytes, in + plan.members[p] * block_bytes, block_bytes);
    if (plan.members[p] == rank()) position = p;
  }
  COHORT_RETURN_IF_ERROR(
      RingAllReduce(context, copy, count * size, type, op, options_.ring, &scratch_, plan).Run());
  std::memcpy(out, copy + OwnedBlockAfterReduceScatter(position, size) * block_bytes, block_bytes);
  return Status::OK();
}

Status Communicator::ReduceScatter(const void* input, void* output, size_t count, DataType type,
                                   ReduceOp op) {
  return RunNow("reduce-scatter", kReduceScatterKind, Details(count, type) + ", " + Name(op),
                [=, this](const OperationContext& context) {
                  return ReduceScatterBody(context, input, output, count, type, op);
                });
}

Status Communicator::AllReduce(void* data, size_t count, DataType type, ReduceOp op) {
  return RunNow("all-reduce", kAllReduceKind, Details(count, type) + ", " + Name(op),
                [=, this](const OperationContext& context) {
                  return AllReduceBody(context, data, count, type, op);
                });
}

Status Communicator::Broadcast(void* data, size_t count, DataType type, int root) {
  return RunNow("broadcast", kBroadcastKind,
                Details(count, type) + ", root " + std::to_string(root),
                [=, this](const OperationContext& context) {
                  return BroadcastBody(context, data, count, type, root);
                });
}

Status Communicator::AllGather(const void* input, void* output, size_t count, DataType type) {
  return RunNow("all-gather", kAllGatherKind, Details(count, type),
                [=, this](const OperationContext& context) {
                  return AllGatherBody(context, input, output, count, type);
                });
}

Status Communicator::Barrier() {
  return RunNow("barrier", kBarrierKind, "", [this](const OperationContext& context) {
    Announce(context, 0);
    return DisseminationBarrier(context).Run();
  });
}

std::shared_ptr<PendingOperation> Communicator::StartAllReduce(void* data, size_t count,
                                                               DataType type, ReduceOp op) {
  return Start("all-reduce", kAllReduceKind, Details(count, type) + ", " + Name(op),
               [=, this](const OperationContext& context) {
                 return AllReduceBody(context, data, count, type, op);
               });
}

std::shared_ptr<PendingOperation> Communicator::StartBroadcast(void* data, size_t count,
                                                               DataType type, int root) {
  return Start("broadcast", kBroadcastKind, Details(count, type) + ", root " + std::to_string(root),
               [=, this](const OperationContext& context) {
                 return BroadcastBody(context, data, count, type, root);
               });
}

std::shared_ptr<PendingOperation> Communicator::StartAllGather(const void* input, void* output,
                                                               size_t count, DataType type) {
  return Start("all-gather", kAllGatherKind, Details(count, type),
               [=, this](const OperationContext& context) {
                 return AllGatherBody(context, input, output, count, type);
               });
}

std::shared_ptr<PendingOperation> Communicator::StartBarrier() {
  return Start("barrier", kBarrierKind, "", [this](const OperationContext& context) {
    Announce(context, 0);
    return DisseminationBarrier(context).Run();
  });
}

}  // namespace cohort::collective
