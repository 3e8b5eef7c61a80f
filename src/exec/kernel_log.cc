#include "exec/kernel_log.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>

namespace cohort::exec {
namespace {

// The decimal number right after `marker` in `text`, if there is one.
std::optional<pid_t> NumberAfter(const std::string& text, const std::string& marker) {
  size_t at = text.find(marker);
  if (at == std::string::npos) return std::nullopt;
  at += marker.size();
  size_t end = at;
  while (end < text.size() && end - at < 10 && text[end] >= '0' && text[end] <= '9') ++end;
  if (end == at) return std::nullopt;
  return static_cast<pid_t>(std::strtol(text.substr(at, end - at).c_str(), nullptr, 10));
}

}  // namespace

std::optional<OomKill> ParseOomKillRecord(const std::string& record) {
  const size_t semicolon = record.find(';');
  if (semicolon == std::string::npos) return std::nullopt;
  const std::string prefix = record.substr(0, semicolon);
  const std::string text = record.substr(semicolon + 1);
  // prefix: priority,sequence,microseconds,flags[,...]
  const size_t first = prefix.find(',');
  const size_t second = first == std::string::npos ? first : prefix.find(',', first + 1);
  if (second == std::string::npos) return std::nullopt;
  const size_t third = prefix.find(',', second + 1);
  const std::string microseconds = prefix.substr(second + 1, third - second - 1);
  if (microseconds.empty() || microseconds.find_first_not_of("0123456789") != std::string::npos) {
    return std::nullopt;
  }
  std::optional<pid_t> pid;
  if (text.find("out of memory: Killed process ") != std::string::npos ||
      text.rfind("Out of memory: Killed process ", 0) == 0) {
    pid = NumberAfter(text, "Killed process ");
  } else if (text.rfind("oom-kill:", 0) == 0) {
    pid = NumberAfter(text, ",pid=");
  }
  if (!pid || *pid <= 0) return std::nullopt;
  return OomKill{*pid, std::strtoll(microseconds.c_str(), nullptr, 10)};
}

bool KernelLogRecordsOomKill(pid_t pid, int64_t since_microseconds) {
  const int fd = open("/dev/kmsg", O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return false;
  // Each read returns one whole record, from the oldest the kernel still holds.
  char record[8192];
  size_t total = 0;
  bool found = false;
  for (int reads = 0; !found && total < kMaxKernelLogBytes && reads < 100000; ++reads) {
    const ssize_t n = read(fd, record, sizeof record - 1);
    if (n < 0 && (errno == EINTR || errno == EPIPE)) continue;  // EPIPE: overwritten meanwhile
    if (n <= 0) break;                                          // EAGAIN: the end
    total += static_cast<size_t>(n);
    std::optional<OomKill> kill = ParseOomKillRecord(std::string(record, static_cast<size_t>(n)));
    found = kill && kill->pid == pid && kill->at_microseconds >= since_microseconds;
  }
  close(fd);
  return found;
}

}  // namespace cohort::exec
