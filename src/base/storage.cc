#include "base/storage.h"

#include <algorithm>
#include <filesystem>
#include <map>
#include <mutex>
#include <system_error>

#include "base/object_url.h"

namespace cohort {
namespace {

class LocalStorage final : public Storage {
 public:
  StatusOr<std::string> ReadFile(const std::string& path, size_t max_bytes) override {
    return ReadWholeFile(path, max_bytes);
  }

  StatusOr<std::string> ReadFileRange(const std::string& path, uint64_t offset,
                                      size_t max_bytes) override {
    return cohort::ReadFileRange(path, offset, max_bytes);
  }

  Status WriteFileAtomically(const std::string& path, std::string_view contents) override {
    return cohort::WriteFileAtomically(path, contents);
  }

  StatusOr<std::vector<StorageEntry>> ListDirectory(const std::string& path) override {
    std::error_code error;
    std::filesystem::directory_iterator entries(path, error);
    if (error) {
      const std::string message = "cannot list " + path + ": " + error.message();
      if (error == std::errc::no_such_file_or_directory) return Status::NotFound(message);
      return Status::IOError(message);
    }
    std::vector<StorageEntry> listing;
    for (const std::filesystem::directory_entry& entry : entries) {
      StorageEntry item;
      item.name = entry.path().filename().string();
      item.is_directory = entry.is_directory(error);
      if (!item.is_directory) {
        const uintmax_t size = entry.file_size(error);
        item.size = error ? 0 : size;
      }
      listing.push_back(std::move(item));
    }
    std::sort(listing.begin(), listing.end(),
              [](const StorageEntry& a, const StorageEntry& b) { return a.name < b.name; });
    return listing;
  }

  Status RemoveFile(const std::string& path) override {
    std::error_code error;
    std::filesystem::remove(path, error);
    if (error) return Status::IOError("cannot remove " + path + ": " + error.message());
    return Status::OK();
  }

  StatusOr<bool> FileExists(const std::string& path) override {
    std::error_code error;
    const bool exists = std::filesystem::exists(path, error);
    if (error && error != std::errc::no_such_file_or_directory) {
      return Status::IOError("cannot look at " + path + ": " + error.message());
    }
    return exists;
  }

  StatusOr<uint64_t> FileSize(const std::string& path) override {
    std::error_code error;
    const uintmax_t size = std::filesystem::file_size(path, error);
    if (error == std::errc::no_such_file_or_directory) {
      return Status::NotFound(path + " does not exist");
    }
    if (error) return Status::IOError("cannot size " + path + ": " + error.message());
    return static_cast<uint64_t>(size);
  }
};

class ObjectStorage final : public Storage {
 public:
  explicit ObjectStorage(std::shared_ptr<const S3Client> client) : client_(std::move(client)) {}

  StatusOr<std::string> ReadFile(const std::string& path, size_t max_bytes) override {
    StatusOr<ObjectUrl> url = Parse(path, /*directory=*/false);
    if (!url.ok()) return url.status();
    return client_->GetObject(*url, max_bytes);
  }

  StatusOr<std::string> ReadFileRange(const std::string& path, uint64_t offset,
                                      size_t max_bytes) override {
    StatusOr<ObjectUrl> url = Parse(path, false);
    if (!url.ok()) return url.status();
    return client_->GetObjectRange(*url, offset, max_bytes);
  }

  Status WriteFileAtomically(const std::string& path, std::string_view contents) override {
    StatusOr<ObjectUrl> url = Parse(path, false);
    if (!url.ok()) return url.status();
    return client_->PutObject(*url, contents);
  }

  StatusOr<std::vector<StorageEntry>> ListDirectory(const std::string& path) override {
    StatusOr<ObjectUrl> url = Parse(path, true);
    if (!url.ok()) return url.status();
    std::string prefix = url->key;
    if (!prefix.empty() && !prefix.ends_with('/')) prefix += '/';
    StatusOr<S3Client::Listing> listing = client_->ListObjects(url->bucket, prefix, "/");
    if (!listing.ok()) return listing.status();
    std::vector<StorageEntry> entries;
    for (const S3ObjectEntry& object : listing->objects) {
      const std::string name = object.key.substr(prefix.size());
      if (name.empty()) continue;  // a "directory marker" object some tools create
      entries.push_back({name, object.size, false});
    }
    for (const std::string& common : listing->common_prefixes) {
      std::string name = common.substr(prefix.size());
      while (name.ends_with('/')) name.pop_back();
      if (!name.empty()) entries.push_back({name, 0, true});
    }
    std::sort(entries.begin(), entries.end(),
              [](const StorageEntry& a, const StorageEntry& b) { return a.name < b.name; });
    return entries;
  }

  Status RemoveFile(const std::string& path) override {
    StatusOr<ObjectUrl> url = Parse(path, false);
    if (!url.ok()) return url.status();
    return client_->DeleteObject(*url);
  }

