#include "job/common_types.h"

#include <algorithm>
#include <cctype>

namespace cohort::job {

std::string ToString(RestartPolicy policy) {
  switch (policy) {
    case RestartPolicy::kAlways:
      return "Always";
    case RestartPolicy::kOnFailure:
      return "OnFailure";
    case RestartPolicy::kNever:
      return "Never";
    case RestartPolicy::kExitCode:
      return "ExitCode";
  }
  return "Never";
}

std::string ToString(CleanPodPolicy policy) {
  switch (policy) {
    case CleanPodPolicy::kAll:
      return "All";
    case CleanPodPolicy::kRunning:
      return "Running";
    case CleanPodPolicy::kNone:
      return "None";
  }
  return "None";
}

std::optional<RestartPolicy> ParseRestartPolicy(const std::string& text) {
  for (auto policy : {RestartPolicy::kAlways, RestartPolicy::kOnFailure, RestartPolicy::kNever,
                      RestartPolicy::kExitCode}) {
    if (ToString(policy) == text) return policy;
  }
  return std::nullopt;
}

std::optional<CleanPodPolicy> ParseCleanPodPolicy(const std::string& text) {
  for (auto policy : {CleanPodPolicy::kAll, CleanPodPolicy::kRunning, CleanPodPolicy::kNone}) {
    if (ToString(policy) == text) return policy;
  }
  return std::nullopt;
}

std::string LowerCase(const std::string& text) {
  std::string lower = text;
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return lower;
}

std::string ReplicaName(const std::string& job_name, const std::string& replica_type, int index) {
  std::string name = job_name + "-" + LowerCase(replica_type) + "-" + std::to_string(index);
  std::replace(name.begin(), name.end(), '/', '-');
  return name;
}

}  // namespace cohort::job
