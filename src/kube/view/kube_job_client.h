// KubeJobClient: the JobClient (view/job_client.h) of a cluster's jobs of every kind of
// job::KindRegistry::Default(), through its API server (kube/client/api.h): the CLI's
// --kubernetes forms and `cohort ui --kubernetes`.
//
//   StatusOr<std::unique_ptr<KubeJobClient>> client = ConnectJobClient({.context = "kind"});
//   StatusOr<view::JobList> jobs = (*client)->GetJobs({.namespace_name = "team"});
//
// The cluster is the kubeconfig's context (`context`, else current-context; $KUBECONFIG, else
// ~/.kube/config; in a pod without a kubeconfig, its service account), the namespace -n, else the
// context's. Each kind is its own resource (kube::JobResource: /apis/GROUP/VERSION/PLURAL):
// reads list every kind (or the one asked for; a kind whose CRD the cluster lacks is left out of
// a listing of every kind, and named when asked for) and come back in the read model's shapes
// through KubeJobStore (kube_job_store.h): a job, its pods and their Events, as the server sent
// them. A job is created as an object of its own kind; Cohort's operator or Kubeflow's
// training-operator, whichever runs there, runs it. A name without a kind that two kinds hold is
// refused, naming both. Every error names the server, the context and the namespace, and a
// missing resource type says how to install it.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "kube/client/api.h"
#include "kube/client/kubeconfig.h"
#include "view/job_client.h"

namespace cohort::kube {

struct KubeClientOptions {
  std::string context;                               // empty: current-context
  std::string kubeconfig;                            // empty: $KUBECONFIG, else ~/.kube/config
  std::chrono::milliseconds request_timeout{30000};  // each request, connecting included
};

class KubeJobClient : public view::JobClient {
 public:
  // `config` says where `api` goes, for messages.
  KubeJobClient(std::unique_ptr<Api> api, ConnectionConfig config);

  // "context "kind" of /home/u/.kube/config, server https://...".
  std::string Description() const;

  std::string Namespace(const std::optional<std::string>& namespace_flag) const override {
    return namespace_flag.value_or(config_.namespace_name);
  }
  bool RunsHere() const override { return false; }
  StatusOr<view::JobList> GetJobs(const view::JobQuery& query) override;
  StatusOr<view::PodList> GetPods(const view::JobQuery& query,
                                  const std::vector<std::string>& pod_names) override;
  Status CanWatch() const override;
  StatusOr<bool> Watch(
      const std::vector<exec::JobKey>& keys, std::chrono::milliseconds timeout,
      const std::function<void(const view::JobList& changed)>& on_changed) override;
  StatusOr<view::Created> Create(const view::CreateRequest& request) override;
  StatusOr<view::Created> Apply(const view::CreateRequest& request) override;
  StatusOr<std::string> Delete(const exec::JobKey& key, const job::JobKind* kind) override;
  StatusOr<std::string> SetSuspended(const exec::JobKey& key, const job::JobKind* kind,
                                     bool suspended) override;
  StatusOr<job::JobStatus> Wait(const exec::JobKey& key, const job::JobKind* kind,
                                std::chrono::milliseconds timeout) override;
  Status Logs(const std::string& namespace_name, const view::LogRequest& request,
              const view::LogSink& sink) override;

 private:
  // "(namespace team; context "kind" of ..., server https://...)"
  std::string Where(const std::string& namespace_name) const;
  // A job as the server holds it, with its kind.
  struct Found {
    const job::JobKind* kind;
    nlohmann::json object;
  };
  // A failed call's status with where it went, and, for a NotFound, what to do when `kind`'s
  // resource type (null: any kind's) is missing.
  Status Failed(const std::string& namespace_name, const Status& status, const job::JobKind* kind);
  // The pods of a job (of every job when `job_name` is empty) in a namespace ("" for all); with
  // `kind_name`, only those whose controller (if they name one) is of that kind.
  StatusOr<std::vector<nlohmann::json>> JobPods(const std::string& namespace_name,
                                                const std::string& job_name,
                                                const std::string& kind_name);
  // Events whose involvedObject is the job (its own kind) or one of its pods.
  StatusOr<std::vector<nlohmann::json>> JobEvents(const nlohmann::json& job,
                                                  const std::vector<nlohmann::json>& pods);
  // The jobs named `name` of `kind` (null: of every kind), none when there is none.
  StatusOr<std::vector<Found>> FindJob(const std::string& namespace_name, const std::string& name,
                                       const job::JobKind* kind);
  // The one job `key` names: NotFound when none, InvalidArgument naming the kinds (and
  // `cohort COMMAND KIND NAME`) when several kinds hold the name.
  StatusOr<Found> FindOneJob(const exec::JobKey& key, const job::JobKind* kind,
                             const std::string& command);
  // Which operator will run a new job of `kind`, as far as can be told.
  std::string OperatorNote(const job::JobKind& kind);

  std::unique_ptr<Api> api_;
  ConnectionConfig config_;
};

// Connects as `options` say. FailedPrecondition naming the context when the connection cannot
// be read.
StatusOr<std::unique_ptr<KubeJobClient>> ConnectJobClient(const KubeClientOptions& options);

// A follow of every pod's log stops after this long at most.
inline constexpr std::chrono::hours kFollowBound{24};

}  // namespace cohort::kube
