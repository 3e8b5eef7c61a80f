// IDX files: the array format of MNIST and Fashion-MNIST.
//
// An IDX file is a big-endian header, magic = 0x00 0x00 <type> <number of dimensions>, then one
// uint32 size per dimension, then the elements in row-major order. MNIST-style data sets use the
// unsigned-byte type (0x08) only, which is the only type read here. Files may be gzip-compressed
// (as Debian and the original site ship them) or plain; the reader tells them apart by content,
// not by name.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"

namespace cohort::train {

struct IdxArray {
  std::vector<int64_t> dims;  // e.g. {60000, 28, 28}
  std::vector<uint8_t> data;  // product(dims) bytes
};

// The most bytes an IDX file may hold, on disk or once decompressed: far above MNIST-style data
// sets (Fashion-MNIST's training images are 47 MB), far below what would exhaust memory, so a
// small .gz that expands without end (a "gzip bomb") is refused rather than read.
inline constexpr size_t kMaxIdxBytes = size_t{1} << 30;

// Reads and checks one IDX file. Every error names the file and says what is wrong with it:
// missing, not gzip or IDX (bad magic), an unsupported element type, a corrupt or truncated gzip
// stream, more than `max_bytes` (compressed or not), fewer bytes than the header announces, or
// trailing bytes after the array.
StatusOr<IdxArray> ReadIdxFile(const std::string& path, size_t max_bytes = kMaxIdxBytes);

}  // namespace cohort::train
