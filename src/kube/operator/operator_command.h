// What `cohort operator` does between its flags and the Operator: the options its flags and the
// pod's environment give, and running until a stop is asked (SIGTERM), then stopping cleanly.
//
//   OperatorFlags flags;                                  // from the command line
//   StatusOr<OperatorOptions> options = MakeOperatorOptions(flags, getenv-like lookup);
//   Operator op(api, KubeObjectBuilders(), *options);
//   RunOperatorUntil(op, stop_requested);                 // a signal handler sets it
//
// The identity (Lease holder, Events' reportingInstance) is $POD_NAME when the operator runs in a
// pod (deploy/kubernetes sets it from the downward API), else the host name, with the process id
// either way so that two operators on one host differ. The Lease's namespace defaults to
// $POD_NAMESPACE, else "default". Logs go to standard error, one timestamped line each.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include "base/status.h"
#include "kube/operator/operator.h"

namespace cohort::kube {

struct OperatorFlags {
  std::string namespace_name;                  // --namespace: "" for every namespace
  bool leader_elect = false;                   // --leader-elect
  std::string lease_name = "cohort-operator";  // --lease-name
  std::string lease_namespace;                 // --lease-namespace
  std::string cluster_domain;                  // --cluster-domain
  std::string gang_scheduler;                  // --gang-scheduler: "", volcano, or a name
  int workers = 1;                             // --workers: 1 to 64
  int resync_period_seconds = 0;               // --resync-period: 0 (off) to 604800 (a week)
  // --enable-scheme, as Kubeflow's training operator names it, once per kind: the kinds run, by
  // kind or plural in any case ("tfjob", "PyTorchJob", "pytorchjobs"); none given: every kind
  // of job::KindRegistry::Default().
  std::vector<std::string> enabled_kinds;
};

// InvalidArgument naming the flag when a value is out of range, not a valid name, or (for
// --enable-scheme) not a kind Cohort runs.
StatusOr<OperatorOptions> MakeOperatorOptions(
    const OperatorFlags& flags, const std::function<std::string(const std::string&)>& environment);

// Starts `op`, returns once `stop_requested` is non-zero (looked at every `poll`), after Stop()
// (which releases the Lease).
void RunOperatorUntil(Operator& op, const std::atomic<int>& stop_requested,
                      std::chrono::milliseconds poll = std::chrono::milliseconds(200));

}  // namespace cohort::kube
