#include "kube/view/kube_job_client.h"

#include <mutex>
#include <set>
#include <sstream>
#include <thread>

#include "job/reconciler.h"
#include "job/spec_writer.h"
#include "job/status_json.h"
#include "job/tfjob.h"
#include "kube/client/http_api.h"
#include "kube/objects/objects.h"
#include "kube/view/kube_job_store.h"
#include "view/spec_diff.h"

namespace cohort::kube {
namespace {

constexpr char kResourceName[] = "tfjob.kubeflow.org";
// The longest a single watch request runs before `wait` watches again.
constexpr std::chrono::seconds kWatchChunk{60};

std::string SecondsText(std::chrono::milliseconds timeout) {
  std::ostringstream text;
  text << static_cast<double>(timeout.count()) / 1000 << "s";
  return text.str();
}

std::string NameOf(const nlohmann::json& object) {
  return object.value("metadata", nlohmann::json::object()).value("name", "");
}
std::string NamespaceOf(const nlohmann::json& object) {
  return object.value("metadata", nlohmann::json::object()).value("namespace", "");
}
std::string JobOfPod(const nlohmann::json& pod) {
  return pod.value("metadata", nlohmann::json::object())
      .value("labels", nlohmann::json::object())
      .value(kJobNameLabel, "");
}

// A status of `status`'s code with another message.
Status SameCode(const Status& status, std::string message) {
  switch (status.code()) {
    case Status::Code::kOk:
      return Status::OK();
    case Status::Code::kInvalidArgument:
      return Status::InvalidArgument(std::move(message));
    case Status::Code::kNotFound:
      return Status::NotFound(std::move(message));
    case Status::Code::kAlreadyExists:
      return Status::AlreadyExists(std::move(message));
    case Status::Code::kFailedPrecondition:
      return Status::FailedPrecondition(std::move(message));
    case Status::Code::kUnavailable:
      return Status::Unavailable(std::move(message));
    case Status::Code::kDeadlineExceeded:
      return Status::DeadlineExceeded(std::move(message));
    case Status::Code::kIOError:
      return Status::IOError(std::move(message));
    case Status::Code::kAborted:
      return Status::Aborted(std::move(message));
    case Status::Code::kOutOfRange:
      return Status::OutOfRange(std::move(message));
    case Status::Code::kInternal:
      break;
  }
  return Status::Internal(std::move(message));
}

// The TFJob body a job amounts to: the normalised spec as a local run reads it, without its
// creation time (the server's to set).
nlohmann::json TFJobBody(const job::Job& job) {
  nlohmann::json body = job::ToJson(job);
  body["metadata"].erase("creationTimestamp");
  return body;
}

}  // namespace

KubeJobClient::KubeJobClient(std::unique_ptr<Api> api, ConnectionConfig config)
    : api_(std::move(api)), config_(std::move(config)) {}

std::string KubeJobClient::Description() const {
  return config_.description + ", server " + config_.cluster.server;
}

std::string KubeJobClient::Where(const std::string& namespace_name) const {
  return "(namespace " + namespace_name + "; " + Description() + ")";
}

Status KubeJobClient::Failed(const std::string& namespace_name, const Status& status) {
  std::string message = status.message() + " " + Where(namespace_name);
  if (status.code() == Status::Code::kNotFound) {
    StatusOr<ObjectList> probe = api_->List(JobResource(job::TFJobKind()), namespace_name);
    if (!probe.ok() && probe.status().code() == Status::Code::kNotFound) {
      message +=
          "\nThe cluster has no TFJob resource type (kubeflow.org/v1 tfjobs): install the "
          "CRD with `kubectl apply -k deploy/kubernetes` (with Cohort's operator) or "
          "`cohort crd | kubectl apply -f -`";
    }
  }
  return SameCode(status, message);
}

StatusOr<std::vector<nlohmann::json>> KubeJobClient::JobPods(const std::string& namespace_name,
                                                             const std::string& job_name) {
  Selector selector;
  selector.label_selector =
      job_name.empty() ? std::string(kJobNameLabel) : JobPodSelector(job_name);
  StatusOr<ObjectList> pods = api_->List(PodResource(), namespace_name, selector);
  if (!pods.ok()) return pods.status();
  return pods->items;
}

StatusOr<std::vector<nlohmann::json>> KubeJobClient::JobEvents(
    const nlohmann::json& tfjob, const std::vector<nlohmann::json>& pods) {
  std::set<std::string> names = {"TFJob/" + NameOf(tfjob)};
  for (const nlohmann::json& pod : pods) names.insert("Pod/" + NameOf(pod));
  StatusOr<ObjectList> events = api_->List(EventResource(), NamespaceOf(tfjob));
  if (!events.ok()) return events.status();
  std::vector<nlohmann::json> of_job;
  for (const nlohmann::json& event : events->items) {
    nlohmann::json involved = event.value("involvedObject", nlohmann::json::object());
    if (names.count(involved.value("kind", "") + "/" + involved.value("name", ""))) {
      of_job.push_back(event);
    }
  }
  return of_job;
}

StatusOr<view::JobList> KubeJobClient::GetJobs(const view::JobQuery& query) {
  const std::string& namespace_name = query.namespace_name;
  const std::string listed_namespace = query.all_namespaces ? "" : namespace_name;
  std::vector<nlohmann::json> tfjobs;
  if (query.names.empty()) {
    StatusOr<ObjectList> listed = api_->List(JobResource(job::TFJobKind()), listed_namespace);
    if (!listed.ok()) return Failed(namespace_name, listed.status());
    tfjobs = std::move(listed->items);
  } else {
    for (const std::string& name : query.names) {
      StatusOr<nlohmann::json> tfjob =
          api_->Get(JobResource(job::TFJobKind()), namespace_name, name);
      if (!tfjob.ok()) return Failed(namespace_name, tfjob.status());
      tfjobs.push_back(std::move(*tfjob));
    }
  }
  std::vector<nlohmann::json> pods;  // of every job listed, for the replica rows
  if (query.detail == view::JobDetail::kReplicas) {
    StatusOr<std::vector<nlohmann::json>> listed = JobPods(listed_namespace, "");
    if (!listed.ok()) return Failed(namespace_name, listed.status());
    pods = std::move(*listed);
  }
  auto store = std::make_shared<KubeJobStore>();
  view::JobList list;
  for (const nlohmann::json& tfjob : tfjobs) {
    ClusterJobObjects objects{tfjob, {}, {}};
    if (query.detail == view::JobDetail::kEvents) {
      StatusOr<std::vector<nlohmann::json>> of_job = JobPods(NamespaceOf(tfjob), NameOf(tfjob));
      if (!of_job.ok()) return Failed(namespace_name, of_job.status());
      StatusOr<std::vector<nlohmann::json>> events = JobEvents(tfjob, *of_job);
      if (!events.ok()) return Failed(namespace_name, events.status());
      objects.pods = std::move(*of_job);
      objects.events = std::move(*events);
    }
    for (const nlohmann::json& pod : pods) {
      if (NamespaceOf(pod) == NamespaceOf(tfjob) && JobOfPod(pod) == NameOf(tfjob)) {
        objects.pods.push_back(pod);
      }
    }
    // The objects are shown as the server sent them, whatever their spec; only the read model
    // needs a spec it can read.
    if (Status added = store->Add(objects); !added.ok()) {
      if (!query.objects) return Failed(namespace_name, added);
    }
    list.keys.push_back({NamespaceOf(tfjob), NameOf(tfjob)});
  }
  if (query.objects) list.objects = std::move(tfjobs);
  list.store = std::move(store);
  return list;
}

StatusOr<view::PodList> KubeJobClient::GetPods(const view::JobQuery& query,
                                               const std::vector<std::string>& pod_names) {
  const std::string& namespace_name = query.namespace_name;
  auto pods = std::make_shared<std::vector<nlohmann::json>>();
  if (pod_names.empty()) {
    std::vector<std::string> jobs =
        query.names.empty() ? std::vector<std::string>{""} : query.names;
    for (const std::string& job : jobs) {
      StatusOr<std::vector<nlohmann::json>> listed =
          JobPods(query.all_namespaces ? "" : namespace_name, job);
      if (!listed.ok()) return Failed(namespace_name, listed.status());
      pods->insert(pods->end(), listed->begin(), listed->end());
    }
  } else {
    for (const std::string& name : pod_names) {
      StatusOr<nlohmann::json> pod = api_->Get(PodResource(), namespace_name, name);
      if (!pod.ok()) return Failed(namespace_name, pod.status());
      pods->push_back(std::move(*pod));
    }
  }
  view::PodList list;
  list.objects = *pods;
  for (const nlohmann::json& pod : *pods) list.jobs.push_back({NamespaceOf(pod), JobOfPod(pod)});
  list.table = [pods](const std::vector<size_t>& which, bool wide, bool show_namespace) {
    std::vector<nlohmann::json> selected;
    for (size_t index : which) selected.push_back(pods->at(index));
    return PodTable(selected, wide, show_namespace, Clock::now());
  };
  return list;
}

Status KubeJobClient::CanWatch() const {
  return Status::InvalidArgument(
      "get -w is not available with --kubernetes; use `kubectl get tfjobs -w` or `cohort wait "
      "--kubernetes`");
}

StatusOr<bool> KubeJobClient::Watch(const std::vector<exec::JobKey>&, std::chrono::milliseconds,
                                    const std::function<void(const view::JobList&)>&) {
  return CanWatch();
}

std::string KubeJobClient::OperatorNote() {
  const Resource deployments{"apps", "v1", "deployments", "Deployment", true};
  struct Candidate {
    const char* namespace_name;
    const char* name;
    const char* what;
  };
  std::vector<std::string> unreadable;
  for (const Candidate& candidate :
       {Candidate{"cohort-system", "cohort-operator", "Cohort's operator"},
        Candidate{"kubeflow", "training-operator", "Kubeflow's training-operator"}}) {
    StatusOr<nlohmann::json> deployment =
        api_->Get(deployments, candidate.namespace_name, candidate.name);
    std::string where =
        std::string("deployment ") + candidate.namespace_name + "/" + candidate.name;
    if (deployment.ok()) {
      int ready = deployment->value("status", nlohmann::json::object()).value("readyReplicas", 0);
      return std::string(candidate.what) + " (" + where + ", " + std::to_string(ready) +
             " ready) will run it" + (ready == 0 ? ", once one of its replicas is ready" : "");
    }
    if (deployment.status().code() != Status::Code::kNotFound) unreadable.push_back(where);
  }
  std::string note =
      "no operator found (looked for deployments cohort-system/cohort-operator and "
      "kubeflow/training-operator); the TFJob waits until an operator runs it (kubectl apply -k "
      "deploy/kubernetes installs Cohort's)";
  if (!unreadable.empty()) {
    note = "could not tell which operator will run it: ";
    for (const std::string& where : unreadable)
      note += where + (where == unreadable.back() ? "" : ", ");
    note += " could not be read";
  }
  return note;
}

StatusOr<view::Created> KubeJobClient::Create(const view::CreateRequest& request) {
  const job::Job& job = request.job;
  const std::string& namespace_name = job.metadata.namespace_name;
  StatusOr<nlohmann::json> created =
      api_->Create(JobResource(job::TFJobKind()), namespace_name, TFJobBody(job));
  if (!created.ok()) return Failed(namespace_name, created.status());
  std::string note = "TFJob " + namespace_name + "/" + job.metadata.name + " created on " +
                     config_.cluster.server + "; " + OperatorNote();
  return view::Created{
      {namespace_name, job.metadata.name}, kResourceName, view::Created::Outcome::kCreated, note};
}

StatusOr<view::Created> KubeJobClient::Apply(const view::CreateRequest& request) {
  const job::Job& job = request.job;
  const std::string& namespace_name = job.metadata.namespace_name;
  view::Created result{
      {namespace_name, job.metadata.name}, kResourceName, view::Created::Outcome::kCreated, ""};
  nlohmann::json body = TFJobBody(job);
  StatusOr<nlohmann::json> existing =
      api_->Get(JobResource(job::TFJobKind()), namespace_name, job.metadata.name);
  if (!existing.ok() && existing.status().code() == Status::Code::kNotFound) {
    StatusOr<nlohmann::json> created =
        api_->Create(JobResource(job::TFJobKind()), namespace_name, body);
    if (!created.ok()) return Failed(namespace_name, created.status());
    return result;
  }
  if (!existing.ok()) return Failed(namespace_name, existing.status());
  bool changed = false;
  StatusOr<nlohmann::json> updated =
      UpdateWithRetry(*api_, JobResource(job::TFJobKind()), namespace_name, job.metadata.name,
                      [&](nlohmann::json& object) {
                        changed = !view::SpecDifferences(
                                       object.value("spec", nlohmann::json::object()), body["spec"])
                                       .empty();
                        if (changed) object["spec"] = body["spec"];
                        return changed;
                      });
  if (!updated.ok()) return Failed(namespace_name, updated.status());
  result.outcome =
      changed ? view::Created::Outcome::kConfigured : view::Created::Outcome::kUnchanged;
  return result;
}

StatusOr<std::string> KubeJobClient::Delete(const exec::JobKey& key) {
  DeleteOptions options;
  options.propagation_policy = "Background";  // as kubectl's default: the server removes the pods
  Status deleted =
      api_->Delete(JobResource(job::TFJobKind()), key.namespace_name, key.name, options);
  if (!deleted.ok()) return Failed(key.namespace_name, deleted);
  return std::string(kResourceName);
}

StatusOr<std::string> KubeJobClient::SetSuspended(const exec::JobKey& key, bool suspended) {
  const std::string resource = std::string(kResourceName) + "/" + key.name;
  if (suspended) {
    StatusOr<nlohmann::json> tfjob =
        api_->Get(JobResource(job::TFJobKind()), key.namespace_name, key.name);
    if (!tfjob.ok()) return Failed(key.namespace_name, tfjob.status());
    if (tfjob->contains("status") && (*tfjob)["status"].is_object()) {
      StatusOr<job::JobStatus> status = job::JobStatusFromJson((*tfjob)["status"]);
      if (status.ok() && job::IsFinished(*status)) {
        return Status::InvalidArgument(resource + " has already " + job::JobState(*status) +
                                       "; a finished job cannot be suspended");
      }
    }
  }
  nlohmann::json patch = {{"spec", {{"runPolicy", {{"suspend", suspended}}}}}};
  StatusOr<nlohmann::json> patched =
      api_->Patch(JobResource(job::TFJobKind()), key.namespace_name, key.name, patch);
  if (!patched.ok()) return Failed(key.namespace_name, patched.status());
  return std::string(kResourceName);
}

StatusOr<job::JobStatus> KubeJobClient::Wait(const exec::JobKey& key,
                                             std::chrono::milliseconds timeout) {
  const std::string& namespace_name = key.namespace_name;
  const std::string what = "TFJob " + namespace_name + "/" + key.name;
  const auto deadline = Clock::now() + timeout;
  std::optional<job::JobStatus> finished;
  auto check = [&](const nlohmann::json& tfjob) -> Status {
    if (!tfjob.contains("status") || !tfjob["status"].is_object()) return Status::OK();
    StatusOr<job::JobStatus> status = job::JobStatusFromJson(tfjob["status"]);
    if (!status.ok())
      return Status::InvalidArgument(what + ": status: " + status.status().message());
    if (job::IsFinished(*status)) finished = *status;
    return Status::OK();
  };
  Selector selector;
  selector.field_selector = "metadata.name=" + key.name;
  while (!finished) {
    // A fresh read, then a watch from its version until the deadline (again after a 410).
    StatusOr<nlohmann::json> tfjob =
        api_->Get(JobResource(job::TFJobKind()), namespace_name, key.name);
    if (!tfjob.ok()) return Failed(namespace_name, tfjob.status());
    if (Status checked = check(*tfjob); !checked.ok()) return Failed(namespace_name, checked);
    std::string version =
        tfjob->value("metadata", nlohmann::json::object()).value("resourceVersion", "");
    Status watched = Status::OK();
    while (!finished && watched.ok()) {
      auto left = std::chrono::duration_cast<std::chrono::seconds>(deadline - Clock::now());
      if (left.count() <= 0) {
        return Status::DeadlineExceeded("timed out after " + SecondsText(timeout) +
                                        " waiting for " + what + " to finish " +
                                        Where(namespace_name));
      }
      Status inner = Status::OK();
      watched = api_->Watch(
          JobResource(job::TFJobKind()), namespace_name, selector, version,
          std::min(left, kWatchChunk), [&](const WatchEvent& event) {
            version = event.object.value("metadata", nlohmann::json::object())
                          .value("resourceVersion", version);
            if (event.type == WatchEvent::Type::kBookmark) return true;
            if (event.type == WatchEvent::Type::kDeleted) {
              inner = Status::NotFound(what + " was deleted while waiting for it to finish");
              return false;
            }
            inner = check(event.object);
            return inner.ok() && !finished;
          });
      if (!inner.ok()) return Failed(namespace_name, inner);
    }
    if (!watched.ok() && watched.code() != Status::Code::kOutOfRange) {
      return Failed(namespace_name, watched);
    }
  }
  return *finished;
}

Status KubeJobClient::Logs(const std::string& namespace_name, const view::LogRequest& request,
                           const view::LogSink& sink) {
  LogOptions options;
  options.container = request.container;
  options.previous = request.previous;
  if (request.tail >= 0) options.tail_lines = request.tail;
  if (request.since) options.since_seconds = static_cast<int>(request.since->count());
  const std::string& name = request.name;
  // NAME is a TFJob (all its pods, or --replica's) or else a pod.
  std::vector<std::pair<std::string, std::string>> pods;  // replica, pod name
  StatusOr<nlohmann::json> tfjob = api_->Get(JobResource(job::TFJobKind()), namespace_name, name);
  if (tfjob.ok()) {
    StatusOr<std::vector<nlohmann::json>> listed = JobPods(namespace_name, name);
    if (!listed.ok()) return Failed(namespace_name, listed.status());
    KubeJobStore store;  // for the spec's replica order
    if (Status added = store.Add({*tfjob, *listed, {}}); !added.ok()) {
      return Failed(namespace_name, added);
    }
    for (const exec::ReplicaRow& row : store.ReadReplicas({namespace_name, name})) {
      if (request.replica.empty() || row.name == request.replica) {
        pods.push_back({row.name, name + "-" + row.name});
      }
    }
    if (pods.empty()) {
      return Status::FailedPrecondition(
          "TFJob " + namespace_name + "/" + name + " has no pod" +
          (request.replica.empty() ? "" : " for replica " + request.replica) + " yet " +
          Where(namespace_name));
    }
  } else if (tfjob.status().code() == Status::Code::kNotFound) {
    pods.push_back({"", name});
  } else {
    return Failed(namespace_name, tfjob.status());
  }
  const bool prefix = pods.size() > 1 || (tfjob.ok() && request.replica.empty());
  std::mutex output;
  auto pass_lines = [&](const std::string& replica, std::string& pending, bool flush) {
    std::lock_guard<std::mutex> lock(output);
    const std::string from = prefix ? replica : "";
    size_t start = 0;
    for (size_t end; (end = pending.find('\n', start)) != std::string::npos; start = end + 1) {
      sink.line(from, std::string_view(pending).substr(start, end - start));
    }
    pending.erase(0, start);
    if (flush && !pending.empty()) {
      sink.line(from, pending);
      pending.clear();
    }
    if (sink.flush) sink.flush();
  };
  if (!request.follow) {
    for (const auto& [replica, pod] : pods) {
      StatusOr<std::string> log = api_->PodLog(namespace_name, pod, options);
      if (!log.ok()) return Failed(namespace_name, log.status());
      pass_lines(replica, *log, /*flush=*/true);
    }
    return Status::OK();
  }
  // Every pod followed at once, each on a thread, lines kept whole.
  std::vector<Status> results(pods.size());
  std::vector<std::thread> followers;
  for (size_t i = 0; i < pods.size(); ++i) {
    followers.emplace_back([&, i] {
      std::string pending;
      results[i] =
          api_->FollowPodLog(namespace_name, pods[i].second, options,
                             std::chrono::duration_cast<std::chrono::seconds>(kFollowBound),
                             [&](std::string_view text) {
                               pending.append(text);
                               pass_lines(pods[i].first, pending, /*flush=*/false);
                               return true;
                             });
      pass_lines(pods[i].first, pending, /*flush=*/true);
    });
  }
  for (std::thread& follower : followers) follower.join();
  for (const Status& result : results) {
    if (!result.ok()) return Failed(namespace_name, result);
  }
  return Status::OK();
}

StatusOr<std::unique_ptr<KubeJobClient>> ConnectJobClient(const KubeClientOptions& options) {
  StatusOr<ConnectionConfig> config = options.kubeconfig.empty()
                                          ? LoadConnectionConfig(options.context)
                                          : LoadKubeconfig({options.kubeconfig}, options.context);
  if (!config.ok()) {
    return Status::FailedPrecondition("--kubernetes: cannot read the cluster's connection: " +
                                      config.status().message());
  }
  HttpApiOptions http;
  http.request_timeout = options.request_timeout;
  http.connect_timeout = std::min(http.connect_timeout, options.request_timeout);
  http.user_agent = "cohort-cli";
  auto api = std::make_unique<HttpApi>(*config, http);
  return std::make_unique<KubeJobClient>(std::move(api), std::move(*config));
}

}  // namespace cohort::kube
