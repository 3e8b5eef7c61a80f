#include "kube/client/watch_stream.h"

#include "kube/client/server_status.h"

namespace cohort::kube {

StatusOr<bool> WatchLineSplitter::Feed(std::string_view bytes,
                                       const std::function<bool(std::string_view)>& on_line) {
  while (!bytes.empty()) {
    size_t newline = bytes.find('\n');
    size_t take = newline == std::string_view::npos ? bytes.size() : newline;
    if (pending_.size() + take > max_line_bytes_) {
      return Status::InvalidArgument("a watch event is longer than the bound of " +
                                     std::to_string(max_line_bytes_) + " bytes");
    }
    pending_.append(bytes.substr(0, take));
    if (newline == std::string_view::npos) break;
    bytes.remove_prefix(newline + 1);
    std::string line = std::move(pending_);
    pending_.clear();
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) continue;
    if (!on_line(line)) return false;
  }
  return true;
}

StatusOr<WatchEvent> ParseWatchEvent(std::string_view line, const std::string& action) {
  nlohmann::json event = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (event.is_discarded() || !event.is_object() || !event.contains("type") ||
      !event["type"].is_string() || !event.contains("object") || !event["object"].is_object()) {
    return Status::Internal("cannot " + action + ": the server sent a line that is not a watch " +
                            "event: " + std::string(line.substr(0, 200)));
  }
  const std::string type = event["type"];
  WatchEvent parsed;
  if (type == "ADDED") {
    parsed.type = WatchEvent::Type::kAdded;
  } else if (type == "MODIFIED") {
    parsed.type = WatchEvent::Type::kModified;
  } else if (type == "DELETED") {
    parsed.type = WatchEvent::Type::kDeleted;
  } else if (type == "BOOKMARK") {
    parsed.type = WatchEvent::Type::kBookmark;
  } else if (type == "ERROR") {
    return StatusFromServerStatus(event["object"], action);
  } else {
    return Status::Internal("cannot " + action + ": unknown watch event type \"" + type + "\"");
  }
  parsed.object = std::move(event["object"]);
  return parsed;
}

}  // namespace cohort::kube
