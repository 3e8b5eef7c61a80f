// Storage: where Cohort's files live, behind one interface, chosen by the path's scheme, as
// LevelDB keeps its files behind an Env and TensorFlow its file systems behind a scheme registry:
//
//   /local/path, relative/path   the local file system (file.h: atomic replace, fsync)
//   s3://bucket/key              S3 or any S3-compatible server (s3_client.h, s3_settings.h)
//   gs://bucket/key              Cloud Storage through its S3-interoperable XML API, HMAC keys
//
// The same operations on both kinds, with the same promise: a file written with
// WriteFileAtomically is seen whole or not at all, never torn. Object storage has no directories:
// a "directory" is the prefix "key/", ListDirectory lists what lies directly under it, and a
// directory with nothing under it is empty, not missing.
//
// The free functions below are what callers use: StorageFor picks the implementation (an S3 one
// per scheme, made at first use from the process environment and shared), so a path flag may name
// either kind and the caller's code does not change.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/file.h"
#include "base/s3_client.h"
#include "base/status.h"

namespace cohort {

struct StorageEntry {
  std::string name;   // the last path component, no '/'
  uint64_t size = 0;  // 0 for a directory
  bool is_directory = false;
};

class Storage {
 public:
  virtual ~Storage() = default;

  // The whole file; NotFound when absent, InvalidArgument when larger than `max_bytes`.
  virtual StatusOr<std::string> ReadFile(const std::string& path, size_t max_bytes) = 0;
  // At most `max_bytes` from `offset`; empty when the file is not longer than `offset`.
  virtual StatusOr<std::string> ReadFileRange(const std::string& path, uint64_t offset,
                                              size_t max_bytes) = 0;
  // Replaces the file with `contents`, whole or not at all.
  virtual Status WriteFileAtomically(const std::string& path, std::string_view contents) = 0;
  // The files and directories directly under `path`, sorted by name.
  virtual StatusOr<std::vector<StorageEntry>> ListDirectory(const std::string& path) = 0;
  // Removes the file; removing an absent file succeeds.
  virtual Status RemoveFile(const std::string& path) = 0;
  virtual StatusOr<bool> FileExists(const std::string& path) = 0;
  // NotFound when absent.
  virtual StatusOr<uint64_t> FileSize(const std::string& path) = 0;
};

// The local file system (file.h's functions).
std::unique_ptr<Storage> MakeLocalStorage();

// Object storage through `client` (for tests and tools that configure their own client; paths
// passed to it must have the client's scheme).
std::unique_ptr<Storage> MakeObjectStorage(std::shared_ptr<const S3Client> client);

// The storage that serves `path`: the local file system for a path without "scheme://", the
// shared S3 or gs storage otherwise. InvalidArgument for a malformed URL or when the scheme's
// settings cannot be resolved (no credentials, a bad endpoint: s3_settings.h), naming the path.
StatusOr<Storage*> StorageFor(std::string_view path);

// Refuses a malformed storage URL (or a scheme Cohort does not serve) before any work starts;
// a local path always passes. For flag validation.
Status CheckStoragePath(std::string_view path);

// `directory` + "/" + `name` for either kind of path.
std::string JoinStoragePath(std::string_view directory, std::string_view name);

// The same operations through StorageFor.
StatusOr<std::string> ReadStorageFile(const std::string& path,
                                      size_t max_bytes = kDefaultMaxFileBytes);
StatusOr<std::string> ReadStorageFileRange(const std::string& path, uint64_t offset,
                                           size_t max_bytes);
Status WriteStorageFileAtomically(const std::string& path, std::string_view contents);
StatusOr<std::vector<StorageEntry>> ListStorageDirectory(const std::string& path);
Status RemoveStorageFile(const std::string& path);
StatusOr<bool> StorageFileExists(const std::string& path);
StatusOr<uint64_t> StorageFileSize(const std::string& path);

}  // namespace cohort
