#include "collective/staged_all_reduce.h"

#include <sched.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <string>

#include "collective/reduction.h"
#include "collective/ring_all_reduce.h"

namespace cohort::collective {
namespace {

// How a wait for a peer goes on: this many looks with a pause between, then yielding the core
// until kYieldFor has passed, then futex sleeps of kSleepMicroseconds at most. Every
// kServiceInterval the connections are driven and the deadline checked.
constexpr int kSpins = 64;
constexpr std::chrono::microseconds kYieldFor(50);
constexpr int kSleepMicroseconds = 1000;
constexpr std::chrono::milliseconds kServiceInterval(1);

inline void CpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

}  // namespace

StagingAnnouncement ReadAnnouncement(const StagingProgress& line) {
  while (true) {
    StagingAnnouncement announced;
    announced.tag = line.operation_tag.load(std::memory_order_acquire);
    announced.bytes = line.operation_bytes.load(std::memory_order_acquire);
    if (line.operation_tag.load(std::memory_order_acquire) == announced.tag) return announced;
  }
}

void AnnounceOperation(StagingArea& area, int rank, uint64_t tag, uint64_t bytes) {
  StagingProgress& line = area.progress(rank);
  line.operation_tag.store(0, std::memory_order_release);
  line.operation_bytes.store(bytes, std::memory_order_release);
  line.operation_tag.store(tag, std::memory_order_release);
}

StagedAllReduce::StagedAllReduce(const OperationContext& context, StagingArea& area,
                                 uint32_t* next_chunk, void* data, size_t count, DataType type,
                                 ReduceOp op)
    : context_(context),
      area_(area),
      next_chunk_(next_chunk),
      data_(static_cast<uint8_t*>(data)),
      count_(count),
      type_(type),
      op_(op) {}

Status StagedAllReduce::Run() {
  net::ConnectionSet& connections = *context_.connections;
  const int size = connections.size();
  const int rank = connections.rank();
  if (count_ == 0 || size == 1) return Status::OK();
  for (int peer = 0; peer < size; ++peer) {
    if (peer != rank) peers_.push_back(peer);
  }
  std::unique_ptr<net::PeerExchange> opened =
      connections.OpenExchange(peers_, context_.tag, context_.description, context_.deadline);
  net::PeerExchange& exchange = *opened;
  COHORT_RETURN_IF_ERROR(exchange.status());
  exchange_ = &exchange;

  const size_t element_size = SizeOf(type_);
  const size_t chunk_elements = area_.slot_bytes() / element_size;
  chunks_ = SegmentCount(count_, chunk_elements);
  first_chunk_ = *next_chunk_;
  StagingProgress& mine = area_.progress(rank);
  // Where chunk `index` lies in the buffer, and its part for each rank.
  struct Chunk {
    uint32_t number;  // across operations
    uint8_t* data;
    BlockPartition parts;
  };
  auto chunk_at = [&](size_t index) {
    const size_t first = index * chunk_elements;
    return Chunk{first_chunk_ + static_cast<uint32_t>(index), data_ + first * element_size,
                 BlockPartition(std::min(chunk_elements, count_ - first), size)};
  };
  auto at = [&](const Chunk& chunk, uint8_t* base, int part) {
    return base + chunk.parts.offset(part) * element_size;
  };
  auto bytes_of = [&](const Chunk& chunk, int part) {
    return chunk.parts.size(part) * element_size;
  };

  // 1. Stage the parts the peers reduce, once they are done with this slot's last chunk.
  auto stage = [&](size_t index) -> Status {
    const Chunk chunk = chunk_at(index);
    COHORT_RETURN_IF_ERROR(WaitForPeers(&StagingProgress::consumed, chunk.number - 1, index,
                                        "be done with the slot for"));
    uint8_t* const slot = area_.slot(rank, chunk.number);
    for (int peer : peers_) {
      std::memcpy(at(chunk, slot, peer), at(chunk, chunk.data, peer), bytes_of(chunk, peer));
    }
    StagingArea::Publish(mine, mine.staged, chunk.number + 1);
    return Status::OK();
  };
  // 2. Reduce this rank's part from every peer's slot; publish the result in this rank's slot.
  auto reduce = [&](size_t index) -> Status {
    const Chunk chunk = chunk_at(index);
    COHORT_RETURN_IF_ERROR(
        WaitForPeers(&StagingProgress::staged, chunk.number + 1, index, "stage its input of"));
    if (index == 0) {
      // Every peer staged this operation's first chunk, so it announced this operation.
      for (int peer : peers_) {
        COHORT_RETURN_IF_ERROR(CheckAnnouncement(peer, ReadAnnouncement(area_.progress(peer)),
                                                 /*may_lag=*/false));
      }
    }
    uint8_t* const own = at(chunk, chunk.data, rank);
    const size_t elements = chunk.parts.size(rank);
    for (int peer : peers_) {
      ReduceInto(type_, op_, own, at(chunk, area_.slot(peer, chunk.number), rank), elements);
    }
    if (op_ == ReduceOp::kAverage) DivideInPlace(type_, own, elements, size);
    std::memcpy(at(chunk, area_.slot(rank, chunk.number), rank), own, bytes_of(chunk, rank));
    StagingArea::Publish(mine, mine.reduced, chunk.number + 1);
    return Status::OK();
  };
  // 3. Copy every peer's final part.
  auto copy_out = [&](size_t index) -> Status {
    const Chunk chunk = chunk_at(index);
    COHORT_RETURN_IF_ERROR(
        WaitForPeers(&StagingProgress::reduced, chunk.number + 1, index, "reduce its part of"));
    for (int peer : peers_) {
      std::memcpy(at(chunk, chunk.data, peer), at(chunk, area_.slot(peer, chunk.number), peer),
                  bytes_of(chunk, peer));
    }
    StagingArea::Publish(mine, mine.consumed, chunk.number + 1);
    return Status::OK();
  };

  // Staging the next chunk between reducing this one and copying it out gives the peers that
  // much longer to finish their parts: fewer waits find a peer not yet done.
  COHORT_RETURN_IF_ERROR(stage(0));
  for (size_t index = 0; index < chunks_; ++index) {
    COHORT_RETURN_IF_ERROR(reduce(index));
    if (index + 1 < chunks_) COHORT_RETURN_IF_ERROR(stage(index + 1));
    COHORT_RETURN_IF_ERROR(copy_out(index));
  }
  *next_chunk_ = first_chunk_ + static_cast<uint32_t>(chunks_);
  return Status::OK();
}

Status StagedAllReduce::WaitForPeers(Counter counter, uint32_t target, size_t index,
                                     const char* what) {
  for (int peer : peers_) {
    if (Reached((area_.progress(peer).*counter).load(std::memory_order_acquire), target)) continue;
    COHORT_RETURN_IF_ERROR(WaitForPeer(peer, counter, target, index, what));
  }
  return Status::OK();
}

Status StagedAllReduce::WaitForPeer(int peer, Counter counter, uint32_t target, size_t index,
                                    const char* what) {
  StagingProgress& line = area_.progress(peer);
  std::atomic<uint32_t>& value = line.*counter;
  for (int spin = 0; spin < kSpins; ++spin) {
    CpuRelax();
    if (Reached(value.load(std::memory_order_acquire), target)) return Status::OK();
  }
  const auto started = net::SteadyClock::now();
  auto serviced = started;
  while (true) {
    const uint32_t seen = value.load(std::memory_order_acquire);
    if (Reached(seen, target)) return Status::OK();
    const auto now = net::SteadyClock::now();
    if (now - serviced >= kServiceInterval) {
      serviced = now;
      COHORT_RETURN_IF_ERROR(CheckOnPeer(peer, counter, target, index, what));
      continue;
    }
    if (now - started < kYieldFor) {
      sched_yield();
    } else {
      StagingArea::Sleep(line, value, seen, kSleepMicroseconds);
    }
  }
}

Status StagedAllReduce::CheckOnPeer(int peer, Counter counter, uint32_t target, size_t index,
                                    const char* what) {
  COHORT_RETURN_IF_ERROR(exchange_->Service());
  // The announcement first: a peer publishes before it moves on to announce its next operation.
  const StagingAnnouncement announced = ReadAnnouncement(area_.progress(peer));
  if (Reached((area_.progress(peer).*counter).load(std::memory_order_acquire), target)) {
    return Status::OK();
  }
  COHORT_RETURN_IF_ERROR(CheckAnnouncement(peer, announced, /*may_lag=*/true));
  if (!context_.deadline.Expired()) return Status::OK();
  return exchange_->Fail(Status::DeadlineExceeded(
      "did not finish within its deadline; still waiting in shared memory for " +
      context_.connections->PeerName(peer) + " to " + what + " chunk " + std::to_string(index + 1) +
      " of " + std::to_string(chunks_)));
}

Status StagedAllReduce::CheckAnnouncement(int peer, const StagingAnnouncement& announced,
                                          bool may_lag) {
  const uint64_t bytes = count_ * SizeOf(type_);
  if (announced.tag == context_.tag && announced.bytes != bytes) {
    return exchange_->Fail(Status::FailedPrecondition(
        context_.connections->PeerName(peer) + " announced a buffer of " +
        std::to_string(announced.bytes) + " bytes where " + std::to_string(bytes) +
        " were expected: the tasks called the same collective with different sizes"));
  }
  // Operations are numbered alike on every rank (tag = number << 8 | kind). A peer in this
  // operation's number with another kind, or past it while this rank still waits for it, did not
  // call the same collectives in the same order.
  const uint64_t number = context_.tag >> 8, peer_number = announced.tag >> 8;
  if (announced.tag != context_.tag && (peer_number >= number || !may_lag)) {
    return exchange_->Fail(Status::FailedPrecondition(
        context_.connections->PeerName(peer) + " is in another collective operation (tag " +
        std::to_string(announced.tag) + ", expected " + std::to_string(context_.tag) +
        "): the tasks did not call the same collectives in the same order"));
  }
  return Status::OK();
}

}  // namespace cohort::collective
