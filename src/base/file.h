// Whole-file I/O in one place, as LevelDB keeps it behind its Env: every module that saves or
// loads a whole file (job state, checkpoints, saved models, manifests, data files) goes through
// these functions, so they share one durability rule and one way of reporting errors.
//
// Durability: a file replaced atomically is written to a hidden temporary file beside the target
// (".<name>.tmp<pid>"), fsync'd, renamed over the target, and then the directory is fsync'd, so a
// crash at any moment leaves the old file or the new one, never a torn one, and the rename itself
// survives a power loss. Every fsync's result is checked. On any failure the temporary file is
// removed and the target is untouched.
//
// Errors name the path and say what the system said ("cannot write /x/.y.tmp42: No space left on
// device").
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <string_view>

#include "base/status.h"

namespace cohort {

// strerror() of `error_number`, thread-safe.
std::string ErrnoMessage(int error_number);

// Writes `contents` to `path` atomically. The file is created with `permissions` (less the umask)
// from its first byte, so a secret is never readable by others, not even briefly.
Status WriteFileAtomically(const std::filesystem::path& path, std::string_view contents,
                           mode_t permissions = 0644);

// Replaces `path` atomically with a file that `write` creates at the temporary path it is given
// (for writers that need a path, such as libtorch's serializer). `write` must create the file; a
// failed `write` leaves the old file.
Status ReplaceFileAtomically(
    const std::filesystem::path& path,
    const std::function<Status(const std::filesystem::path& temporary_path)>& write);

// Removes the temporary files that writers of `directory` killed mid-write left behind
// (".<name>.tmp<pid>", see above) and returns how many. A file counts as left behind when its
// pid is this process's own (nothing has been written yet when this is called at start) or names
// no live process; a live process's file may be a write in progress and stays. Call it at start
// in directories this process alone writes to. A directory that does not exist holds nothing.
StatusOr<int> RemoveStaleTemporaryFiles(const std::filesystem::path& directory);

// Writes `contents` into `path` in place: created if absent, truncated, written, closed. Not
// atomic: only for a file that another party created for this process to write and that cannot
// be replaced by a rename (a container's termination-message file is bind-mounted on Kubernetes).
Status WriteFileInPlace(const std::filesystem::path& path, std::string_view contents);

// fsync of a directory, so that renames and creations in it are durable.
Status SyncDirectory(const std::filesystem::path& directory);

// The bound ReadWholeFile applies unless told otherwise: far above any state file, manifest or
// checkpoint shard Cohort writes, far below what would exhaust memory.
inline constexpr size_t kDefaultMaxFileBytes = size_t{1} << 30;

// The whole contents of `path`. NotFound when it does not exist; InvalidArgument when it is a
// directory or holds more than `max_bytes` (the read stops there, so a device or pipe that never
// ends cannot exhaust memory); IOError otherwise.
StatusOr<std::string> ReadWholeFile(const std::filesystem::path& path,
                                    size_t max_bytes = kDefaultMaxFileBytes);

// The end of the regular file `path`: the bytes from `offset` on, or only the last `max_bytes` of
// them when there are more (a log's last lines). Empty when the file is shorter than `offset`.
// NotFound when it does not exist; IOError otherwise.
StatusOr<std::string> ReadFileTail(const std::filesystem::path& path, size_t offset,
                                   size_t max_bytes);

// A regular file open for reading pieces of it where they lie, so that a large file (a replica's
// log) is streamed in bounded chunks and never read whole:
//
//   StatusOr<FileReader> log = FileReader::Open(path);
//   for (uint64_t at = 0; at < log->Size();) { StatusOr<std::string> chunk = log->ReadAt(at, 1 <<
//   16); ... }
class FileReader {
 public:
  // NotFound when `path` does not exist; InvalidArgument when it is not a regular file; IOError.
  static StatusOr<FileReader> Open(const std::filesystem::path& path);
  FileReader(FileReader&& other) noexcept;
  FileReader& operator=(FileReader&& other) noexcept;
  FileReader(const FileReader&) = delete;
  FileReader& operator=(const FileReader&) = delete;
  ~FileReader();

  const std::filesystem::path& path() const { return path_; }
  // The file's size now (it may grow while open).
  uint64_t Size() const;
  // At most `max_bytes` from `offset` on: fewer at the end of the file, none past it.
  StatusOr<std::string> ReadAt(uint64_t offset, size_t max_bytes) const;

 private:
  FileReader(int fd, std::filesystem::path path) : fd_(fd), path_(std::move(path)) {}
  int fd_ = -1;
  std::filesystem::path path_;
};

// The bytes of the regular file `path` from `offset` on, at most `max_bytes` of them (a growing
// file read in chunks: event files). Empty when the file is not longer than `offset`. NotFound
// when it does not exist; IOError otherwise.
StatusOr<std::string> ReadFileRange(const std::filesystem::path& path, size_t offset,
                                    size_t max_bytes);

// The same for an open descriptor (standard input, a pipe), read from where it stands to its end;
// errors name the input `name`. The descriptor stays open.
StatusOr<std::string> ReadWholeDescriptor(int fd, const std::string& name,
                                          size_t max_bytes = kDefaultMaxFileBytes);

}  // namespace cohort
