#include "csv_reader.h"

#include <zlib.h>

#include <cerrno>
#include <cstring>

namespace cohort::taxi {
namespace {

// Reads a plain or gzip-compressed file whole: zlib's gzread passes plain files through.
StatusOr<std::string> ReadPossiblyCompressedFile(const std::string& path) {
  errno = 0;
  gzFile file = gzopen(path.c_str(), "rb");
  if (file == nullptr) {
    if (errno == ENOENT) return Status::NotFound(path + ": no such file");
    return Status::IOError(path + ": cannot open: " + std::strerror(errno));
  }
  gzbuffer(file, 1 << 17);
  std::string contents;
  char chunk[1 << 16];
  while (true) {
    const int read = gzread(file, chunk, sizeof(chunk));
    if (read < 0) {
      int code = 0;
      std::string reason = gzerror(file, &code);
      gzclose(file);
      return Status::InvalidArgument(path + ": cannot read: " + reason);
    }
    if (read == 0) break;
    contents.append(chunk, static_cast<size_t>(read));
  }
  int code = 0;
  const std::string reason = gzerror(file, &code);
  gzclose(file);
  if (code != Z_OK) return Status::InvalidArgument(path + ": cannot read: " + reason);
  return contents;
}

}  // namespace

StatusOr<CsvReader> CsvReader::Open(const std::string& path) {
  auto contents = ReadPossiblyCompressedFile(path);
  if (!contents.ok()) return contents.status();
  if (contents->empty()) return Status::InvalidArgument(path + ": empty file, no header row");
  CsvReader reader(path, std::move(contents).value());
  CsvRecord header;
  auto read = reader.Next(&header);
  if (!read.ok()) return read.status();
  reader.header_ = std::move(header.fields);
  return reader;
}

std::string CsvReader::Where(int64_t line, size_t column) const {
  std::string where = path_ + ":" + std::to_string(line) + ":" + std::to_string(column + 1);
  if (column < header_.size()) where += " (" + header_[column] + ")";
  return where;
}

StatusOr<bool> CsvReader::Next(CsvRecord* record) {
  if (position_ >= contents_.size()) return false;
  record->line = line_;
  Status status = ParseRecord(&record->fields);
  if (!status.ok()) {
    SkipRestOfLine();
    return status;
  }
  return true;
}

Status CsvReader::ParseRecord(std::vector<std::string>* fields) {
  const std::string& text = contents_;
  const int64_t record_line = line_;
  size_t count = 0;
  while (true) {
    if (fields->size() <= count) fields->emplace_back();
    std::string& field = (*fields)[count];
    field.clear();
    const size_t column = count++;
    if (position_ < text.size() && text[position_] == '"') {
      // Quoted: runs to the next quote that is not doubled.
      const int64_t opening_line = line_;
      ++position_;
      while (true) {
        const size_t quote = text.find('"', position_);
        if (quote == std::string::npos) {
          position_ = text.size();
          return Status::InvalidArgument(Where(opening_line, column) +
                                         ": the file ends inside a quoted field");
        }
        for (size_t i = position_; i < quote; ++i) line_ += text[i] == '\n' ? 1 : 0;
        field.append(text, position_, quote - position_);
        position_ = quote + 1;
        if (position_ < text.size() && text[position_] == '"') {
          field.push_back('"');
          ++position_;
          continue;
        }
        break;
      }
      if (position_ < text.size() && text[position_] != ',' && text[position_] != '\n' &&
          !(text[position_] == '\r' && position_ + 1 < text.size() &&
            text[position_ + 1] == '\n')) {
        return Status::InvalidArgument(Where(line_, column) +
                                       ": text after the closing quote of a quoted field");
      }
    } else {
      const size_t end = text.find_first_of(",\n\"", position_);
      const size_t stop = end == std::string::npos ? text.size() : end;
      if (stop < text.size() && text[stop] == '"') {
        position_ = stop;
        return Status::InvalidArgument(Where(line_, column) + ": quote inside an unquoted field");
      }
      size_t value_end = stop;
      if (stop < text.size() && text[stop] == '\n' && value_end > position_ &&
          text[value_end - 1] == '\r') {
        --value_end;  // CRLF
      }
      field.assign(text, position_, value_end - position_);
      position_ = stop;
    }
    if (position_ >= text.size()) {
      fields->resize(count);
      return Status::InvalidArgument(path_ + ":" + std::to_string(record_line) +
                                     ": the last line has no line break: the file is truncated");
    }
    if (text[position_] == '\r') ++position_;  // only reached as part of CRLF, checked above
    if (text[position_] == ',') {
      ++position_;
      continue;
    }
    // A line break ends the record.
    ++position_;
    ++line_;
    fields->resize(count);
    return Status::OK();
  }
}

void CsvReader::SkipRestOfLine() {
  // The error may have left position_ inside a field; resynchronise on the next line break. A
  // quote-aware skip would be no better here: the quoting is what went wrong.
  const size_t end = contents_.find('\n', position_);
  if (end == std::string::npos) {
    position_ = contents_.size();
    return;
  }
  position_ = end + 1;
  ++line_;
}

void AppendCsvField(const std::string& field, std::string* line) {
  if (field.find_first_of(",\"\r\n") == std::string::npos) {
    line->append(field);
    return;
  }
  line->push_back('"');
  for (char c : field) {
    if (c == '"') line->push_back('"');
    line->push_back(c);
  }
  line->push_back('"');
}

}  // namespace cohort::taxi
