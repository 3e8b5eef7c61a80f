#include "cohort/storage.h"

#include "base/object_url.h"
#include "base/storage.h"
#include "public_api/internal.h"

namespace cohort {

std::string StoragePathProblem(const std::string& path) {
  if (!cohort::IsStorageUrl(std::string_view(path))) return "";
  StatusOr<Storage*> storage = StorageFor(path);
  return storage.ok() ? "" : storage.status().message();
}

bool IsObjectStoragePath(const std::string& path) { return IsStorageUrl(std::string_view(path)); }

std::string ReadStoredFile(const std::string& path, size_t max_bytes) {
  return ValueOrThrow(cohort::ReadStorageFile(path, max_bytes));
}

void WriteStoredFile(const std::string& path, std::string_view contents) {
  ThrowIfError(WriteStorageFileAtomically(path, contents));
}

}  // namespace cohort
