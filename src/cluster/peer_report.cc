#include "cluster/peer_report.h"

#include <cctype>
#include <charconv>

namespace cohort::cluster {
namespace {

constexpr std::string_view kPrefix = "peer ";

bool IsWord(std::string_view text) {
  if (text.empty()) return false;
  for (char c : text) {
    if (!std::islower(static_cast<unsigned char>(c)) && c != '_') return false;
  }
  return true;
}

}  // namespace

std::string FormatPeerReport(const PeerReport& report) {
  std::string text = std::string(kPrefix) + report.peer.ToString() + " " + report.what;
  if (!report.detail.empty()) text += " (" + report.detail + ")";
  for (char& c : text) {
    if (c == '\n' || c == '\r') c = ' ';
  }
  if (text.size() > kMaxTerminationMessageBytes) text.resize(kMaxTerminationMessageBytes);
  return text;
}

std::optional<PeerReport> ParsePeerReport(std::string_view message) {
  message = message.substr(0, kMaxTerminationMessageBytes);
  message = message.substr(0, message.find('\n'));
  if (message.substr(0, kPrefix.size()) != kPrefix) return std::nullopt;
  message.remove_prefix(kPrefix.size());
  // "<type>:<index> <what>[ (<detail>)]"
  const size_t colon = message.find(':');
  const size_t space = message.find(' ');
  if (colon == std::string_view::npos || space == std::string_view::npos || colon > space) {
    return std::nullopt;
  }
  PeerReport report;
  const std::string_view type = message.substr(0, colon);
  if (!IsWord(type)) return std::nullopt;
  report.peer.type = std::string(type);
  const std::string_view index = message.substr(colon + 1, space - colon - 1);
  const auto [end, error] =
      std::from_chars(index.data(), index.data() + index.size(), report.peer.index);
  if (error != std::errc() || end != index.data() + index.size() || report.peer.index < 0) {
    return std::nullopt;
  }
  std::string_view rest = message.substr(space + 1);
  const size_t what_end = rest.find(' ');
  const std::string_view what = rest.substr(0, what_end);
  if (!IsWord(what)) return std::nullopt;
  report.what = std::string(what);
  if (what_end != std::string_view::npos) {
    std::string_view detail = rest.substr(what_end + 1);
    if (detail.size() < 2 || detail.front() != '(' || detail.back() != ')') return std::nullopt;
    report.detail = std::string(detail.substr(1, detail.size() - 2));
  }
  return report;
}

}  // namespace cohort::cluster
