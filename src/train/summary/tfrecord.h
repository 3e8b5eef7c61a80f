// TFRecord framing: the container format of TensorBoard event files.
//
// Each record is, little-endian:
//   uint64 length
//   uint32 masked CRC-32C of the 8 length bytes
//   byte   data[length]
//   uint32 masked CRC-32C of data
// The length CRC lets a reader tell a torn tail (a writer killed mid-record) from a huge record.
#pragma once

#include <cstdio>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace cohort::train {

// Appends the framing of one record with `data` as payload to `out`.
void AppendTfRecord(std::string_view data, std::string* out);

// Writes records to a file it owns. Not thread-safe: one writer per file.
class TfRecordWriter {
 public:
  // Creates (or truncates) `path`.
  static StatusOr<std::unique_ptr<TfRecordWriter>> Create(const std::string& path);
  ~TfRecordWriter();

  TfRecordWriter(const TfRecordWriter&) = delete;
  TfRecordWriter& operator=(const TfRecordWriter&) = delete;

  // Buffers one record; Flush makes it visible to readers.
  Status Write(std::string_view data);
  Status Flush();
  const std::string& path() const { return path_; }

 private:
  TfRecordWriter(std::string path, std::FILE* file) : path_(std::move(path)), file_(file) {}
  std::string path_;
  std::FILE* file_;
};

// The whole records at the start of a span of a TFRecord file, as ScanTfRecords finds them.
struct TfRecordScan {
  std::vector<std::string_view> records;  // payloads, pointing into the scanned bytes
  // Bytes of the span that the records take; what follows is an incomplete record (a writer
  // mid-record, or one killed there) to read again once the file has grown.
  size_t consumed = 0;
  // Not OK when a record is corrupt: a CRC mismatch, or a length over the bound. The records
  // before it are good; nothing after it can be trusted.
  Status corruption;
};

// Scans the records of `bytes`, a span of the TFRecord file `name` that starts on a record
// boundary at byte `offset` of the file, checking both CRCs of each and refusing a record longer
// than `max_record_bytes` before anything of it is read. An incomplete last record is left
// unconsumed, not an error. Corruption messages name the file and the byte offset.
TfRecordScan ScanTfRecords(std::string_view bytes, const std::string& name, uint64_t offset,
                           uint64_t max_record_bytes);

// Reads every record of a TFRecord file and checks both CRCs of each. A torn final record (a
// writer that died mid-write) is an error too, naming the file and the byte offset.
StatusOr<std::vector<std::string>> ReadTfRecordFile(const std::string& path);

}  // namespace cohort::train