  StatusOr<bool> FileExists(const std::string& path) override {
    StatusOr<ObjectUrl> url = Parse(path, false);
    if (!url.ok()) return url.status();
    StatusOr<std::optional<uint64_t>> size = client_->HeadObject(*url);
    if (!size.ok()) return size.status();
    return size->has_value();
  }

  StatusOr<uint64_t> FileSize(const std::string& path) override {
    StatusOr<ObjectUrl> url = Parse(path, false);
    if (!url.ok()) return url.status();
    StatusOr<std::optional<uint64_t>> size = client_->HeadObject(*url);
    if (!size.ok()) return size.status();
    if (!size->has_value()) return Status::NotFound(path + " does not exist");
    return **size;
  }

 private:
  // An object needs a key that does not end in '/'; a directory may be the bucket itself.
  StatusOr<ObjectUrl> Parse(const std::string& path, bool directory) const {
    StatusOr<ObjectUrl> url = ParseObjectUrl(path);
    if (!url.ok()) return url.status();
    if (url->scheme != client_->settings().scheme) {
      return Status::InvalidArgument(path + ": this storage serves " + client_->settings().scheme +
                                     "://, not " + url->scheme + "://");
    }
    if (!directory && (url->key.empty() || url->key.ends_with('/'))) {
      return Status::InvalidArgument(path + " names a directory, not a file");
    }
    return url;
  }

  std::shared_ptr<const S3Client> client_;
};

}  // namespace

std::unique_ptr<Storage> MakeLocalStorage() { return std::make_unique<LocalStorage>(); }

std::unique_ptr<Storage> MakeObjectStorage(std::shared_ptr<const S3Client> client) {
  return std::make_unique<ObjectStorage>(std::move(client));
}

Status CheckStoragePath(std::string_view path) {
  if (!IsStorageUrl(path)) return Status::OK();
  return ParseObjectUrl(path).status();
}

StatusOr<Storage*> StorageFor(std::string_view path) {
  static LocalStorage* const local = new LocalStorage();
  if (!IsStorageUrl(path)) return static_cast<Storage*>(local);
  StatusOr<ObjectUrl> url = ParseObjectUrl(path);
  if (!url.ok()) return url.status();
  // One storage per scheme for the life of the process (never destroyed: other threads may
  // still use it at exit).
  static std::mutex mutex;
  static auto* const by_scheme = new std::map<std::string, Storage*>();
  std::lock_guard<std::mutex> lock(mutex);
  auto found = by_scheme->find(url->scheme);
  if (found != by_scheme->end()) return found->second;
  StatusOr<S3Settings> settings = ResolveS3Settings(url->scheme, ProcessEnvironment());
  if (!settings.ok()) {
    return Status::InvalidArgument(std::string(path) + ": " + settings.status().message());
  }
  Storage* storage =
      MakeObjectStorage(std::make_shared<const S3Client>(*std::move(settings))).release();
  by_scheme->emplace(url->scheme, storage);
  return storage;
}

std::string JoinStoragePath(std::string_view directory, std::string_view name) {
  std::string joined(directory);
  if (!joined.empty() && !joined.ends_with('/')) joined += '/';
  joined += name;
  return joined;
}

StatusOr<std::string> ReadStorageFile(const std::string& path, size_t max_bytes) {
  StatusOr<Storage*> storage = StorageFor(path);
  if (!storage.ok()) return storage.status();
  return (*storage)->ReadFile(path, max_bytes);
}

StatusOr<std::string> ReadStorageFileRange(const std::string& path, uint64_t offset,
                                           size_t max_bytes) {
  StatusOr<Storage*> storage = StorageFor(path);
  if (!storage.ok()) return storage.status();
  return (*storage)->ReadFileRange(path, offset, max_bytes);
}

Status WriteStorageFileAtomically(const std::string& path, std::string_view contents) {
  StatusOr<Storage*> storage = StorageFor(path);
  if (!storage.ok()) return storage.status();
  return (*storage)->WriteFileAtomically(path, contents);
}

StatusOr<std::vector<StorageEntry>> ListStorageDirectory(const std::string& path) {
  StatusOr<Storage*> storage = StorageFor(path);
  if (!storage.ok()) return storage.status();
  return (*storage)->ListDirectory(path);
}

Status RemoveStorageFile(const std::string& path) {
  StatusOr<Storage*> storage = StorageFor(path);
  if (!storage.ok()) return storage.status();
  return (*storage)->RemoveFile(path);
}

StatusOr<bool> StorageFileExists(const std::string& path) {
  StatusOr<Storage*> storage = StorageFor(path);
  if (!storage.ok()) return storage.status();
  return (*storage)->FileExists(path);
}

StatusOr<uint64_t> StorageFileSize(const std::string& path) {
  StatusOr<Storage*> storage = StorageFor(path);
  if (!storage.ok()) return storage.status();
  return (*storage)->FileSize(path);
}

}  // namespace cohort
