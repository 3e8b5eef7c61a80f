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

TfRecordScan ScanTfRecords(std::string_view bytes, const std::string& name, uint64_t offset,
                           uint64_t max_record_bytes) {
  constexpr size_t kHeaderBytes = 12;  // length and its CRC
  constexpr size_t kFooterBytes = 4;   // the data's CRC
  TfRecordScan scan;
  size_t at = 0;
  while (bytes.size() - at >= kHeaderBytes) {
    // Built only for a message: a million-record file must not format a million of them.
    const auto where = [&] { return name + ": record at byte " + std::to_string(offset + at); };
    const char* header = bytes.data() + at;
    const uint64_t length = ReadLittleEndian(header, 8);
    const auto length_crc = static_cast<uint32_t>(ReadLittleEndian(header + 8, 4));
    if (crc32c::Unmask(length_crc) != crc32c::Value(header, 8)) {
      scan.corruption = Status::InvalidArgument(where() + ": length CRC mismatch");
      break;
    }
    if (length > max_record_bytes) {
      scan.corruption = Status::InvalidArgument(where() + ": " + std::to_string(length) +
                                                " bytes announced, more than the limit of " +
                                                std::to_string(max_record_bytes));
      break;
    }
    if (bytes.size() - at - kHeaderBytes < length + kFooterBytes) break;  // incomplete
    const std::string_view data = bytes.substr(at + kHeaderBytes, length);
    const auto data_crc =
        static_cast<uint32_t>(ReadLittleEndian(bytes.data() + at + kHeaderBytes + length, 4));
    if (crc32c::Unmask(data_crc) != crc32c::Value(data)) {
      scan.corruption = Status::InvalidArgument(where() + ": data CRC mismatch");
      break;
    }
    scan.records.push_back(data);
    at += kHeaderBytes + length + kFooterBytes;
  }
  scan.consumed = at;
  return scan;
}

StatusOr<std::vector<std::string>> ReadTfRecordFile(const std::string& path) {
  StatusOr<std::string> contents = ReadWholeFile(path);
  if (!contents.ok()) return contents.status();
  const TfRecordScan scan = ScanTfRecords(*contents, path, 0, contents->size());
  COHORT_RETURN_IF_ERROR(scan.corruption);
  if (scan.consumed < contents->size()) {
    return Status::InvalidArgument(path + ": record at byte " + std::to_string(scan.consumed) +
                                   ": truncated (the file ends inside it)");
  }
  return std::vector<std::string>(scan.records.begin(), scan.records.end());
}

}  // namespace cohort::train
