// The CLI's --kubernetes forms: the same commands as the local ones (submit, apply/create -f, get,
// describe, logs, wait, delete, suspend, resume), carried out against a cluster's API server
// through kube::Api (kube/client/api.h) and printed with the same read model (view/job_view.h, through
// kube/view/kube_job_store.h), so that the output columns are those of the local forms and kubectl.
//
// The cluster is the kubeconfig's context (--context, else current-context; in a pod without a
// kubeconfig, its service account), the namespace -n, else the context's. A job file is read as
// locally (an AI Platform job spec is converted to a TFJob first) and created as a TFJob; Cohort's
// operator or Kubeflow's training-operator, whichever runs there, runs it. Every error names the
// context, the server, the namespace and the object.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "job/job_file.h"

namespace cohort::cli {

// Where the commands go.
struct KubeTarget {
  std::string context;                        // empty: current-context
  std::optional<std::string> namespace_flag;  // -n when given
  double request_timeout_seconds = 30;        // each request (connecting included)
};

// `submit --kubernetes FILE` (prints the name; `print_created`: "tfjob.kubeflow.org/NAME created"
// as create -f), and the operator that will run it on standard error.
int KubeSubmit(const KubeTarget& target, const std::string& file,
               const job::JobFileOptions& options, bool print_created);

// `apply -f FILE --kubernetes`: creates the TFJob, or replaces its spec ("configured"), or says
// "unchanged".
int KubeApply(const KubeTarget& target, const std::string& file,
              const job::JobFileOptions& options);

struct KubeGetFlags {
  bool all_namespaces = false;
  std::string output;
};
// `get [tfjobs|pods] [NAME...] --kubernetes`.
int KubeGet(const KubeTarget& target, const std::vector<std::string>& arguments,
            const KubeGetFlags& flags);

// `describe [tfjob] NAME... --kubernetes`: the job, its pods (phases, restarts, exit codes) and
// the Events of the job and its pods.
int KubeDescribe(const KubeTarget& target, const std::vector<std::string>& arguments);

struct KubeLogsFlags {
  std::string replica;
  std::string container;
  bool previous = false;
  bool follow = false;
  int tail = -1;
  std::string since;
};
// `logs JOB|POD --kubernetes`: a job's pods' logs, each line prefixed "[worker-0] " (one pod with
// --replica), or a pod's log. With `follow`, every pod's log is followed at once until its
// container ends (at most kFollowBound).
inline constexpr std::chrono::hours kFollowBound{24};
int KubeLogs(const KubeTarget& target, const std::string& name, const KubeLogsFlags& flags);

// `wait JOB --kubernetes`: watches the TFJob until it Succeeded (exit 0) or Failed (1), at most
// `timeout_seconds` (then 3, saying what it waited for).
int KubeWait(const KubeTarget& target, const std::string& name, double timeout_seconds);

// `delete [tfjob] NAME... | -f FILE --kubernetes`: deletes the TFJobs (propagation Background, as
// kubectl's default: the server removes the pods and services they own).
int KubeDelete(const KubeTarget& target, const std::vector<std::string>& arguments,
               const std::string& file, bool ignore_not_found);

// `suspend|resume JOB --kubernetes`: patches spec.runPolicy.suspend.
int KubeSetSuspended(const KubeTarget& target, const std::string& name, bool suspended);

}  // namespace cohort::cli
