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

// Reads every record of a TFRecord file and checks both CRCs of each. A torn final record (a
// writer that died mid-write) is an error too, naming the file and the byte offset.
StatusOr<std::vector<std::string>> ReadTfRecordFile(const std::string& path);

}  // namespace cohort::train
