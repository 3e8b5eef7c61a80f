// A strict reader of CSV files (RFC 4180), for data files whose every error should be named.
//
// Data sets arrive as CSV, and a CSV error usually surfaces far from its cause: a company name
// with an unquoted comma shifts every later column, and a file cut short by a crashed copy loses
// its last rows silently. This reader checks what RFC 4180 allows and nothing more: fields are
// separated by commas; a field may be enclosed in double quotes, and then may contain commas,
// line breaks and doubled quotes ("" for one "); records end in LF or CRLF. Everything else is an
// error that names the file, the line and the column (with the column's header name):
//
//   data.csv:12:15 (company): quote inside an unquoted field
//   data.csv:12:15 (company): text after the closing quote of a quoted field
//   data.csv:40:3 (fare): the file ends inside a quoted field
//   data.csv:41: the last line has no line break: the file is truncated
//
// The last rule is stricter than RFC 4180, which allows a final record without a line break:
// writers in this project always end the last record, so a missing line break means the file
// was cut short, possibly in the middle of a number that would otherwise still parse.
//
// After a malformed record the reader has moved past it (to the next line break outside quotes),
// so a caller that skips bad rows can keep reading. Files may be gzip-compressed; zlib tells them
// apart by content. The whole file is read into memory: the data sets here are tens of megabytes.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "status.h"

namespace cohort::taxi {

struct CsvRecord {
  int64_t line = 0;  // the line of the file on which the record starts, 1-based
  std::vector<std::string> fields;
};

class CsvReader {
 public:
  // Reads the file and its first record, the header. Fails when the file is missing or
  // unreadable, is a corrupt gzip stream, or is empty.
  static StatusOr<CsvReader> Open(const std::string& path);

  const std::string& path() const { return path_; }
  const std::vector<std::string>& header() const { return header_; }

  // Reads the next record into `record` and returns true, or returns false at the end of the
  // file. A malformed record is an error (see above); the reader then stands at the next record.
  StatusOr<bool> Next(CsvRecord* record);

  // "path:line:column (name)" for a 0-based column index; the name is the header's, when the
  // header has that many columns.
  std::string Where(int64_t line, size_t column) const;

 private:
  CsvReader(std::string path, std::string contents)
      : path_(std::move(path)), contents_(std::move(contents)) {}

  // Parses one record starting at position_ into `fields`.
  Status ParseRecord(std::vector<std::string>* fields);
  // After an error: moves past the rest of the record (to the next line break outside quotes).
  void SkipRestOfLine();

  std::string path_;
  std::string contents_;
  size_t position_ = 0;
  int64_t line_ = 1;  // the line position_ is on
  std::vector<std::string> header_;
};

// Appends `field` to `line`, quoted when it contains a comma, a quote or a line break (quotes
// doubled), as RFC 4180 asks and as CsvReader reads it back.
void AppendCsvField(const std::string& field, std::string* line);

}  // namespace cohort::taxi
