// MemoryFileSharedMemory: net::SharedMemory (connection_set.h) as an anonymous memory file, for
// processes on one host.
//
// The creating process makes a memfd and maps it; its invitation is its process id and the
// descriptor's number. Another process maps the same pages by opening /proc/<pid>/fd/<n>, which the
// kernel allows exactly when it allows reading that process's memory (same_host.h). Nothing is left
// behind on the host: the pages go away when the last process unmaps them, even after a crash.
//
//   auto memory = MemoryFileSharedMemory::Create(bytes);                       // one process
//   ... send memory->invitation() to the others ...
//   auto memory = MemoryFileSharedMemory::Open(invitation, bytes);            // the others
//   ... once all have mapped it, the creator calls Seal(), which closes the descriptor.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "base/status.h"
#include "net/connection_set.h"

namespace cohort::net {

class MemoryFileSharedMemory : public SharedMemory {
 public:
  // New memory of `bytes` (at most kMaxBytes), zero-filled, held open by this process.
  static StatusOr<std::unique_ptr<SharedMemory>> Create(size_t bytes);
  // Maps the memory that `invitation` (process id, descriptor) names, after checking that its size
  // is `bytes`.
  static StatusOr<std::unique_ptr<SharedMemory>> Open(const Invitation& invitation, size_t bytes);

  // A bound on what a group may ask for (64 GiB).
  static constexpr size_t kMaxBytes = size_t{64} << 30;

  ~MemoryFileSharedMemory() override;
  MemoryFileSharedMemory(const MemoryFileSharedMemory&) = delete;
  MemoryFileSharedMemory& operator=(const MemoryFileSharedMemory&) = delete;

  uint8_t* data() const override { return base_; }
  size_t size() const override { return bytes_; }
  Invitation invitation() const override;
  void Seal() override;

 private:
  MemoryFileSharedMemory(int fd, uint8_t* base, size_t bytes)
      : fd_(fd), base_(base), bytes_(bytes) {}

  int fd_;  // -1 once sealed, and in processes that opened the memory
  uint8_t* const base_;
  const size_t bytes_;
};

}  // namespace cohort::net
