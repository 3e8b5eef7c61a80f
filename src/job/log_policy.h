// Log policies: rules on a replica's log that decide what its failure means, in the spirit of
// Determined's log_policies. A rule is a regular expression (ECMAScript syntax, searched in each
// line) and what a failure whose log matches it is:
//   permanent  not restarted, whatever the restart policy (e.g. "CUDA out of memory": the same
//              run would fail the same way); the job fails, its message quoting the line
//   retryable  restarted even where the policy would not (an ExitCode exit of 1-127); Never
//              still never restarts
// The first rule, in order, that matches a line of the failed run decides, and its first matching
// line is quoted in the failure's reason. A run that exited 0 is not a failure and no rule
// applies to it.
//
// Rules come from the job, the annotation cohort.dev/log-policies, whose value is a JSON list:
//   metadata:
//     annotations:
//       cohort.dev/log-policies: |
//         [{"name": "cuda-oom", "pattern": "CUDA out of memory", "action": "permanent"}]
// and from $COHORT_HOME/config (exec/local_jobs.h), a YAML or JSON file whose `logPolicies` holds
// the same list; the job's rules come first. `name` is optional (the pattern names the rule).
// Cohort's own rules (BuiltInLogPolicies) come last, so either place can override them.
#pragma once

#include <cstddef>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <regex>
#include <string>
#include <vector>

#include "base/status.h"
#include "job/common_types.h"

namespace cohort::job {

inline constexpr const char* kLogPoliciesAnnotation = "cohort.dev/log-policies";

// Bounds: rules are read from manifests and config files, and matched against untrusted output.
inline constexpr size_t kMaxLogPolicies = 64;
inline constexpr size_t kMaxLogPolicyPatternBytes = 1024;
// Only this much of a line is searched (and quoted), so a pattern's cost per line is bounded.
inline constexpr size_t kMaxMatchedLineBytes = 4096;

enum class LogPolicyAction { kPermanent, kRetryable };
std::string ToString(LogPolicyAction action);

struct LogPolicy {
  std::string name;  // as written, else the pattern
  std::string pattern;
  LogPolicyAction action = LogPolicyAction::kPermanent;
  std::shared_ptr<const std::regex> regex;  // compiled from pattern
};

// What matched: the rule and the line.
struct LogPolicyMatch {
  std::string policy;  // the rule's name
  LogPolicyAction action = LogPolicyAction::kPermanent;
  std::string line;  // the first matching line, cut to kMaxMatchedLineBytes
  bool operator==(const LogPolicyMatch& other) const {
    return policy == other.policy && action == other.action && line == other.line;
  }
};

// Reads a JSON list of rules. InvalidArgument naming `where` and the rule's index for anything
// wrong: not a list, an unknown field or action, a missing or over-long pattern, a pattern that
// is not a valid regular expression (with the library's reason), more than kMaxLogPolicies rules.
StatusOr<std::vector<LogPolicy>> ParseLogPolicies(const nlohmann::json& rules,
                                                  const std::string& where);

// The rules of the job's cohort.dev/log-policies annotation (none without it); errors name the
// annotation.
StatusOr<std::vector<LogPolicy>> JobLogPolicies(const Job& job);

// Cohort's own rules, matched after the job's and the config file's: "disk-full", a full file
// system ("No space left on device", as cohort-train and most programs report ENOSPC), is
// permanent, since a restart would fill the same disk again after redoing the work before it.
const std::vector<LogPolicy>& BuiltInLogPolicies();

// The first rule of `policies` that matches one of `lines` (the failed run's output, oldest
// first), with its first matching line; nullopt when none does.
std::optional<LogPolicyMatch> MatchLogPolicies(const std::vector<LogPolicy>& policies,
                                               const std::vector<std::string>& lines);

// Which line of a failed run's output (`lines`, oldest first) most likely says why it failed: the
// index of the last one that reads as an error (a word ending in "error" or "exception", as
// Python's "ValueError: ...", or the word "fatal", "traceback", "failed", "cannot", "denied",
// "refused", "not found", "no such", "invalid", "panic" or "abort", in any case), so that a
// trailing hint such as "Run cohort-train --help for usage." is not taken for the reason; nullopt
// when none does. Only kMaxMatchedLineBytes of each line are searched.
std::optional<size_t> LastErrorLine(const std::vector<std::string>& lines);

}  // namespace cohort::job
