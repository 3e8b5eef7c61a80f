// StagingArea: shared memory that every rank of a same-host group maps, for collectives that pass
// data through it rather than through sockets or each other's private memory.
//
// The memory comes from the transport's same-host capability (net::SameHostMemory in
// net/connection_set.h; an anonymous memory file for TCP): rank 0 creates it and sends the others
// its invitation; each maps the same pages. Nothing is left behind on the host.
//
//   auto area = StagingArea::Create(memory, ranks, slot_bytes);              // rank 0
//   broadcast area->invitation() ...
//   auto area = StagingArea::Open(memory, invitation, ranks, slot_bytes);    // the others
//   ... agree that every rank mapped it; then rank 0 calls Seal().
//
// Layout: for every rank, a line of progress counters (written by that rank only, read by all)
// and two staging slots of `slot_bytes` (written by that rank only), so that a rank can fill one
// slot while its peers still read the other. The counters only grow (modulo 2^32); a rank that
// waits for a peer's counter spins briefly, then yields its core, then sleeps on a futex that the
// peer wakes when it publishes, so that ranks sharing a core do not take each other's time.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>

#include "base/status.h"
#include "net/connection_set.h"

namespace cohort::collective {

// One rank's progress, in shared memory. Counters count chunks: "every chunk before this number
// is staged / reduced / consumed by this rank".
struct alignas(128) StagingProgress {
  std::atomic<uint32_t> staged{0};    // its input is in its slot
  std::atomic<uint32_t> reduced{0};   // its part of the chunk is final, in its slot
  std::atomic<uint32_t> consumed{0};  // it copied every peer's final part; its slot may be reused
  std::atomic<uint32_t> sleepers{0};  // ranks asleep on a futex of this line
  // What the rank's current all-reduce is: its tag, then its size in bytes (the tag is written
  // last; read the tag, the size, then the tag again).
  std::atomic<uint64_t> operation_bytes{0};
  std::atomic<uint64_t> operation_tag{0};
};

// True when `counter` has reached `target` (counters wrap modulo 2^32).
inline bool Reached(uint32_t counter, uint32_t target) {
  return static_cast<int32_t>(counter - target) >= 0;
}

class StagingArea {
 public:
  // Bounds on what a group may ask for.
  static constexpr int kMaxRanks = 1024;
  static constexpr size_t kMaxSlotBytes = 64u << 20;

  // A new area for `ranks` ranks, in shared memory that `memory` creates.
  static StatusOr<std::unique_ptr<StagingArea>> Create(net::SameHostMemory& memory, int ranks,
                                                       size_t slot_bytes);
  // Maps the area another rank created and invited this one to, after checking that its size is
  // the one `ranks` and `slot_bytes` give.
  static StatusOr<std::unique_ptr<StagingArea>> Open(
      net::SameHostMemory& memory, const net::SharedMemory::Invitation& invitation, int ranks,
      size_t slot_bytes);

  StagingArea(const StagingArea&) = delete;
  StagingArea& operator=(const StagingArea&) = delete;

  // What the other ranks need to open the area (on the rank that created it, until Seal()).
  net::SharedMemory::Invitation invitation() const { return memory_->invitation(); }
  // Once every rank mapped the area: nobody else can open it. The mapping stays.
  void Seal() { memory_->Seal(); }

  int ranks() const { return ranks_; }
  size_t slot_bytes() const { return slot_bytes_; }
  StagingProgress& progress(int rank) const { return progress_[rank]; }
  // The slot `rank` stages chunk number `chunk` in.
  uint8_t* slot(int rank, uint32_t chunk) const {
    return slots_ + (static_cast<size_t>(rank) * 2 + (chunk & 1)) * slot_bytes_;
  }

  // counter = value, waking the ranks asleep on `line`.
  static void Publish(StagingProgress& line, std::atomic<uint32_t>& counter, uint32_t value);
  // Sleeps until `counter` (of `line`) differs from `seen`, a publish wakes it, or `timeout_us`
  // passed; the caller looks again either way.
  static void Sleep(StagingProgress& line, std::atomic<uint32_t>& counter, uint32_t seen,
                    int timeout_us);

 private:
  StagingArea(int ranks, size_t slot_bytes, std::unique_ptr<net::SharedMemory> memory);
  static size_t BytesFor(int ranks, size_t slot_bytes);

  const int ranks_;
  const size_t slot_bytes_;
  const std::unique_ptr<net::SharedMemory> memory_;
  StagingProgress* const progress_;
  uint8_t* const slots_;
};

}  // namespace cohort::collective
