#include "train/data/idx_file.h"

#include <zlib.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>

#include "base/file.h"
#include "base/storage.h"

namespace cohort::train {
namespace {

constexpr uint8_t kUnsignedByteType = 0x08;
// Far above any real data set; stops a corrupt header from asking for terabytes.
constexpr int64_t kMaxElements = int64_t{1} << 34;

bool IsGzip(const std::string& bytes) {
  return bytes.size() >= 2 && static_cast<uint8_t>(bytes[0]) == 0x1f &&
         static_cast<uint8_t>(bytes[1]) == 0x8b;
}

StatusOr<std::string> Gunzip(const std::string& path, const std::string& compressed,
                             size_t max_bytes) {
  z_stream stream{};
  // 16 + MAX_WBITS: expect a gzip header and trailer rather than a raw zlib stream.
  if (inflateInit2(&stream, 16 + MAX_WBITS) != Z_OK) {
    return Status::Internal(path + ": cannot initialise zlib");
  }
  stream.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(compressed.data()));
  stream.avail_in = static_cast<uInt>(compressed.size());
  std::string out;
  char chunk[1 << 16];
  int result = Z_OK;
  while (result != Z_STREAM_END) {
    stream.next_out = reinterpret_cast<Bytef*>(chunk);
    stream.avail_out = sizeof(chunk);
    result = inflate(&stream, Z_NO_FLUSH);
    out.append(chunk, sizeof(chunk) - stream.avail_out);
    if (out.size() > max_bytes) {
      inflateEnd(&stream);
      return Status::InvalidArgument(path + ": expands to more than " + std::to_string(max_bytes) +
                                     " bytes when decompressed, beyond any IDX data set read here");
    }
    if (result == Z_STREAM_END) break;
    if (result == Z_BUF_ERROR ||
        (result == Z_OK && stream.avail_in == 0 && stream.avail_out != 0)) {
      inflateEnd(&stream);
      return Status::InvalidArgument(path + ": truncated gzip stream (ends after " +
                                     std::to_string(out.size()) + " uncompressed bytes)");
    }
    if (result != Z_OK) {
      std::string reason = stream.msg != nullptr ? stream.msg : "error " + std::to_string(result);
      inflateEnd(&stream);
      return Status::InvalidArgument(path + ": corrupt gzip data: " + reason);
    }
  }
  inflateEnd(&stream);
  return out;
}

std::string Hex(uint8_t byte) {
  static const char kDigits[] = "0123456789abcdef";
  return std::string("0x") + kDigits[byte >> 4] + kDigits[byte & 0xf];
}

uint32_t ReadBigEndian32(const std::string& bytes, size_t offset) {
  uint32_t value = 0;
  for (int i = 0; i < 4; ++i) value = (value << 8) | static_cast<uint8_t>(bytes[offset + i]);
  return value;
}

}  // namespace

StatusOr<IdxArray> ReadIdxFile(const std::string& path, size_t max_bytes) {
  auto raw = ReadStorageFile(path, max_bytes);  // a local file, or an object (base/storage.h)
  if (raw.status().code() == Status::Code::kNotFound) {
    return Status::NotFound(path + ": no such file");
  }
  if (!raw.ok()) return raw.status();
  std::string bytes;
  if (IsGzip(*raw)) {
    auto inflated = Gunzip(path, *raw, max_bytes);
    if (!inflated.ok()) return inflated.status();
    bytes = std::move(inflated).value();
  } else {
    bytes = std::move(raw).value();
  }

  if (bytes.size() < 4) {
    return Status::InvalidArgument(path + ": truncated: " + std::to_string(bytes.size()) +
                                   " bytes, shorter than the 4-byte IDX magic");
  }
  const auto b0 = static_cast<uint8_t>(bytes[0]), b1 = static_cast<uint8_t>(bytes[1]);
  const auto type = static_cast<uint8_t>(bytes[2]), rank = static_cast<uint8_t>(bytes[3]);
  if (b0 != 0 || b1 != 0 || rank == 0) {
    return Status::InvalidArgument(path + ": bad magic " + Hex(b0) + " " + Hex(b1) + " " +
                                   Hex(type) + " " + Hex(rank) +
                                   ": neither an IDX file (00 00 type rank) nor gzip");
  }
  if (type != kUnsignedByteType) {
    return Status::InvalidArgument(path + ": IDX element type " + Hex(type) +
                                   " is not supported (only unsigned bytes, 0x08)");
  }
  const size_t header = 4 + 4 * static_cast<size_t>(rank);
  if (bytes.size() < header) {
    return Status::InvalidArgument(path + ": truncated: the header needs " +
                                   std::to_string(header) + " bytes, the file has " +
                                   std::to_string(bytes.size()));
  }
  IdxArray array;
  int64_t elements = 1;
  std::string shape;
  for (int d = 0; d < rank; ++d) {
    const int64_t size = ReadBigEndian32(bytes, 4 + 4 * d);
    array.dims.push_back(size);
    shape += (d == 0 ? "" : "x") + std::to_string(size);
    elements *= size;
    if (elements > kMaxElements) {
      return Status::InvalidArgument(path + ": header announces an absurd shape " + shape);
    }
  }
  const size_t payload = bytes.size() - header;
  if (payload < static_cast<size_t>(elements)) {
    return Status::InvalidArgument(path + ": truncated: header says " + shape + " = " +
                                   std::to_string(elements) + " bytes of data, the file has " +
                                   std::to_string(payload));
  }
  if (payload > static_cast<size_t>(elements)) {
    return Status::InvalidArgument(path + ": " + std::to_string(payload - elements) +
                                   " unexpected bytes after the " + shape + " array");
  }
  array.data.assign(bytes.begin() + header, bytes.end());
  return array;
}

}  // namespace cohort::train
