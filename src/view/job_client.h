// JobClient: what a user does to jobs, wherever they run. Every `cohort` command that reads or
// changes jobs (get, describe, logs, wait, delete, suspend, resume, submit, create, apply) and the
// dashboard (`cohort ui`) are written once against it, as kubectl's commands are against one
// client whatever the cluster:
//
//   std::unique_ptr<JobClient> client = ...;  // LocalJobClient (this machine) or, from
//                                             // kube/view/kube_job_client.h, a cluster's
//   StatusOr<JobList> jobs = client->GetJobs({.namespace_name = "default"});
//   std::cout << view::JobTable(*jobs->store, jobs->keys, /*wide=*/false, false);
//
// Answers come in the read model's shapes: a JobList is a read-only JobStateStore
// (exec/job_state_store.h) holding the jobs asked for, so that view/job_view.h prints a job the
// same wherever it runs. Errors are Status codes with messages that name the job and, on a
// cluster, where the request went: InvalidArgument (and AlreadyExists) for what the user can fix
// in the request, NotFound for a job, pod or replica that is not there, anything else for the
// machine or the cluster failing.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "exec/job_state_store.h"
#include "job/common_types.h"
#include "job/job_kind.h"

namespace cohort::view {

// How much of each job a read needs: on a cluster each is a request more.
enum class JobDetail {
  kStatus,    // spec and status: the get table, -o name
  kReplicas,  // and the replica rows (pods): get -o wide, the dashboard's replicas
  kEvents,    // and the events of the job and its replicas: describe
};

// Which jobs a read asks for.
struct JobQuery {
  std::string namespace_name;  // ignored with all_namespaces
  bool all_namespaces = false;
  std::vector<std::string> names;  // empty: every job of the namespace (or of all)
  // Only jobs of this kind (`cohort get pytorchjobs`); null: every kind of
  // job::KindRegistry::Default(). A name asked for without a kind that two kinds hold (a cluster
  // may have a TFJob and a PyTorchJob of one name) is InvalidArgument naming both.
  const job::JobKind* kind = nullptr;
  JobDetail detail = JobDetail::kStatus;
  bool objects = false;  // fill JobList::objects too (-o json|yaml, the dashboard)
};

// Jobs as the read model shows them.
struct JobList {
  // Holds every job of `keys` (and perhaps others); read it with view/job_view.h.
  std::shared_ptr<const exec::JobStateStore> store;
  std::vector<exec::JobKey> keys;  // in the order asked for, else by namespace and name
  // With JobQuery::objects: each job's object as `get -o json` prints it (its own apiVersion and
  // kind), in keys' order.
  std::vector<nlohmann::json> objects;
  // What the caller should tell the user beside the answer: a job the store could not hold
  // because a job of another kind has its namespace and name (only a cluster has such pairs).
  std::vector<std::string> warnings;
};

// Pods (a job's replicas) as the read model shows them.
struct PodList {
  std::vector<nlohmann::json> objects;  // v1 Pod objects
  std::vector<exec::JobKey> jobs;       // the job of each pod, in the same order
  // kubectl's columns of the pods at these positions of `objects`: NAME READY STATUS RESTARTS
  // AGE (NAMESPACE first with `show_namespace`; IP NODE ... with `wide`), as they are now.
  std::function<std::string(const std::vector<size_t>& pods, bool wide, bool show_namespace)> table;
};

// What a log request selects (`cohort logs`, kubectl's flags).
struct LogRequest {
  std::string name;  // a job (every replica, or `replica`) or a pod (one replica)
  // The job's kind when the user named one (`logs pytorchjob/NAME`); null: any kind.
  const job::JobKind* kind = nullptr;
  std::string replica;    // "worker-1"; empty: all
  std::string container;  // empty, or the kind's container ("tensorflow", "pytorch")
  bool follow = false;
  bool previous = false;  // the run before the last restart
  int tail = -1;          // the last N lines of each replica; -1: all
  // The runs that wrote within this long (exec::ParseDuration reads "5s", "2m", "1h").
  std::optional<std::chrono::seconds> since;
};

// Where log lines go. `replica` is the replica's name when the lines of several replicas come
// (a job's logs without --replica), else empty; the lines of one replica come in order and each
// line is passed whole, never two at once. `flush` is called when output should reach the user
// (before a pause while following).
struct LogSink {
  std::function<void(const std::string& replica, std::string_view line)> line;
  std::function<void()> flush;
};

// What creating a job asks beyond the job itself.
struct CreateRequest {
  job::Job job;
  // Fields a run on this machine cannot honour (apps' job file loading finds them): a client
  // that runs the job here passes each to `on_warning` before it creates the job.
  std::vector<std::string> local_warnings;
  std::function<void(const std::string&)> on_warning;
  std::vector<std::string> image_flags;  // --image NAME=COMMAND, for a client that runs here
};

// What a create or apply did.
struct Created {
  exec::JobKey key;
  std::string resource;  // the kind's resource name: "tfjob.kubeflow.org"
  enum class Outcome { kCreated, kConfigured, kUnchanged } outcome = Outcome::kCreated;
  std::string note;  // said on standard error after the result (which operator will run it)
};

// A client may be used from several threads at once (the dashboard's requests).
class JobClient {
 public:
  virtual ~JobClient() = default;

