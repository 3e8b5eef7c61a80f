// Checksums of the files Cohort reads back: backups, saved models, parameter-server shards.
//
// Every such file is written with a FileChecksum (its name, size and SHA-256) recorded in the
// manifest or index that lists it, and every read verifies the bytes against that record before
// anything is decoded. A mismatch is a Status naming the file, what the record expected and what
// was found; the caller never loads the bytes. The record sits beside the file list of its
// manifest, so the same manifest serves a copy in object storage, whose stores check SHA-256 on
// upload (S3's x-amz-checksum-sha256) and let a reader check it after a download.
//
// SHA-256 is OpenSSL's (libssl-dev, already a dependency of the transport): no hand-written
// digest, hardware-accelerated where the CPU has SHA extensions, and strong enough that a
// mixed-up file (a shard of another step, a model of another run) never matches by chance, which
// a 32-bit CRC cannot promise across millions of files.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

#include "base/status.h"

namespace cohort {

// What a manifest records about one file it lists.
struct FileChecksum {
  std::string file;    // the name inside the manifest's directory (no '/')
  uint64_t size = 0;   // bytes
  std::string sha256;  // 64 lower-case hex digits

  bool operator==(const FileChecksum&) const = default;
};

// SHA-256 of `bytes` as 64 lower-case hex digits.
std::string Sha256Hex(std::string_view bytes);

// The record of `bytes`, to be written as the file named `file`.
FileChecksum ChecksumOf(const std::string& file, std::string_view bytes);

// Whether `text` is 64 lower-case hex digits, the form Sha256Hex writes (for manifest readers).
bool IsSha256Hex(std::string_view text);

// OK when `bytes` (read from `path`) have the size and SHA-256 that `expected` records; otherwise
// FailedPrecondition "<path>: checksum mismatch: expected <size> bytes sha256 <hex>, found <size>
// bytes sha256 <hex>", so that a person sees which file is bad and how.
Status VerifyChecksum(const std::filesystem::path& path, std::string_view bytes,
                      const FileChecksum& expected);

// Writes `bytes` to `path` atomically (base/file.h; an s3:// or gs:// path as one whole object,
// base/storage.h) and returns their record, named by the path's file name, for the manifest that
// will list the file.
StatusOr<FileChecksum> WriteFileWithChecksum(const std::filesystem::path& path,
                                             std::string_view bytes);

// Reads <directory>/<expected.file> (bounded by its recorded size, so a file that grew is caught
// without reading it all) and verifies it: the bytes, or the read's error, or the mismatch. The
// directory may be an s3:// or gs:// prefix (base/storage.h).
StatusOr<std::string> ReadVerifiedFile(const std::filesystem::path& directory,
                                       const FileChecksum& expected);

}  // namespace cohort
