#include "job/log_policy.h"

namespace cohort::job {

std::string ToString(LogPolicyAction action) {
  return action == LogPolicyAction::kPermanent ? "permanent" : "retryable";
}

StatusOr<std::vector<LogPolicy>> ParseLogPolicies(const nlohmann::json& rules,
                                                  const std::string& where) {
  if (!rules.is_array()) {
    return Status::InvalidArgument(where + ": log policies must be a list of " +
                                   "{\"name\", \"pattern\", \"action\"}, not " +
                                   std::string(rules.type_name()));
  }
  if (rules.size() > kMaxLogPolicies) {
    return Status::InvalidArgument(where + ": " + std::to_string(rules.size()) +
                                   " log policies, more than the " +
                                   std::to_string(kMaxLogPolicies) + " allowed");
  }
  std::vector<LogPolicy> policies;
  for (size_t index = 0; index < rules.size(); ++index) {
    const nlohmann::json& rule = rules[index];
    const std::string at = where + "[" + std::to_string(index) + "]";
    if (!rule.is_object()) {
      return Status::InvalidArgument(at + ": a log policy is an object with a pattern and an " +
                                     "action, not " + std::string(rule.type_name()));
    }
    for (const auto& [key, value] : rule.items()) {
      if (key != "name" && key != "pattern" && key != "action") {
        return Status::InvalidArgument(at + ": unknown field \"" + key +
                                       "\" (a log policy has name, pattern and action)");
      }
      if (!value.is_string()) {
        return Status::InvalidArgument(at + "." + key + ": must be a string");
      }
    }
    LogPolicy policy;
    policy.pattern = rule.value("pattern", "");
    if (policy.pattern.empty()) return Status::InvalidArgument(at + ".pattern: required");
    if (policy.pattern.size() > kMaxLogPolicyPatternBytes) {
      return Status::InvalidArgument(at + ".pattern: longer than " +
                                     std::to_string(kMaxLogPolicyPatternBytes) + " bytes");
    }
    const std::string action = rule.value("action", "");
    if (action == "permanent") {
      policy.action = LogPolicyAction::kPermanent;
    } else if (action == "retryable") {
      policy.action = LogPolicyAction::kRetryable;
    } else {
      return Status::InvalidArgument(at + ".action: \"" + action +
                                     "\" is not one of permanent, retryable");
    }
    policy.name = rule.value("name", "");
    if (policy.name.empty()) policy.name = policy.pattern;
    try {
      policy.regex = std::make_shared<const std::regex>(policy.pattern, std::regex::ECMAScript);
    } catch (const std::regex_error& error) {
      return Status::InvalidArgument(at + ".pattern: \"" + policy.pattern +
                                     "\" is not a valid regular expression: " + error.what());
    }
    policies.push_back(std::move(policy));
  }
  return policies;
}

StatusOr<std::vector<LogPolicy>> JobLogPolicies(const Job& job) {
  auto found = job.metadata.annotations.find(kLogPoliciesAnnotation);
  if (found == job.metadata.annotations.end()) return std::vector<LogPolicy>{};
  const std::string where = std::string("metadata.annotations[") + kLogPoliciesAnnotation + "]";
  nlohmann::json rules = nlohmann::json::parse(found->second, nullptr, /*allow_exceptions=*/false);
  if (rules.is_discarded()) {
    return Status::InvalidArgument(where + ": not JSON; write a list such as [{\"pattern\": " +
                                   "\"CUDA out of memory\", \"action\": \"permanent\"}]");
  }
  return ParseLogPolicies(rules, where);
}

const std::vector<LogPolicy>& BuiltInLogPolicies() {
  static const std::vector<LogPolicy> policies = [] {
    StatusOr<std::vector<LogPolicy>> parsed = ParseLogPolicies(
        nlohmann::json::parse(
            R"([{"name": "disk-full", "pattern": "No space left on device", "action": "permanent"}])"),
        "Cohort's built-in log policies");
    return parsed.ok() ? *parsed : std::vector<LogPolicy>{};
  }();
  return policies;
}

std::optional<LogPolicyMatch> MatchLogPolicies(const std::vector<LogPolicy>& policies,
                                               const std::vector<std::string>& lines) {
  for (const LogPolicy& policy : policies) {
    for (const std::string& line : lines) {
      const std::string searched = line.substr(0, kMaxMatchedLineBytes);
      bool matched = false;
      try {
        matched = std::regex_search(searched, *policy.regex);
      } catch (const std::regex_error&) {
        // The library gives up on a pathological pattern and line (error_complexity or
        // error_stack): that line does not match.
      }
      if (matched) return LogPolicyMatch{policy.name, policy.action, searched};
    }
  }
  return std::nullopt;
}

std::optional<size_t> LastErrorLine(const std::vector<std::string>& lines) {
  static const std::regex kErrorWords(
      R"((error|exception)\b|\b(fatal|traceback|failed|failure|cannot|can't|denied|refused|)"
      R"(not found|no such|invalid|panic|abort|aborted)\b)",
      std::regex::ECMAScript | std::regex::icase | std::regex::optimize);
  for (size_t i = lines.size(); i-- > 0;) {
    try {
      if (std::regex_search(lines[i].substr(0, kMaxMatchedLineBytes), kErrorWords)) return i;
    } catch (const std::regex_error&) {
      // As in MatchLogPolicies: a line the library gives up on does not match.
    }
  }
  return std::nullopt;
}

}  // namespace cohort::job
