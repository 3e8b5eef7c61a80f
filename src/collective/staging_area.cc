#include "collective/staging_area.h"

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <climits>
#include <ctime>
#include <string>
#include <utility>

namespace cohort::collective {
namespace {

constexpr size_t kPage = 4096;

size_t RoundUpToPage(size_t bytes) { return (bytes + kPage - 1) / kPage * kPage; }

uint32_t* FutexWord(std::atomic<uint32_t>& counter) {
  static_assert(sizeof(std::atomic<uint32_t>) == sizeof(uint32_t));
  return reinterpret_cast<uint32_t*>(&counter);
}

Status CheckShape(int ranks, size_t slot_bytes) {
  if (ranks < 1 || ranks > StagingArea::kMaxRanks || slot_bytes == 0 ||
      slot_bytes > StagingArea::kMaxSlotBytes) {
    return Status::InvalidArgument(
        "staging area of " + std::to_string(ranks) + " ranks and slots of " +
        std::to_string(slot_bytes) + " bytes: at most " + std::to_string(StagingArea::kMaxRanks) +
        " ranks and slots of 1 to " + std::to_string(StagingArea::kMaxSlotBytes) + " bytes");
  }
  return Status::OK();
}

}  // namespace

size_t StagingArea::BytesFor(int ranks, size_t slot_bytes) {
  return RoundUpToPage(sizeof(StagingProgress) * static_cast<size_t>(ranks)) +
         static_cast<size_t>(ranks) * 2 * RoundUpToPage(slot_bytes);
}

StagingArea::StagingArea(int ranks, size_t slot_bytes, std::unique_ptr<net::SharedMemory> memory)
    : ranks_(ranks),
      slot_bytes_(RoundUpToPage(slot_bytes)),
      memory_(std::move(memory)),
      progress_(reinterpret_cast<StagingProgress*>(memory_->data())),
      slots_(memory_->data() +
             RoundUpToPage(sizeof(StagingProgress) * static_cast<size_t>(ranks))) {}

StatusOr<std::unique_ptr<StagingArea>> StagingArea::Create(net::SameHostMemory& memory, int ranks,
                                                           size_t slot_bytes) {
  COHORT_RETURN_IF_ERROR(CheckShape(ranks, slot_bytes));
  auto created = memory.CreateSharedMemory(BytesFor(ranks, slot_bytes));
  if (!created.ok()) return created.status().WithContext("creating the staging area");
  // Fresh shared memory reads as zeros: every counter starts at 0.
  return std::unique_ptr<StagingArea>(
      new StagingArea(ranks, slot_bytes, std::move(created).value()));
}

StatusOr<std::unique_ptr<StagingArea>> StagingArea::Open(
    net::SameHostMemory& memory, const net::SharedMemory::Invitation& invitation, int ranks,
    size_t slot_bytes) {
  COHORT_RETURN_IF_ERROR(CheckShape(ranks, slot_bytes));
  auto opened = memory.OpenSharedMemory(invitation, BytesFor(ranks, slot_bytes));
  if (!opened.ok()) return opened.status().WithContext("opening the staging area");
  return std::unique_ptr<StagingArea>(
      new StagingArea(ranks, slot_bytes, std::move(opened).value()));
}

void StagingArea::Publish(StagingProgress& line, std::atomic<uint32_t>& counter, uint32_t value) {
  counter.store(value, std::memory_order_seq_cst);
  // A sleeper counts itself before it looks at the counter a last time, and this looks at the
  // sleepers after the store: one of the two sees the other (both are sequentially consistent).
  if (line.sleepers.load(std::memory_order_seq_cst) != 0) {
    syscall(SYS_futex, FutexWord(counter), FUTEX_WAKE, INT_MAX, nullptr, nullptr, 0);
  }
}

void StagingArea::Sleep(StagingProgress& line, std::atomic<uint32_t>& counter, uint32_t seen,
                        int timeout_us) {
  line.sleepers.fetch_add(1, std::memory_order_seq_cst);
  if (counter.load(std::memory_order_seq_cst) == seen) {
    timespec timeout{timeout_us / 1000000, static_cast<long>(timeout_us % 1000000) * 1000};
    syscall(SYS_futex, FutexWord(counter), FUTEX_WAIT, seen, &timeout, nullptr, 0);
  }
  line.sleepers.fetch_sub(1, std::memory_order_seq_cst);
}

}  // namespace cohort::collective
