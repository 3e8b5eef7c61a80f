#include "ui/log_range.h"

#include <algorithm>
#include <string>

#include "exec/log_selection.h"

namespace cohort::ui {
namespace {

// A restart line is short; longer lines are never one, and need not be kept while scanning.
constexpr size_t kMaxRestartLineBytes = 4096;

bool IsRestartLine(std::string_view line) {
  if (line.size() > kMaxRestartLineBytes) return false;
  return exec::RestartLineTime(std::string(line)).has_value();
}

}  // namespace

Status RunIndex::Update(const FileReader& file) {
  uint64_t size = file.Size();
  if (size < scanned_) {
    scanned_ = 0;
    restart_offsets_.clear();
  }
  // The start of the line being read, and its first bytes (enough to tell a restart line).
  uint64_t line_start = scanned_;
  std::string line_head;
  bool line_too_long = false;
  uint64_t at = scanned_;
  while (at < size) {
    StatusOr<std::string> chunk =
        file.ReadAt(at, static_cast<size_t>(std::min<uint64_t>(kLogChunkBytes, size - at)));
    if (!chunk.ok()) return chunk.status();
    if (chunk->empty()) break;
    size_t position = 0;
    while (position < chunk->size()) {
      size_t newline = chunk->find('\n', position);
      size_t piece_end = newline == std::string::npos ? chunk->size() : newline;
      if (!line_too_long) {
        line_head.append(*chunk, position, piece_end - position);
        if (line_head.size() > kMaxRestartLineBytes) {
          line_too_long = true;
          line_head.clear();
        }
      }
      if (newline == std::string::npos) break;
      if (!line_too_long && IsRestartLine(line_head)) restart_offsets_.push_back(line_start);
      line_start = at + newline + 1;
      line_head.clear();
      line_too_long = false;
      position = newline + 1;
    }
    at += chunk->size();
  }
  scanned_ = line_start;  // a partial last line is scanned again once it is complete
  return Status::OK();
}

StatusOr<uint64_t> StartOfLastLines(const FileReader& file, uint64_t begin, uint64_t end,
                                    uint64_t lines) {
  if (lines == 0) return end;
  uint64_t position = end;
  uint64_t newlines_needed = lines;
  // A final newline ends the last line; it does not start one.
  bool skip_final_newline = true;
  while (position > begin) {
    uint64_t chunk_begin = position - std::min<uint64_t>(kLogChunkBytes, position - begin);
    StatusOr<std::string> chunk =
        file.ReadAt(chunk_begin, static_cast<size_t>(position - chunk_begin));
    if (!chunk.ok()) return chunk.status();
    for (size_t i = chunk->size(); i > 0; --i) {
      if ((*chunk)[i - 1] != '\n') {
        skip_final_newline = false;
        continue;
      }
      if (skip_final_newline) {
        skip_final_newline = false;
        continue;
      }
      if (--newlines_needed == 0) return chunk_begin + i;
    }
    position = chunk_begin;
  }
  return begin;
}

StatusOr<LogRange> SelectLogRange(const FileReader& file, const RunIndex& runs,
                                  const LogQuery& query) {
  const std::vector<uint64_t>& restarts = runs.restart_offsets();
  uint64_t size = file.Size();
  LogRange range{0, size};
  if (query.previous) {
    if (restarts.empty()) {
      return Status::FailedPrecondition(
          "previous terminated container not found: the replica has not been restarted");
    }
    range.end = restarts.back();
    range.begin = restarts.size() >= 2 ? restarts[restarts.size() - 2] : 0;
    if (restarts.size() >= 2) {
      // Without its restart line, as `cohort logs --previous`.
      StatusOr<std::string> head = file.ReadAt(
          range.begin, static_cast<size_t>(std::min<uint64_t>(range.end - range.begin, 4097)));
      if (!head.ok()) return head.status();
      size_t newline = head->find('\n');
      range.begin = newline == std::string::npos ? range.end : range.begin + newline + 1;
    }
  } else if (!query.all_runs && !restarts.empty()) {
    range.begin = restarts.back();
  }
  if (query.tail_lines) {
    StatusOr<uint64_t> start = StartOfLastLines(file, range.begin, range.end, *query.tail_lines);
    if (!start.ok()) return start.status();
    range.begin = *start;
  }
  if (query.limit_bytes && range.end - range.begin > *query.limit_bytes) {
    range.end = range.begin + *query.limit_bytes;
  }
  return range;
}

Status ForEachChunk(const FileReader& file, LogRange range,
                    const std::function<bool(std::string_view)>& sink) {
  uint64_t at = range.begin;
  while (at < range.end) {
    StatusOr<std::string> chunk =
        file.ReadAt(at, static_cast<size_t>(std::min<uint64_t>(kLogChunkBytes, range.end - at)));
    if (!chunk.ok()) return chunk.status();
    if (chunk->empty()) break;  // truncated meanwhile
    if (!sink(*chunk)) break;
    at += chunk->size();
  }
  return Status::OK();
}

}  // namespace cohort::ui
