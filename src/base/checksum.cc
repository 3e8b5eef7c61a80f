#include "base/checksum.h"

#include <openssl/evp.h>

#include "base/file.h"
#include "base/hex.h"
#include "base/object_url.h"
#include "base/storage.h"

namespace cohort {

std::string Sha256Hex(std::string_view bytes) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  // EVP_Digest is one call with no state to leak; it fails only when out of memory.
  if (EVP_Digest(bytes.data(), bytes.size(), digest, &length, EVP_sha256(), nullptr) != 1) {
    return std::string(64, '?');  // never equal to a recorded digest, so the read fails loudly
  }
  return HexEncode(std::string_view(reinterpret_cast<const char*>(digest), length));
}

FileChecksum ChecksumOf(const std::string& file, std::string_view bytes) {
  return FileChecksum{file, bytes.size(), Sha256Hex(bytes)};
}

bool IsSha256Hex(std::string_view text) {
  if (text.size() != 64) return false;
  for (char c : text) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

Status VerifyChecksum(const std::filesystem::path& path, std::string_view bytes,
                      const FileChecksum& expected) {
  const std::string found = Sha256Hex(bytes);
  if (bytes.size() == expected.size && found == expected.sha256) return Status::OK();
  return Status::FailedPrecondition(path.string() + ": checksum mismatch: expected " +
                                    std::to_string(expected.size) + " bytes sha256 " +
                                    expected.sha256 + ", found " + std::to_string(bytes.size()) +
                                    " bytes sha256 " + found);
}

StatusOr<FileChecksum> WriteFileWithChecksum(const std::filesystem::path& path,
                                             std::string_view bytes) {
  if (IsStorageUrl(path.string())) {
    COHORT_RETURN_IF_ERROR(WriteStorageFileAtomically(path.string(), bytes));
  } else {
    COHORT_RETURN_IF_ERROR(WriteFileAtomically(path, bytes));
  }
  return ChecksumOf(path.filename().string(), bytes);
}

StatusOr<std::string> ReadVerifiedFile(const std::filesystem::path& directory,
                                       const FileChecksum& expected) {
  const std::filesystem::path path = directory / expected.file;
  // One byte more than recorded, so that a longer file reads as a size mismatch, not as an error
  // about a bound.
  const bool in_bucket = IsStorageUrl(path.string());
  StatusOr<std::string> bytes = in_bucket ? ReadStorageFile(path.string(), expected.size + 1)
                                          : ReadWholeFile(path, expected.size + 1);
  if (bytes.status().code() == Status::Code::kInvalidArgument &&
      (in_bucket || bytes.status().message().find("holds more than") != std::string::npos)) {
    return Status::FailedPrecondition(path.string() + ": checksum mismatch: expected " +
                                      std::to_string(expected.size) + " bytes, found a longer " +
                                      (in_bucket ? "object" : "file"));
  }
  if (!bytes.ok()) return bytes.status();
  COHORT_RETURN_IF_ERROR(VerifyChecksum(path, *bytes, expected));
  return bytes;
}

}  // namespace cohort
