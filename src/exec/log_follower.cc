#include "exec/log_follower.h"

#include <sys/stat.h>

#include <algorithm>
#include <optional>
#include <vector>

#include "base/file.h"
#include "exec/log_selection.h"

namespace cohort::exec {
namespace {

constexpr size_t kChunkBytes = size_t{1} << 16;

// Where the last complete line of `file`'s bytes [offset, size) starts, if it is found within the
// last kChunkBytes; `size` when there is none (or it is longer than that).
uint64_t LastCompleteLineStart(FileReader& file, uint64_t offset, uint64_t size) {
  const uint64_t start = size - std::min<uint64_t>(size - offset, kChunkBytes);
  StatusOr<std::string> tail = file.ReadAt(start, size - start);
  if (!tail.ok()) return size;
  const size_t end = tail->rfind('\n');
  if (end == std::string::npos) return size;
  const size_t before = end == 0 ? std::string::npos : tail->rfind('\n', end - 1);
  if (before != std::string::npos) return start + before + 1;
  return start == offset ? offset : size;
}

}  // namespace

LogFollower::LogFollower(std::filesystem::path logs_directory, std::string replica)
    : logs_directory_(std::move(logs_directory)), replica_(std::move(replica)) {}

void LogFollower::Poll(const std::function<void(const std::string&, const std::string&)>& on_line,
                       bool flush_partial) {
  std::vector<std::string> replicas;
  std::error_code error;
  if (!replica_.empty()) {
    replicas.push_back(replica_);
  } else {
    for (const auto& entry : std::filesystem::directory_iterator(logs_directory_, error)) {
      if (entry.path().extension() == ".log") replicas.push_back(entry.path().stem().string());
    }
    std::sort(replicas.begin(), replicas.end());
  }
  for (const std::string& replica : replicas) {
    const std::filesystem::path path = logs_directory_ / (replica + ".log");
    StatusOr<FileReader> file = FileReader::Open(path);
    if (!file.ok()) continue;
    uint64_t& offset = offsets_[replica];
    // A new file (rotated, replica_log.h): the rest of the file it replaced, found under its
    // rotated name by its inode, is passed on first (whole lines, or a note when the rate limit
    // skips it), then the new file is read from its start.
    struct stat info {};
    if (stat(path.c_str(), &info) == 0) {
      ino_t& inode = inodes_[replica];
      if (inode != 0 && inode != info.st_ino) {
        std::optional<std::filesystem::path> rotated = RotatedFile(replica, inode);
        StatusOr<FileReader> old =
            rotated ? FileReader::Open(*rotated) : StatusOr<FileReader>(Status::NotFound(""));
        if (old.ok() && old->Size() > offset)
          Deliver(replica, *rotated, *old, offset, true, on_line);
        offset = 0;
      }
      inode = info.st_ino;
    }
    if (file->Size() < offset) offset = 0;
    Deliver(replica, path, *file, offset, flush_partial, on_line);
  }
}

std::optional<std::filesystem::path> LogFollower::RotatedFile(const std::string& replica,
                                                              ino_t inode) const {
  for (const char* suffix : {".log.start", ".log.1"}) {
    const std::filesystem::path candidate = logs_directory_ / (replica + suffix);
    struct stat info {};
    if (stat(candidate.c_str(), &info) == 0 && info.st_ino == inode) return candidate;
  }
  return std::nullopt;
}

void LogFollower::Deliver(
    const std::string& replica, const std::filesystem::path& path, FileReader& file,
    uint64_t& offset, bool flush_partial,
    const std::function<void(const std::string&, const std::string&)>& on_line) {
  const uint64_t size = file.Size();
  if (bytes_per_second_ > 0 && size > offset) {
    Budget& budget = budgets_[replica];
    const auto now = std::chrono::steady_clock::now();
    const double burst = static_cast<double>(bytes_per_second_);
    if (budget.refilled_at == std::chrono::steady_clock::time_point{}) {
      budget.bytes = burst;
    } else {
      const double seconds = std::chrono::duration<double>(now - budget.refilled_at).count();
      budget.bytes = std::min(burst, budget.bytes + seconds * burst);
    }
    budget.refilled_at = now;
    const uint64_t allowed = static_cast<uint64_t>(std::max(0.0, budget.bytes));
    if (size - offset > allowed) {
      // Skip to the first line that starts within the last `allowed` bytes.
      uint64_t resume = size - allowed;
      StatusOr<std::string> probe = file.ReadAt(resume > 0 ? resume - 1 : 0, kChunkBytes);
      if (probe.ok() && resume > 0) {
        const size_t newline = probe->find('\n');
        resume = newline == std::string::npos ? size : resume + newline;
      }
      // The last complete line is passed on however little of the budget is left, so that what
      // a reader sees last is what the replica wrote last.
      resume = std::min(resume, LastCompleteLineStart(file, offset, size));
      if (resume > offset) {
        on_line(replica, "[cohort: skipped " + std::to_string(resume - offset) + " bytes of " +
                             replica + "'s output, written faster than " +
                             std::to_string(bytes_per_second_) + " bytes/s; all of it is in " +
                             path.string() + "]");
        offset = resume;
      }
    }
    budget.bytes -= static_cast<double>(size - offset);
  }
  LogSpan span{offset, size};
  StatusOr<uint64_t> delivered =
      StreamLogLines(file, span, flush_partial,
                     [&](std::string_view line) { on_line(replica, std::string(line)); });
  if (delivered.ok()) offset = *delivered;
}

}  // namespace cohort::exec
