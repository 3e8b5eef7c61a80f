#include "kube/view/kube_job_client.h"

#include <algorithm>
#include <mutex>
#include <set>
#include <sstream>
#include <thread>

#include "job/reconciler.h"
#include "job/spec_writer.h"
#include "job/status_json.h"
#include "kube/client/http_api.h"
#include "kube/objects/objects.h"
#include "kube/view/kube_job_store.h"
#include "view/spec_diff.h"

namespace cohort::kube {
namespace {

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
// Whether `pod` may belong to a job of `kind_name`: its controller ownerReference names that
// kind, or it has none (the labels alone cannot tell apart the pods of two kinds' jobs of one
// name).
bool OwnedByKind(const nlohmann::json& pod, const std::string& kind_name) {
  nlohmann::json owners =
      pod.value("metadata", nlohmann::json::object()).value("ownerReferences", nlohmann::json());
  if (!owners.is_array()) return true;
  for (const nlohmann::json& owner : owners) {
    if (owner.is_object() && owner.value("controller", false)) {
      return owner.value("kind", "") == kind_name;
    }
  }
  return true;
}
// Every kind's plural, comma-separated, as kubectl takes several types.
std::string Plurals() {
  std::string plurals;
  for (const job::JobKind* kind : job::KindRegistry::Default().kinds()) {
    plurals += (plurals.empty() ? "" : ",") + kind->facts().plural;
  }
  return plurals;
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

// The object a job amounts to on a cluster, of its own kind: the normalised spec as a local run
// reads it, without its creation time (the server's to set).
nlohmann::json JobBody(const job::Job& job) {
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

Status KubeJobClient::Failed(const std::string& namespace_name, const Status& status,
                             const job::JobKind* kind) {
  std::string message = status.message() + " " + Where(namespace_name);
  if (status.code() == Status::Code::kNotFound) {
    for (const job::JobKind* each : view::KindsOf(kind)) {
      StatusOr<ObjectList> probe = api_->List(JobResource(*each), namespace_name);
      if (!probe.ok() && probe.status().code() == Status::Code::kNotFound) {
        message += "\nThe cluster has no " + each->name() + " resource type (" +
                   each->api_version() + " " + each->facts().plural +
                   "): install the CRD with `kubectl apply -k deploy/kubernetes` (with Cohort's "
                   "operator) or `cohort crd | kubectl apply -f -`";
      }
    }
  }
  return SameCode(status, message);
}

StatusOr<std::vector<nlohmann::json>> KubeJobClient::JobPods(const std::string& namespace_name,
                                                             const std::string& job_name,
                                                             const std::string& kind_name) {
  Selector selector;
  selector.label_selector =
      job_name.empty() ? std::string(kJobNameLabel) : JobPodSelector(job_name);
  StatusOr<ObjectList> pods = api_->List(PodResource(), namespace_name, selector);
  if (!pods.ok()) return pods.status();
  if (kind_name.empty()) return pods->items;
  std::vector<nlohmann::json> owned;
  for (nlohmann::json& pod : pods->items) {
    if (OwnedByKind(pod, kind_name)) owned.push_back(std::move(pod));
  }
  return owned;
}

StatusOr<std::vector<nlohmann::json>> KubeJobClient::JobEvents(
    const nlohmann::json& job, const std::vector<nlohmann::json>& pods) {
  std::set<std::string> names = {job.value("kind", "") + "/" + NameOf(job)};
  for (const nlohmann::json& pod : pods) names.insert("Pod/" + NameOf(pod));
  StatusOr<ObjectList> events = api_->List(EventResource(), NamespaceOf(job));
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

StatusOr<std::vector<KubeJobClient::Found>> KubeJobClient::FindJob(
    const std::string& namespace_name, const std::string& name, const job::JobKind* kind) {
  std::vector<Found> found;
  for (const job::JobKind* each : view::KindsOf(kind)) {
    StatusOr<nlohmann::json> object = api_->Get(JobResource(*each), namespace_name, name);
    if (object.ok()) {
      found.push_back({each, std::move(*object)});
    } else if (object.status().code() != Status::Code::kNotFound) {
      return Failed(namespace_name, object.status(), each);
    }
  }
  return found;
}

StatusOr<KubeJobClient::Found> KubeJobClient::FindOneJob(const exec::JobKey& key,
                                                         const job::JobKind* kind,
                                                         const std::string& command) {
  StatusOr<std::vector<Found>> found = FindJob(key.namespace_name, key.name, kind);
  if (!found.ok()) return found.status();
  if (found->empty()) {
    return Failed(key.namespace_name, view::JobNotFound(key, kind), kind);
  }
  if (found->size() > 1) {
    std::vector<const job::JobKind*> kinds;
    for (const Found& each : *found) kinds.push_back(each.kind);
    return view::AmbiguousJobName(key, kinds, command);
  }
  return std::move(found->front());
}

StatusOr<view::JobList> KubeJobClient::GetJobs(const view::JobQuery& query) {
  const std::string& namespace_name = query.namespace_name;
  const std::string listed_namespace = query.all_namespaces ? "" : namespace_name;
  std::vector<nlohmann::json> jobs;
  if (query.names.empty()) {
    // Every kind asked for; with every kind, one whose type the cluster lacks is left out
    // (kubectl's `get` of several types fails instead), unless it lacks them all.
    Status missing = Status::OK();
    size_t served = 0;
    for (const job::JobKind* kind : view::KindsOf(query.kind)) {
      StatusOr<ObjectList> listed = api_->List(JobResource(*kind), listed_namespace);
      if (!listed.ok()) {
        if (query.kind != nullptr || listed.status().code() != Status::Code::kNotFound) {
          return Failed(namespace_name, listed.status(), kind);
        }
        missing = listed.status();
        continue;
      }
      ++served;
      for (nlohmann::json& item : listed->items) jobs.push_back(std::move(item));
    }
    if (served == 0) return Failed(namespace_name, missing, query.kind);
    // By namespace and name, as JobList promises (kinds in the registry's order within a name).
    std::stable_sort(jobs.begin(), jobs.end(),
                     [](const nlohmann::json& a, const nlohmann::json& b) {
                       return std::make_pair(NamespaceOf(a), NameOf(a)) <
                              std::make_pair(NamespaceOf(b), NameOf(b));
                     });
  } else {
    for (const std::string& name : query.names) {
      StatusOr<Found> found = FindOneJob({namespace_name, name}, query.kind, "get");
      if (!found.ok()) return found.status();
      jobs.push_back(std::move(found->object));
    }
  }
  std::vector<nlohmann::json> pods;  // of every job listed, for the replica rows
  if (query.detail == view::JobDetail::kReplicas) {
    StatusOr<std::vector<nlohmann::json>> listed = JobPods(listed_namespace, "", "");
    if (!listed.ok()) return Failed(namespace_name, listed.status(), nullptr);
    pods = std::move(*listed);
  }
  auto store = std::make_shared<KubeJobStore>();
  view::JobList list;
  std::vector<nlohmann::json> objects;
  for (nlohmann::json& job : jobs) {
    const std::string kind_name = job.value("kind", "");
    ClusterJobObjects cluster_objects{job, {}, {}};
    if (query.detail == view::JobDetail::kEvents) {
      StatusOr<std::vector<nlohmann::json>> of_job =
          JobPods(NamespaceOf(job), NameOf(job), kind_name);
      if (!of_job.ok()) return Failed(namespace_name, of_job.status(), nullptr);
      StatusOr<std::vector<nlohmann::json>> events = JobEvents(job, *of_job);
      if (!events.ok()) return Failed(namespace_name, events.status(), nullptr);
      cluster_objects.pods = std::move(*of_job);
      cluster_objects.events = std::move(*events);
    }
    for (const nlohmann::json& pod : pods) {
      if (NamespaceOf(pod) == NamespaceOf(job) && JobOfPod(pod) == NameOf(job) &&
          OwnedByKind(pod, kind_name)) {
        cluster_objects.pods.push_back(pod);
      }
    }
    const exec::JobKey key{NamespaceOf(job), NameOf(job)};
    // The objects are shown as the server sent them, whatever their spec; only the read model
    // needs a spec it can read.
    if (Status added = store->Add(cluster_objects); !added.ok()) {
      if (added.code() == Status::Code::kAlreadyExists) {
        // The store keys jobs by namespace and name: a second kind's job of the same name is
        // listed by its kind alone.
        list.warnings.push_back(kind_name + " " + key.ToString() +
                                " is not shown: a job of another kind has its name (cohort get " +
                                job::LowerCase(kind_name) + " " + key.name + " shows it)");
        continue;
      }
      if (!query.objects) return Failed(namespace_name, added, nullptr);
    }
    list.keys.push_back(key);
    objects.push_back(std::move(job));
  }
  if (query.objects) list.objects = std::move(objects);
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
          JobPods(query.all_namespaces ? "" : namespace_name, job,
                  query.kind == nullptr ? "" : query.kind->name());
      if (!listed.ok()) return Failed(namespace_name, listed.status(), nullptr);
      pods->insert(pods->end(), listed->begin(), listed->end());
    }
  } else {
    for (const std::string& name : pod_names) {
      StatusOr<nlohmann::json> pod = api_->Get(PodResource(), namespace_name, name);
      if (!pod.ok()) return Failed(namespace_name, pod.status(), nullptr);
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
  return Status::InvalidArgument("get -w is not available with --kubernetes; use `kubectl get " +
                                 Plurals() + " -w` or `cohort wait --kubernetes`");
}

StatusOr<bool> KubeJobClient::Watch(const std::vector<exec::JobKey>&, std::chrono::milliseconds,
                                    const std::function<void(const view::JobList&)>&) {
  return CanWatch();
}

std::string KubeJobClient::OperatorNote(const job::JobKind& kind) {
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
      "kubeflow/training-operator); the " +
      kind.name() +
      " waits until an operator runs it (kubectl apply -k deploy/kubernetes installs Cohort's)";
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
  const job::JobKind& kind = *job.job_kind;
  const std::string& namespace_name = job.metadata.namespace_name;
  StatusOr<nlohmann::json> created = api_->Create(JobResource(kind), namespace_name, JobBody(job));
  if (!created.ok()) return Failed(namespace_name, created.status(), &kind);
  std::string note = kind.name() + " " + namespace_name + "/" + job.metadata.name + " created on " +
                     config_.cluster.server + "; " + OperatorNote(kind);
  return view::Created{{namespace_name, job.metadata.name},
                       kind.ResourceName(),
                       view::Created::Outcome::kCreated,
                       note};
}

StatusOr<view::Created> KubeJobClient::Apply(const view::CreateRequest& request) {
  const job::Job& job = request.job;
  const job::JobKind& kind = *job.job_kind;
  const Resource resource = JobResource(kind);
  const std::string& namespace_name = job.metadata.namespace_name;
  view::Created result{{namespace_name, job.metadata.name},
                       kind.ResourceName(),
                       view::Created::Outcome::kCreated,
                       ""};
  nlohmann::json body = JobBody(job);
  StatusOr<nlohmann::json> existing = api_->Get(resource, namespace_name, job.metadata.name);
  if (!existing.ok() && existing.status().code() == Status::Code::kNotFound) {
    StatusOr<nlohmann::json> created = api_->Create(resource, namespace_name, body);
    if (!created.ok()) return Failed(namespace_name, created.status(), &kind);
    return result;
  }
  if (!existing.ok()) return Failed(namespace_name, existing.status(), &kind);
  bool changed = false;
  StatusOr<nlohmann::json> updated = UpdateWithRetry(
      *api_, resource, namespace_name, job.metadata.name, [&](nlohmann::json& object) {
        changed =
            !view::SpecDifferences(object.value("spec", nlohmann::json::object()), body["spec"])
                 .empty();
        if (changed) object["spec"] = body["spec"];
        return changed;
      });
  if (!updated.ok()) return Failed(namespace_name, updated.status(), &kind);
  result.outcome =
      changed ? view::Created::Outcome::kConfigured : view::Created::Outcome::kUnchanged;
  return result;
}

StatusOr<std::string> KubeJobClient::Delete(const exec::JobKey& key, const job::JobKind* kind) {
  if (kind == nullptr) {
    StatusOr<Found> found = FindOneJob(key, nullptr, "delete");
    if (!found.ok()) return found.status();
    kind = found->kind;
  }
  DeleteOptions options;
  options.propagation_policy = "Background";  // as kubectl's default: the server removes the pods
  Status deleted = api_->Delete(JobResource(*kind), key.namespace_name, key.name, options);
  if (!deleted.ok()) return Failed(key.namespace_name, deleted, kind);
  return kind->ResourceName();
}

StatusOr<std::string> KubeJobClient::SetSuspended(const exec::JobKey& key, const job::JobKind* kind,
                                                  bool suspended) {
  StatusOr<Found> found = FindOneJob(key, kind, suspended ? "suspend" : "resume");
  if (!found.ok()) return found.status();
  kind = found->kind;
  const std::string resource = kind->ResourceName() + "/" + key.name;
  const nlohmann::json& object = found->object;
  if (suspended && object.contains("status") && object["status"].is_object()) {
    StatusOr<job::JobStatus> status = job::JobStatusFromJson(object["status"]);
    if (status.ok() && job::IsFinished(*status)) {
      return Status::InvalidArgument(resource + " has already " + job::JobState(*status) +
                                     "; a finished job cannot be suspended");
    }
  }
  nlohmann::json patch = {{"spec", {{"runPolicy", {{"suspend", suspended}}}}}};
  StatusOr<nlohmann::json> patched =
      api_->Patch(JobResource(*kind), key.namespace_name, key.name, patch);
  if (!patched.ok()) return Failed(key.namespace_name, patched.status(), kind);
  return kind->ResourceName();
}

StatusOr<job::JobStatus> KubeJobClient::Wait(const exec::JobKey& key, const job::JobKind* kind,
                                             std::chrono::milliseconds timeout) {
  const std::string& namespace_name = key.namespace_name;
  StatusOr<Found> found = FindOneJob(key, kind, "wait");
  if (!found.ok()) return found.status();
  kind = found->kind;
  const Resource resource = JobResource(*kind);
  const std::string what = kind->name() + " " + namespace_name + "/" + key.name;
  const auto deadline = Clock::now() + timeout;
  std::optional<job::JobStatus> finished;
  auto check = [&](const nlohmann::json& object) -> Status {
    if (!object.contains("status") || !object["status"].is_object()) return Status::OK();
    StatusOr<job::JobStatus> status = job::JobStatusFromJson(object["status"]);
    if (!status.ok())
      return Status::InvalidArgument(what + ": status: " + status.status().message());
    if (job::IsFinished(*status)) finished = *status;
    return Status::OK();
  };
  Selector selector;
  selector.field_selector = "metadata.name=" + key.name;
  std::optional<nlohmann::json> first = std::move(found->object);
  while (!finished) {
    // A fresh read (the one that found the job, the first time), then a watch from its version
    // until the deadline (again after a 410).
    StatusOr<nlohmann::json> object = first ? StatusOr<nlohmann::json>(std::move(*first))
                                            : api_->Get(resource, namespace_name, key.name);
    first.reset();
    if (!object.ok()) return Failed(namespace_name, object.status(), kind);
    if (Status checked = check(*object); !checked.ok())
      return Failed(namespace_name, checked, kind);
    std::string version =
        object->value("metadata", nlohmann::json::object()).value("resourceVersion", "");
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
          resource, namespace_name, selector, version, std::min(left, kWatchChunk),
          [&](const WatchEvent& event) {
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
      if (!inner.ok()) return Failed(namespace_name, inner, kind);
    }
    if (!watched.ok() && watched.code() != Status::Code::kOutOfRange) {
      return Failed(namespace_name, watched, kind);
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
  // NAME is a job of any kind (all its pods, or --replica's) or else a pod.
  std::vector<std::pair<std::string, std::string>> pods;  // replica, pod name
  StatusOr<std::vector<Found>> found = FindJob(namespace_name, name, request.kind);
  if (!found.ok()) return found.status();
  if (found->size() > 1) {
    std::vector<const job::JobKind*> kinds;
    for (const Found& each : *found) kinds.push_back(each.kind);
    return view::AmbiguousJobName({namespace_name, name}, kinds, "logs");
  }
  const bool is_job = found->size() == 1;
  if (is_job) {
    const Found& job = found->front();
    StatusOr<std::vector<nlohmann::json>> listed = JobPods(namespace_name, name, job.kind->name());
    if (!listed.ok()) return Failed(namespace_name, listed.status(), nullptr);
    KubeJobStore store;  // for the spec's replica order
    if (Status added = store.Add({job.object, *listed, {}}); !added.ok()) {
      return Failed(namespace_name, added, job.kind);
    }
    for (const exec::ReplicaRow& row : store.ReadReplicas({namespace_name, name})) {
      if (request.replica.empty() || row.name == request.replica) {
        pods.push_back({row.name, name + "-" + row.name});
      }
    }
    if (pods.empty()) {
      return Status::FailedPrecondition(
          job.kind->name() + " " + namespace_name + "/" + name + " has no pod" +
          (request.replica.empty() ? "" : " for replica " + request.replica) + " yet " +
          Where(namespace_name));
    }
  } else if (request.kind != nullptr) {
    return Failed(namespace_name, view::JobNotFound({namespace_name, name}, request.kind),
                  request.kind);
  } else {
    pods.push_back({"", name});
  }
  const bool prefix = pods.size() > 1 || (is_job && request.replica.empty());
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
      if (!log.ok()) return Failed(namespace_name, log.status(), nullptr);
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
    if (!result.ok()) return Failed(namespace_name, result, nullptr);
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
