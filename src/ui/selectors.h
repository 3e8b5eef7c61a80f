// Kubernetes' list selectors, as the dashboard's API reads them: `labelSelector` on pods
// ("training.kubeflow.org/job-name=mnist,training.kubeflow.org/replica-type!=ps") and
// `fieldSelector` on events ("involvedObject.name=mnist").
//
//   StatusOr<Selector> selector = ParseSelector(text, "labelSelector");
//   if (selector->Matches(labels)) ...
//
// Requirements are `key=value`, `key==value`, `key!=value`, `key` (present) and `!key` (absent),
// separated by commas, as kubectl writes them; set forms (`in (...)`) are refused with a message.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"

namespace cohort::ui {

// A selector's text is at most this long.
inline constexpr size_t kMaxSelectorBytes = 1024;

struct Requirement {
  enum class Operator { kEquals, kNotEquals, kExists, kNotExists } op = Operator::kEquals;
  std::string key;
  std::string value;
};

class Selector {
 public:
  explicit Selector(std::vector<Requirement> requirements)
      : requirements_(std::move(requirements)) {}

  bool Matches(const std::map<std::string, std::string>& fields) const;
  // The value `key` must equal, if a requirement says so.
  std::optional<std::string> RequiredValue(const std::string& key) const;
  const std::vector<Requirement>& requirements() const { return requirements_; }

 private:
  std::vector<Requirement> requirements_;
};

// InvalidArgument naming `parameter` and what is wrong.
StatusOr<Selector> ParseSelector(const std::string& text, const std::string& parameter);

}  // namespace cohort::ui
