#include "train/summary/tfrecord.h"

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <iterator>
#include <memory>

#include "base/file.h"
#include "train/summary/crc32c.h"

namespace cohort::train {
namespace {

void AppendLittleEndian(uint64_t value, int bytes, std::string* out) {
  for (int i = 0; i < bytes; ++i) out->push_back(static_cast<char>((value >> (8 * i)) & 0xffu));
}

uint64_t ReadLittleEndian(const char* data, int bytes) {
  uint64_t value = 0;
  for (int i = 0; i < bytes; ++i) {
    value |= static_cast<uint64_t>(static_cast<unsigned char>(data[i])) << (8 * i);
  }
  return value;
}

}  // namespace

void AppendTfRecord(std::string_view data, std::string* out) {
  std::string length;
  AppendLittleEndian(data.size(), 8, &length);
  out->append(length);
  AppendLittleEndian(crc32c::Mask(crc32c::Value(length)), 4, out);
  out->append(data);
  AppendLittleEndian(crc32c::Mask(crc32c::Value(data)), 4, out);
}

StatusOr<std::unique_ptr<TfRecordWriter>> TfRecordWriter::Create(const std::string& path) {
  std::FILE* file = std::fopen(path.c_str(), "wb");
  if (file == nullptr) {
    return Status::IOError("cannot create " + path + ": " + std::strerror(errno));
  }
  return std::unique_ptr<TfRecordWriter>(new TfRecordWriter(path, file));
}

TfRecordWriter::~TfRecordWriter() { std::fclose(file_); }

Status TfRecordWriter::Write(std::string_view data) {
  std::string framed;
  framed.reserve(data.size() + 16);
  AppendTfRecord(data, &framed);
  if (std::fwrite(framed.data(), 1, framed.size(), file_) != framed.size()) {
    return Status::IOError("cannot write " + path_ + ": " + std::strerror(errno));
  }
  return Status::OK();
}

Status TfRecordWriter::Flush() {
  if (std::fflush(file_) != 0) {
    return Status::IOError("cannot flush " + path_ + ": " + std::strerror(errno));
  }
  return Status::OK();
}

StatusOr<std::vector<std::string>> ReadTfRecordFile(const std::string& path) {
  StatusOr<std::string> contents = ReadWholeFile(path);
  if (!contents.ok()) return contents.status();
  const std::string& bytes = *contents;
  std::vector<std::string> records;
  size_t offset = 0;
  while (offset < bytes.size()) {
    const std::string where = path + ": record at byte " + std::to_string(offset);
    if (bytes.size() - offset < 12) return Status::InvalidArgument(where + ": truncated header");
    const uint64_t length = ReadLittleEndian(bytes.data() + offset, 8);
    const uint32_t length_crc =
        static_cast<uint32_t>(ReadLittleEndian(bytes.data() + offset + 8, 4));
    if (crc32c::Unmask(length_crc) != crc32c::Value(bytes.data() + offset, 8)) {
      return Status::InvalidArgument(where + ": length CRC mismatch");
    }
    if (bytes.size() - offset - 12 < length + 4) {
      return Status::InvalidArgument(where + ": truncated data (" + std::to_string(length) +
                                     " bytes announced)");
    }
    std::string data = bytes.substr(offset + 12, length);
    const uint32_t data_crc =
        static_cast<uint32_t>(ReadLittleEndian(bytes.data() + offset + 12 + length, 4));
    if (crc32c::Unmask(data_crc) != crc32c::Value(data)) {
      return Status::InvalidArgument(where + ": data CRC mismatch");
    }
    records.push_back(std::move(data));
    offset += 12 + length + 4;
  }
  return records;
}

}  // namespace cohort::train
