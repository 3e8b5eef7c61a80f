#include "kube/operator/operator_command.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <thread>

namespace cohort::kube {
namespace {

constexpr int kMaxResyncPeriodSeconds = 7 * 24 * 3600;

// A DNS-1123 label ("cohort-operator") or, with dots, subdomain ("cluster.local").
bool IsDnsName(const std::string& text, bool dots_allowed) {
  if (text.empty() || text.size() > 253) return false;
  size_t label_length = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '.' && dots_allowed) {
      if (label_length == 0 || text[i - 1] == '-') return false;
      label_length = 0;
      continue;
    }
    const bool alphanumeric = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
    if (!alphanumeric && c != '-') return false;
    if (c == '-' && label_length == 0) return false;
    if (++label_length > 63) return false;
  }
  return text.back() != '-' && text.back() != '.';
}

std::string HostName() {
  char name[256] = {};
  if (gethostname(name, sizeof(name) - 1) != 0 || name[0] == '\0') return "cohort-operator";
  return name;
}

void LogToStandardError(const std::string& line) {
  const std::string text = FormatTime(Clock::now()) + " operator: " + line + "\n";
  std::fwrite(text.data(), 1, text.size(), stderr);
}

}  // namespace

StatusOr<OperatorOptions> MakeOperatorOptions(
    const OperatorFlags& flags, const std::function<std::string(const std::string&)>& environment) {
  if (flags.workers < 1 || flags.workers > 64) {
    return Status::InvalidArgument("--workers " + std::to_string(flags.workers) +
                                   ": must be from 1 to 64");
  }
  if (flags.resync_period_seconds < 0 || flags.resync_period_seconds > kMaxResyncPeriodSeconds) {
    return Status::InvalidArgument(
        "--resync-period " + std::to_string(flags.resync_period_seconds) +
        ": must be from 0 (off) to " + std::to_string(kMaxResyncPeriodSeconds) + " seconds");
  }
  if (!flags.namespace_name.empty() && !IsDnsName(flags.namespace_name, false)) {
    return Status::InvalidArgument("--namespace \"" + flags.namespace_name +
                                   "\": not a valid namespace name (a DNS-1123 label)");
  }
  if (!flags.cluster_domain.empty() && !IsDnsName(flags.cluster_domain, true)) {
    return Status::InvalidArgument("--cluster-domain \"" + flags.cluster_domain +
                                   "\": not a DNS name (e.g. cluster.local)");
  }
  if (!flags.gang_scheduler.empty() && !IsDnsName(flags.gang_scheduler, true)) {
    return Status::InvalidArgument("--gang-scheduler \"" + flags.gang_scheduler +
                                   "\": not a scheduler name (volcano, scheduler-plugins...)");
  }
  OperatorOptions options;
  if (!flags.enabled_kinds.empty()) {
    const job::KindRegistry& registry = job::KindRegistry::Default();
    options.kinds.clear();
    for (const std::string& name : flags.enabled_kinds) {
      const job::JobKind* kind = registry.FindByUserName(name);
      if (kind == nullptr) {
        return Status::InvalidArgument("--enable-scheme \"" + name +
                                       "\": not a job kind Cohort runs (" +
                                       job::LowerCase(registry.Names(", ")) + ")");
      }
      if (std::find(options.kinds.begin(), options.kinds.end(), kind) == options.kinds.end()) {
        options.kinds.push_back(kind);
      }
    }
  }
  options.namespace_name = flags.namespace_name;
  options.workers = flags.workers;
  options.resync_period = std::chrono::seconds(flags.resync_period_seconds);
  options.objects.cluster_domain = flags.cluster_domain;
  options.objects.gang_scheduler = flags.gang_scheduler;
  const std::string pod_name = environment("POD_NAME");
  options.identity = (pod_name.empty() ? HostName() : pod_name) + "_" +
                     std::to_string(static_cast<long>(getpid()));
  options.log = LogToStandardError;
  if (flags.leader_elect) {
    LeaderElectionOptions lease;
    lease.lease_name = flags.lease_name;
    lease.lease_namespace = flags.lease_namespace;
    if (lease.lease_namespace.empty()) lease.lease_namespace = environment("POD_NAMESPACE");
    if (lease.lease_namespace.empty()) lease.lease_namespace = "default";
    if (!IsDnsName(lease.lease_name, true)) {
      return Status::InvalidArgument("--lease-name \"" + lease.lease_name +
                                     "\": not a valid object name");
    }
    if (!IsDnsName(lease.lease_namespace, false)) {
      return Status::InvalidArgument("--lease-namespace \"" + lease.lease_namespace +
                                     "\": not a valid namespace name");
    }
    lease.identity = options.identity;
    options.leader_election = lease;
  }
  return options;
}

void RunOperatorUntil(Operator& op, const std::atomic<int>& stop_requested,
                      std::chrono::milliseconds poll) {
  op.Start();
  while (stop_requested.load() == 0) std::this_thread::sleep_for(poll);
  op.Stop();
}

}  // namespace cohort::kube
