#include "collective/staging_area.h"

#include <fcntl.h>
#include <linux/futex.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <ctime>
#include <string>

#include "base/file.h"

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

StagingArea::StagingArea(int ranks, size_t slot_bytes, int fd, uint8_t* base, size_t bytes)
    : ranks_(ranks),
      slot_bytes_(RoundUpToPage(slot_bytes)),
      fd_(fd),
      base_(base),
      bytes_(bytes),
      progress_(reinterpret_cast<StagingProgress*>(base)),
      slots_(base + RoundUpToPage(sizeof(StagingProgress) * static_cast<size_t>(ranks))) {}

StagingArea::~StagingArea() {
  munmap(base_, bytes_);
  CloseDescriptor();
}

uint32_t StagingArea::process_id() const { return static_cast<uint32_t>(getpid()); }

void StagingArea::CloseDescriptor() {
  if (fd_ >= 0) close(fd_);
  fd_ = -1;
}

StatusOr<std::unique_ptr<StagingArea>> StagingArea::Create(int ranks, size_t slot_bytes) {
  COHORT_RETURN_IF_ERROR(CheckShape(ranks, slot_bytes));
  const size_t bytes = BytesFor(ranks, slot_bytes);
  int fd = memfd_create("cohort-staging", MFD_CLOEXEC);
  if (fd < 0)
    return Status::Unavailable("memfd_create for the staging area: " + ErrnoMessage(errno));
  if (ftruncate(fd, static_cast<off_t>(bytes)) != 0) {
    Status failed = Status::Unavailable("sizing the staging area to " + std::to_string(bytes) +
                                        " bytes: " + ErrnoMessage(errno));
    close(fd);
    return failed;
  }
  void* base = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (base == MAP_FAILED) {
    Status failed = Status::Unavailable("mapping the staging area: " + ErrnoMessage(errno));
    close(fd);
    return failed;
  }
  // A fresh memory file reads as zeros: every counter starts at 0.
  return std::unique_ptr<StagingArea>(
      new StagingArea(ranks, slot_bytes, fd, static_cast<uint8_t*>(base), bytes));
}

StatusOr<std::unique_ptr<StagingArea>> StagingArea::Open(uint32_t process_id, int fd, int ranks,
                                                         size_t slot_bytes) {
  COHORT_RETURN_IF_ERROR(CheckShape(ranks, slot_bytes));
  const std::string path = "/proc/" + std::to_string(process_id) + "/fd/" + std::to_string(fd);
  int own = open(path.c_str(), O_RDWR | O_CLOEXEC);
  if (own < 0) {
    return Status::Unavailable("opening the staging area " + path + ": " + ErrnoMessage(errno));
  }
  const size_t bytes = BytesFor(ranks, slot_bytes);
  struct stat info {};
  if (fstat(own, &info) != 0 || static_cast<size_t>(info.st_size) != bytes) {
    close(own);
    return Status::FailedPrecondition("the staging area " + path + " is not " +
                                      std::to_string(bytes) + " bytes long");
  }
  void* base = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, own, 0);
  close(own);
  if (base == MAP_FAILED) {
    return Status::Unavailable("mapping the staging area " + path + ": " + ErrnoMessage(errno));
  }
  return std::unique_ptr<StagingArea>(
      new StagingArea(ranks, slot_bytes, -1, static_cast<uint8_t*>(base), bytes));
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