  // The namespace a command acts in: `namespace_flag` when -n was given, else the client's own
  // ("default" here; the kubeconfig context's on a cluster).
  virtual std::string Namespace(const std::optional<std::string>& namespace_flag) const = 0;

  // Whether the jobs run on this machine (then the warnings of a job file about a local run
  // matter, and `get -w` can follow them).
  virtual bool RunsHere() const = 0;

  // The jobs `query` names (NotFound for one that is not there), or every job of its namespace.
  virtual StatusOr<JobList> GetJobs(const JobQuery& query) = 0;

  // The pods of the jobs `query` names (every job's when it names none); or, with `pod_names`,
  // those pods (NotFound for one that is not there).
  virtual StatusOr<PodList> GetPods(const JobQuery& query,
                                    const std::vector<std::string>& pod_names) = 0;

  // OK when Watch can follow this client's jobs, else InvalidArgument saying what to use instead.
  virtual Status CanWatch() const = 0;

  // `get -w`: calls `on_changed` with each job of `keys` whose status or replicas changed, once
  // for every job first, until every job has finished or is gone (true) or `timeout` (false).
  // InvalidArgument where jobs cannot be watched so.
  virtual StatusOr<bool> Watch(const std::vector<exec::JobKey>& keys,
                               std::chrono::milliseconds timeout,
                               const std::function<void(const JobList& changed)>& on_changed) = 0;

  // Creates the job and has it run (in the background). AlreadyExists when the name is taken.
  virtual StatusOr<Created> Create(const CreateRequest& request) = 0;

  // `apply -f`: creates the job, or brings a job of that name to the request's spec (where a
  // running job cannot change, InvalidArgument saying how the specs differ), or finds it
  // unchanged.
  virtual StatusOr<Created> Apply(const CreateRequest& request) = 0;

  // The next three act on the job `key` names, of `kind` when the user named one (`cohort delete
  // pytorchjob NAME`), else of whichever kind holds that name: NotFound when none does (or the
  // named kind does not), InvalidArgument naming both kinds and how to choose when two do.

  // Deletes the job with its replicas; returns its resource name ("pytorchjob.kubeflow.org").
  virtual StatusOr<std::string> Delete(const exec::JobKey& key, const job::JobKind* kind) = 0;

  // `delete --purge`: Delete, then removes the output directories the job declared as its own
  // (exec/job_outputs.h), passing each to `on_removed`. Only where jobs run on this machine, whose
  // files are here: elsewhere InvalidArgument (a cluster's pods wrote on their nodes or volumes).
  virtual StatusOr<std::string> DeleteAndPurge(
      const exec::JobKey& key, const job::JobKind* kind,
      const std::function<void(const std::string&)>& on_removed) {
    (void)key;
    (void)kind;
    (void)on_removed;
    return Status::InvalidArgument(
        "--purge removes what a job wrote on this machine; a cluster's pods wrote on their nodes "
        "or volumes: remove it there, and delete the job without --purge");
  }

  // Sets runPolicy.suspend; returns the job's resource name. InvalidArgument when suspending a
  // job that has finished.
  virtual StatusOr<std::string> SetSuspended(const exec::JobKey& key, const job::JobKind* kind,
                                             bool suspended) = 0;

  // Waits until the job has finished and returns its status; DeadlineExceeded after `timeout`.
  virtual StatusOr<job::JobStatus> Wait(const exec::JobKey& key, const job::JobKind* kind,
                                        std::chrono::milliseconds timeout) = 0;

  // Passes the selected lines of a job's or pod's logs to `sink`, and with `follow` those written
  // later, until the replicas end.
  virtual Status Logs(const std::string& namespace_name, const LogRequest& request,
                      const LogSink& sink) = 0;
};

// Opens a client when a command needs one, after it has checked its own arguments.
using JobClientFactory = std::function<StatusOr<std::unique_ptr<JobClient>>()>;

// The name kubectl prints for a job's resource ("tfjob.kubeflow.org"), from its spec in `store`
// (the first kind registered when it cannot be read).
std::string ResourceName(const exec::JobStateStore& store, const exec::JobKey& key);

// The kinds a request for `kind` covers: that one, or (null) every kind of
// job::KindRegistry::Default() in its order.
std::vector<const job::JobKind*> KindsOf(const job::JobKind* kind);

// The InvalidArgument for a name that jobs of several kinds hold: "job team/x is both a TFJob and
// a PyTorchJob; name the kind: cohort delete tfjob x, or cohort delete pytorchjob x".
Status AmbiguousJobName(const exec::JobKey& key, const std::vector<const job::JobKind*>& kinds,
                        const std::string& command);

// The NotFound for a job that is not there as `kind` (null: as any kind):
// "PyTorchJob team/x not found", or "job team/x not found".
Status JobNotFound(const exec::JobKey& key, const job::JobKind* kind);

}  // namespace cohort::view
