// A watch response as it arrives: newline-separated JSON events ({"type": "ADDED", "object":
// {...}}), cut into pieces anywhere by the network, read line by line with a bound on a line.
#pragma once

#include <functional>
#include <string>
#include <string_view>

#include "base/status.h"
#include "kube/client/api.h"

namespace cohort::kube {

class WatchLineSplitter {
 public:
  explicit WatchLineSplitter(size_t max_line_bytes) : max_line_bytes_(max_line_bytes) {}

  // Appends `bytes` and hands each complete line (without its '\n'; empty lines skipped) to
  // `on_line`, in order, until it returns false. Returns false when `on_line` did;
  // InvalidArgument when a line grows past the bound.
  StatusOr<bool> Feed(std::string_view bytes,
                      const std::function<bool(std::string_view line)>& on_line);

  // Bytes of a line not yet complete.
  size_t pending_bytes() const { return pending_.size(); }

 private:
  const size_t max_line_bytes_;
  std::string pending_;
};

// One line of a watch: the event, or the error it carries. An ERROR event's metav1.Status is
// mapped as an HTTP answer would be (code 410 Expired/Gone: kOutOfRange). A line that is not an
// event: Internal. `action` ("watch Pods in default") prefixes messages.
StatusOr<WatchEvent> ParseWatchEvent(std::string_view line, const std::string& action);

}  // namespace cohort::kube
