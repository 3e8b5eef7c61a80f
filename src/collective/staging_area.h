// StagingArea: shared memory that every rank of a same-host group maps, for collectives that pass
// data through it rather than through sockets or each other's private memory.
//
// Rank 0 creates it (an anonymous memory file, memfd) and tells the others its process id and
// descriptor number; each maps the same pages by opening /proc/<pid>/fd/<n>, which the kernel
// allows exactly when it allows reading that process's memory (net/same_host.h). Nothing is left
// behind on the host: the pages go away when the last rank unmaps them, even after a crash.
//
//   auto area = StagingArea::Create(ranks, slot_bytes);             // rank 0
//   broadcast {area->process_id(), area->descriptor()} ...
//   auto area = StagingArea::Open(pid, fd, ranks, slot_bytes);      // the others
//   ... agree that every rank mapped it; then rank 0 calls CloseDescriptor().
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

  // A new area for `ranks` ranks, held open by this process as descriptor().
  static StatusOr<std::unique_ptr<StagingArea>> Create(int ranks, size_t slot_bytes);
  // Maps the area that process `process_id` holds open as descriptor `fd`, after checking that
  // its size is the one `ranks` and `slot_bytes` give.
  static StatusOr<std::unique_ptr<StagingArea>> Open(uint32_t process_id, int fd, int ranks,
                                                     size_t slot_bytes);
  ~StagingArea();

  StagingArea(const StagingArea&) = delete;
  StagingArea& operator=(const StagingArea&) = delete;

  // The descriptor the other ranks open (-1 once closed, and on ranks that opened the area).
  int descriptor() const { return fd_; }
  uint32_t process_id() const;
  // Closes the descriptor; the mapping stays.
  void CloseDescriptor();

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
  StagingArea(int ranks, size_t slot_bytes, int fd, uint8_t* base, size_t bytes);
  static size_t BytesFor(int ranks, size_t slot_bytes);

  const int ranks_;
  const size_t slot_bytes_;
  int fd_;
  uint8_t* const base_;
  const size_t bytes_;
  StagingProgress* const progress_;
  uint8_t* const slots_;
};

}  // namespace cohort::collective
