#include "apps/cohort/kube_commands.h"

#include <iostream>
#include <memory>
#include <mutex>
#include <set>
#include <sstream>
#include <thread>

#include "apps/cohort/exit_codes.h"
#include "apps/cohort/job_file.h"
#include "exec/log_selection.h"
#include "job/reconciler.h"
#include "job/spec_writer.h"
#include "job/status_json.h"
#include "kube/client/http_api.h"
#include "kube/view/kube_job_store.h"
#include "view/command_line.h"
#include "view/job_view.h"
#include "view/jsonpath.h"
#include "view/spec_diff.h"

namespace cohort::cli {
namespace {

constexpr char kResourceName[] = "tfjob.kubeflow.org";
// The longest a single watch request runs before `wait` watches again.
constexpr std::chrono::seconds kWatchChunk{60};

// One cluster and namespace, connected.
struct Cluster {
  std::unique_ptr<kube::HttpApi> api;
  std::string namespace_name;

  // "(namespace team; context "kind" of /home/u/.kube/config, server https://...)"
  std::string Where() const {
    return "(namespace " + namespace_name + "; " + api->config().description + ", server " +
           api->config().cluster.server + ")";
  }
};

int Fail(int exit_code, const std::string& message) {
  std::cerr << "cohort: " << message << "\n";
  return exit_code;
}

int ExitCodeFor(const Status& status) {
  switch (status.code()) {
    case Status::Code::kInvalidArgument:
    case Status::Code::kAlreadyExists:
      return kExitInvalidInput;
    default:
      return kExitError;
  }
}

StatusOr<Cluster> Connect(const KubeTarget& target) {
  StatusOr<kube::ConnectionConfig> config = kube::LoadConnectionConfig(target.context);
  if (!config.ok()) {
    return Status::InvalidArgument("--kubernetes: cannot read the cluster's connection: " +
                                   config.status().message());
  }
  kube::HttpApiOptions options;
  auto timeout =
      std::chrono::milliseconds(static_cast<int64_t>(target.request_timeout_seconds * 1000));
  options.request_timeout = timeout;
  options.connect_timeout = std::min(options.connect_timeout, timeout);
  options.user_agent = "cohort-cli";
  Cluster cluster;
  cluster.namespace_name = target.namespace_flag.value_or(config->namespace_name);
  cluster.api = std::make_unique<kube::HttpApi>(std::move(*config), options);
  return cluster;
}

// A failed call's message, with where it went, and what to do when the TFJob type is missing.
int FailCall(Cluster& cluster, const Status& status) {
  std::string message = status.message() + " " + cluster.Where();
  if (status.code() == Status::Code::kNotFound) {
    StatusOr<kube::ObjectList> probe =
        cluster.api->List(kube::TFJobResource(), cluster.namespace_name);
    if (!probe.ok() && probe.status().code() == Status::Code::kNotFound) {
      message +=
          "\nThe cluster has no TFJob resource type (kubeflow.org/v1 tfjobs): install the "
          "CRD with `kubectl apply -k deploy/kubernetes` (with Cohort's operator) or "
          "`cohort crd | kubectl apply -f -`";
    }
  }
  return Fail(ExitCodeFor(status), message);
}

int PrintObject(const view::OutputFormat& format, const nlohmann::json& object) {
  StatusOr<std::string> text = view::RenderObject(format, object);
  if (!text.ok()) return Fail(kExitInvalidInput, text.status().message());
  std::cout << *text;
  return kExitSucceeded;
}

std::string SecondsText(double seconds) {
  std::ostringstream text;
  text << seconds << "s";
  return text.str();
}

nlohmann::json ListOf(const std::vector<nlohmann::json>& items) {
  return {{"apiVersion", "v1"}, {"kind", "List"}, {"items", items}};
}

std::string NameOf(const nlohmann::json& object) {
  return object.value("metadata", nlohmann::json::object()).value("name", "");
}
std::string NamespaceOf(const nlohmann::json& object) {
  return object.value("metadata", nlohmann::json::object()).value("namespace", "");
}

// The TFJob body a loaded job amounts to: the normalised spec as a local run reads it, without
// its creation time (the server's to set).
nlohmann::json TFJobBody(const job::Job& job) {
  nlohmann::json body = job::ToJson(job);
  body["metadata"].erase("creationTimestamp");
  return body;
}

// Which operator will run a new TFJob. What can be known: whether the Deployment of Cohort's
// operator (deploy/kubernetes) or of Kubeflow's standalone training-operator is there and has
// ready replicas. An operator installed under another name is not found, and a user who may not
// read Deployments there is told so.
std::string OperatorNote(Cluster& cluster) {
  const kube::Resource deployments{"apps", "v1", "deployments", "Deployment", true};
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
        cluster.api->Get(deployments, candidate.namespace_name, candidate.name);
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

// The job file as locally, in -n's namespace when given, else the file's; a file that names
// none (or "default", which cannot be told apart) goes to the context's namespace, as kubectl
// puts it.
StatusOr<LoadedJob> LoadForCluster(const KubeTarget& target, const Cluster& cluster,
                                   const std::string& file, const job::JobFileOptions& options) {
  StatusOr<LoadedJob> loaded = LoadJobFile(file, options, target.namespace_flag);
  if (!loaded.ok()) return loaded.status();
  std::string& namespace_name = loaded->job.metadata.namespace_name;
  if (!target.namespace_flag && namespace_name == "default")
    namespace_name = cluster.namespace_name;
  return loaded;
}

}  // namespace

int KubeSubmit(const KubeTarget& target, const std::string& file,
               const job::JobFileOptions& options, bool print_created) {
  StatusOr<Cluster> cluster = Connect(target);
  if (!cluster.ok()) return Fail(kExitError, cluster.status().message());
  StatusOr<LoadedJob> loaded = LoadForCluster(target, *cluster, file, options);
  if (!loaded.ok()) return Fail(ExitCodeFor(loaded.status()), loaded.status().message());
  const job::Job& job = loaded->job;
  StatusOr<nlohmann::json> created =
      cluster->api->Create(kube::TFJobResource(), job.metadata.namespace_name, TFJobBody(job));
  if (!created.ok()) return FailCall(*cluster, created.status());
  if (print_created) {
    std::cout << kResourceName << "/" << job.metadata.name << " created\n";
  } else {
    std::cout << job.metadata.name << "\n";
  }
  std::cout.flush();
  std::cerr << "cohort: TFJob " << job.metadata.namespace_name << "/" << job.metadata.name
            << " created on " << cluster->api->config().cluster.server << "; "
            << OperatorNote(*cluster) << "\n";
  return kExitSucceeded;
}

int KubeApply(const KubeTarget& target, const std::string& file,
              const job::JobFileOptions& options) {
  StatusOr<Cluster> cluster = Connect(target);
  if (!cluster.ok()) return Fail(kExitError, cluster.status().message());
  StatusOr<LoadedJob> loaded = LoadForCluster(target, *cluster, file, options);
  if (!loaded.ok()) return Fail(ExitCodeFor(loaded.status()), loaded.status().message());
  const job::Job& job = loaded->job;
  const std::string resource = std::string(kResourceName) + "/" + job.metadata.name;
  nlohmann::json body = TFJobBody(job);
  StatusOr<nlohmann::json> existing =
      cluster->api->Get(kube::TFJobResource(), job.metadata.namespace_name, job.metadata.name);
  if (!existing.ok() && existing.status().code() == Status::Code::kNotFound) {
    StatusOr<nlohmann::json> created =
        cluster->api->Create(kube::TFJobResource(), job.metadata.namespace_name, body);
    if (!created.ok()) return FailCall(*cluster, created.status());
    std::cout << resource << " created\n";
    return kExitSucceeded;
  }
  if (!existing.ok()) return FailCall(*cluster, existing.status());
  bool changed = false;
  StatusOr<nlohmann::json> updated = kube::UpdateWithRetry(
      *cluster->api, kube::TFJobResource(), job.metadata.namespace_name, job.metadata.name,
      [&](nlohmann::json& object) {
        changed =
            !view::SpecDifferences(object.value("spec", nlohmann::json::object()), body["spec"])
                 .empty();
        if (changed) object["spec"] = body["spec"];
        return changed;
      });
  if (!updated.ok()) return FailCall(*cluster, updated.status());
  std::cout << resource << (changed ? " configured\n" : " unchanged\n");
  return kExitSucceeded;
}

namespace {

// The pods of the jobs named (every job's when `job_name` is empty).
StatusOr<std::vector<nlohmann::json>> JobPods(Cluster& cluster, const std::string& namespace_name,
                                              const std::string& job_name) {
  kube::Selector selector;
  selector.label_selector =
      job_name.empty() ? std::string(kube::kJobNameLabel) : kube::JobPodSelector(job_name);
  StatusOr<kube::ObjectList> pods =
      cluster.api->List(kube::PodResource(), namespace_name, selector);
  if (!pods.ok()) return pods.status();
  return pods->items;
}

// Events whose involvedObject is the TFJob or one of its pods.
StatusOr<std::vector<nlohmann::json>> JobEvents(Cluster& cluster, const nlohmann::json& tfjob,
                                                const std::vector<nlohmann::json>& pods) {
  std::set<std::string> names = {"TFJob/" + NameOf(tfjob)};
  for (const nlohmann::json& pod : pods) names.insert("Pod/" + NameOf(pod));
  StatusOr<kube::ObjectList> events = cluster.api->List(kube::EventResource(), NamespaceOf(tfjob));
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

int NoResources(const Cluster& cluster, bool all_namespaces) {
  std::cerr << "No resources found"
            << (all_namespaces ? "" : " in " + cluster.namespace_name + " namespace") << ".\n";
  return kExitSucceeded;
}

int GetPods(Cluster& cluster, const std::vector<std::string>& names, const KubeGetFlags& flags,
            const view::OutputFormat& format) {
  using Kind = view::OutputFormat::Kind;
  std::vector<nlohmann::json> pods;
  const std::string namespace_name = flags.all_namespaces ? "" : cluster.namespace_name;
  if (names.empty()) {
    StatusOr<std::vector<nlohmann::json>> listed = JobPods(cluster, namespace_name, "");
    if (!listed.ok()) return FailCall(cluster, listed.status());
    pods = std::move(*listed);
  } else {
    for (const std::string& name : names) {
      StatusOr<nlohmann::json> pod =
          cluster.api->Get(kube::PodResource(), cluster.namespace_name, name);
      if (!pod.ok()) return FailCall(cluster, pod.status());
      pods.push_back(std::move(*pod));
    }
  }
  if (format.kind == Kind::kJson || format.kind == Kind::kYaml || format.kind == Kind::kJsonPath) {
    return PrintObject(format, names.size() == 1 ? pods[0] : ListOf(pods));
  }
  if (pods.empty()) return NoResources(cluster, flags.all_namespaces);
  if (format.kind == Kind::kName) {
    for (const nlohmann::json& pod : pods) std::cout << "pod/" << NameOf(pod) << "\n";
    return kExitSucceeded;
  }
  std::cout << kube::PodTable(pods, format.kind == Kind::kWide, flags.all_namespaces, Clock::now());
  return kExitSucceeded;
}

}  // namespace

int KubeGet(const KubeTarget& target, const std::vector<std::string>& arguments,
            const KubeGetFlags& flags) {
  using Kind = view::OutputFormat::Kind;
  StatusOr<view::OutputFormat> format = view::ParseOutputFormat(flags.output);
  if (!format.ok()) return Fail(kExitInvalidInput, format.status().message());
  StatusOr<view::ResourceArguments> resource = view::SplitResource(arguments);
  if (!resource.ok()) return Fail(kExitInvalidInput, resource.status().message());
  StatusOr<Cluster> cluster = Connect(target);
  if (!cluster.ok()) return Fail(kExitError, cluster.status().message());
  if (resource->resource == view::Resource::kPod) {
    return GetPods(*cluster, resource->names, flags, *format);
  }
  std::vector<nlohmann::json> tfjobs;
  if (resource->names.empty()) {
    StatusOr<kube::ObjectList> listed = cluster->api->List(
        kube::TFJobResource(), flags.all_namespaces ? "" : cluster->namespace_name);
    if (!listed.ok()) return FailCall(*cluster, listed.status());
    tfjobs = std::move(listed->items);
  } else {
    for (const std::string& name : resource->names) {
      StatusOr<nlohmann::json> tfjob =
          cluster->api->Get(kube::TFJobResource(), cluster->namespace_name, name);
      if (!tfjob.ok()) return FailCall(*cluster, tfjob.status());
      tfjobs.push_back(std::move(*tfjob));
    }
  }
  if (format->kind == Kind::kJson || format->kind == Kind::kYaml ||
      format->kind == Kind::kJsonPath) {
    return PrintObject(*format, resource->names.size() == 1 ? tfjobs[0] : ListOf(tfjobs));
  }
  if (tfjobs.empty()) return NoResources(*cluster, flags.all_namespaces);
  if (format->kind == Kind::kName) {
    for (const nlohmann::json& tfjob : tfjobs) {
      std::cout << kResourceName << "/" << NameOf(tfjob) << "\n";
    }
    return kExitSucceeded;
  }
  bool wide = format->kind == Kind::kWide;
  std::vector<nlohmann::json> pods;  // for the RESTARTS column of -o wide
  if (wide) {
    StatusOr<std::vector<nlohmann::json>> listed =
        JobPods(*cluster, flags.all_namespaces ? "" : cluster->namespace_name, "");
    if (!listed.ok()) return FailCall(*cluster, listed.status());
    pods = std::move(*listed);
  }
  kube::KubeJobStore store;
  std::vector<exec::JobKey> keys;
  for (const nlohmann::json& tfjob : tfjobs) {
    kube::ClusterJobObjects objects{tfjob, {}, {}};
    for (const nlohmann::json& pod : pods) {
      if (NamespaceOf(pod) == NamespaceOf(tfjob) &&
          pod["metadata"]
                  .value("labels", nlohmann::json::object())
                  .value(kube::kJobNameLabel, "") == NameOf(tfjob)) {
        objects.pods.push_back(pod);
      }
    }
    if (Status added = store.Add(objects); !added.ok()) return FailCall(*cluster, added);
    keys.push_back({NamespaceOf(tfjob), NameOf(tfjob)});
  }
  std::cout << view::JobTable(store, keys, wide, flags.all_namespaces);
  return kExitSucceeded;
}

int KubeDescribe(const KubeTarget& target, const std::vector<std::string>& arguments) {
  StatusOr<view::ResourceArguments> resource = view::SplitResource(arguments);
  if (!resource.ok()) return Fail(kExitInvalidInput, resource.status().message());
  if (resource->resource == view::Resource::kPod) {
    return Fail(kExitInvalidInput,
                "this command takes tfjobs; a pod is a replica of its job (cohort get pods)");
  }
  if (resource->names.empty()) return Fail(kExitInvalidInput, "a job name is required");
  StatusOr<Cluster> cluster = Connect(target);
  if (!cluster.ok()) return Fail(kExitError, cluster.status().message());
  for (const std::string& name : resource->names) {
    StatusOr<nlohmann::json> tfjob =
        cluster->api->Get(kube::TFJobResource(), cluster->namespace_name, name);
    if (!tfjob.ok()) return FailCall(*cluster, tfjob.status());
    StatusOr<std::vector<nlohmann::json>> pods = JobPods(*cluster, cluster->namespace_name, name);
    if (!pods.ok()) return FailCall(*cluster, pods.status());
    StatusOr<std::vector<nlohmann::json>> events = JobEvents(*cluster, *tfjob, *pods);
    if (!events.ok()) return FailCall(*cluster, events.status());
    kube::KubeJobStore store;
    if (Status added = store.Add({*tfjob, *pods, *events}); !added.ok()) {
      return FailCall(*cluster, added);
    }
    StatusOr<std::string> text = view::DescribeJob(store, {cluster->namespace_name, name});
    if (!text.ok()) return FailCall(*cluster, text.status());
    std::cout << (name == resource->names.front() ? "" : "\n\n") << *text;
  }
  return kExitSucceeded;
}

int KubeLogs(const KubeTarget& target, const std::string& name, const KubeLogsFlags& flags) {
  kube::LogOptions options;
  options.container = flags.container;
  options.previous = flags.previous;
  if (flags.tail >= 0) options.tail_lines = flags.tail;
  if (!flags.since.empty()) {
    StatusOr<std::chrono::seconds> since = exec::ParseDuration(flags.since);
    if (!since.ok()) return Fail(kExitInvalidInput, since.status().message());
    options.since_seconds = static_cast<int>(since->count());
  }
  StatusOr<Cluster> cluster = Connect(target);
  if (!cluster.ok()) return Fail(kExitError, cluster.status().message());
  // NAME is a TFJob (all its pods, or --replica's) or else a pod.
  std::vector<std::pair<std::string, std::string>> pods;  // replica, pod name
  StatusOr<nlohmann::json> tfjob =
      cluster->api->Get(kube::TFJobResource(), cluster->namespace_name, name);
  if (tfjob.ok()) {
    StatusOr<std::vector<nlohmann::json>> listed = JobPods(*cluster, cluster->namespace_name, name);
    if (!listed.ok()) return FailCall(*cluster, listed.status());
    kube::KubeJobStore store;  // for the spec's replica order
    if (Status added = store.Add({*tfjob, *listed, {}}); !added.ok()) {
      return FailCall(*cluster, added);
    }
    for (const exec::ReplicaRow& row : store.ReadReplicas({cluster->namespace_name, name})) {
      if (flags.replica.empty() || row.name == flags.replica) {
        pods.push_back({row.name, name + "-" + row.name});
      }
    }
    if (pods.empty()) {
      return Fail(kExitError, "TFJob " + cluster->namespace_name + "/" + name + " has no pod" +
                                  (flags.replica.empty() ? "" : " for replica " + flags.replica) +
                                  " yet " + cluster->Where());
    }
  } else if (tfjob.status().code() == Status::Code::kNotFound) {
    pods.push_back({"", name});
  } else {
    return FailCall(*cluster, tfjob.status());
  }
  bool prefix = pods.size() > 1 || (tfjob.ok() && flags.replica.empty());
  std::mutex output;
  auto print_lines = [&](const std::string& replica, std::string& pending, bool flush) {
    std::lock_guard<std::mutex> lock(output);
    size_t start = 0;
    for (size_t end; (end = pending.find('\n', start)) != std::string::npos; start = end + 1) {
      if (prefix) std::cout << "[" << replica << "] ";
      std::cout << std::string_view(pending).substr(start, end - start) << "\n";
    }
    pending.erase(0, start);
    if (flush && !pending.empty()) {
      if (prefix) std::cout << "[" << replica << "] ";
      std::cout << pending << "\n";
      pending.clear();
    }
    std::cout.flush();
  };
  if (!flags.follow) {
    for (const auto& [replica, pod] : pods) {
      StatusOr<std::string> log = cluster->api->PodLog(cluster->namespace_name, pod, options);
      if (!log.ok()) return FailCall(*cluster, log.status());
      print_lines(replica, *log, /*flush=*/true);
    }
    return kExitSucceeded;
  }
  // Every pod followed at once, each on a thread, lines kept whole.
  std::vector<Status> results(pods.size());
  std::vector<std::thread> followers;
  for (size_t i = 0; i < pods.size(); ++i) {
    followers.emplace_back([&, i] {
      std::string pending;
      results[i] =
          cluster->api->FollowPodLog(cluster->namespace_name, pods[i].second, options,
                                     std::chrono::duration_cast<std::chrono::seconds>(kFollowBound),
                                     [&](std::string_view text) {
                                       pending.append(text);
                                       print_lines(pods[i].first, pending, /*flush=*/false);
                                       return true;
                                     });
      print_lines(pods[i].first, pending, /*flush=*/true);
    });
  }
  for (std::thread& follower : followers) follower.join();
  for (const Status& result : results) {
    if (!result.ok()) return FailCall(*cluster, result);
  }
  return kExitSucceeded;
}

int KubeWait(const KubeTarget& target, const std::string& name, double timeout_seconds) {
  StatusOr<Cluster> cluster = Connect(target);
  if (!cluster.ok()) return Fail(kExitError, cluster.status().message());
  const std::string what = "TFJob " + cluster->namespace_name + "/" + name;
  const auto deadline =
      Clock::now() + std::chrono::milliseconds(static_cast<int64_t>(timeout_seconds * 1000));
  std::optional<job::JobStatus> finished;
  auto check = [&](const nlohmann::json& tfjob) -> Status {
    if (!tfjob.contains("status") || !tfjob["status"].is_object()) return Status::OK();
    StatusOr<job::JobStatus> status = job::JobStatusFromJson(tfjob["status"]);
    if (!status.ok())
      return Status::InvalidArgument(what + ": status: " + status.status().message());
    if (job::IsFinished(*status)) finished = *status;
    return Status::OK();
  };
  kube::Selector selector;
  selector.field_selector = "metadata.name=" + name;
  while (!finished) {
    // A fresh read, then a watch from its version until the deadline (again after a 410).
    StatusOr<nlohmann::json> tfjob =
        cluster->api->Get(kube::TFJobResource(), cluster->namespace_name, name);
    if (!tfjob.ok()) return FailCall(*cluster, tfjob.status());
    if (Status checked = check(*tfjob); !checked.ok()) return FailCall(*cluster, checked);
    std::string version =
        tfjob->value("metadata", nlohmann::json::object()).value("resourceVersion", "");
    Status watched = Status::OK();
    while (!finished && watched.ok()) {
      auto left = std::chrono::duration_cast<std::chrono::seconds>(deadline - Clock::now());
      if (left.count() <= 0) {
        return Fail(kExitError, "timed out after " + SecondsText(timeout_seconds) +
                                    " waiting for " + what + " to finish " + cluster->Where());
      }
      Status inner = Status::OK();
      watched = cluster->api->Watch(
          kube::TFJobResource(), cluster->namespace_name, selector, version,
          std::min(left, kWatchChunk), [&](const kube::WatchEvent& event) {
            version = event.object.value("metadata", nlohmann::json::object())
                          .value("resourceVersion", version);
            if (event.type == kube::WatchEvent::Type::kBookmark) return true;
            if (event.type == kube::WatchEvent::Type::kDeleted) {
              inner = Status::NotFound(what + " was deleted while waiting for it to finish");
              return false;
            }
            inner = check(event.object);
            return inner.ok() && !finished;
          });
      if (!inner.ok()) return FailCall(*cluster, inner);
    }
    if (!watched.ok() && watched.code() != Status::Code::kOutOfRange) {
      return FailCall(*cluster, watched);
    }
  }
  std::cout << name << " " << job::JobState(*finished) << "\n";
  return job::IsSucceeded(*finished) ? kExitSucceeded : kExitJobFailed;
}

int KubeDelete(const KubeTarget& target, const std::vector<std::string>& arguments,
               const std::string& file, bool ignore_not_found) {
  StatusOr<Cluster> cluster = Connect(target);
  if (!cluster.ok()) return Fail(kExitError, cluster.status().message());
  std::vector<std::pair<std::string, std::string>> jobs;  // namespace, name
  if (!file.empty()) {
    StatusOr<LoadedJob> loaded = LoadForCluster(target, *cluster, file, {});
    if (!loaded.ok()) return Fail(kExitInvalidInput, loaded.status().message());
    jobs.push_back({loaded->job.metadata.namespace_name, loaded->job.metadata.name});
  }
  if (!arguments.empty()) {
    StatusOr<view::ResourceArguments> resource = view::SplitResource(arguments);
    if (!resource.ok()) return Fail(kExitInvalidInput, resource.status().message());
    if (resource->resource == view::Resource::kPod) {
      return Fail(kExitInvalidInput,
                  "this command takes tfjobs; a pod is a replica of its job (cohort get pods)");
    }
    for (const std::string& name : resource->names) jobs.push_back({cluster->namespace_name, name});
  }
  if (jobs.empty()) return Fail(kExitInvalidInput, "give a job name or -f FILE");
  int exit_code = kExitSucceeded;
  for (const auto& [namespace_name, name] : jobs) {
    kube::DeleteOptions options;
    options.propagation_policy = "Background";
    Status deleted = cluster->api->Delete(kube::TFJobResource(), namespace_name, name, options);
    int result = kExitSucceeded;
    if (deleted.ok()) {
      std::cout << kResourceName << " \"" << name << "\" deleted\n";
    } else if (!(ignore_not_found && deleted.code() == Status::Code::kNotFound)) {
      result = FailCall(*cluster, deleted);
    }
    if (exit_code == kExitSucceeded) exit_code = result;
  }
  return exit_code;
}

int KubeSetSuspended(const KubeTarget& target, const std::string& name, bool suspended) {
  StatusOr<Cluster> cluster = Connect(target);
  if (!cluster.ok()) return Fail(kExitError, cluster.status().message());
  const std::string resource = std::string(kResourceName) + "/" + name;
  if (suspended) {
    StatusOr<nlohmann::json> tfjob =
        cluster->api->Get(kube::TFJobResource(), cluster->namespace_name, name);
    if (!tfjob.ok()) return FailCall(*cluster, tfjob.status());
    if (tfjob->contains("status") && (*tfjob)["status"].is_object()) {
      StatusOr<job::JobStatus> status = job::JobStatusFromJson((*tfjob)["status"]);
      if (status.ok() && job::IsFinished(*status)) {
        return Fail(kExitInvalidInput, resource + " has already " + job::JobState(*status) +
                                           "; a finished job cannot be suspended");
      }
    }
  }
  nlohmann::json patch = {{"spec", {{"runPolicy", {{"suspend", suspended}}}}}};
  StatusOr<nlohmann::json> patched =
      cluster->api->Patch(kube::TFJobResource(), cluster->namespace_name, name, patch);
  if (!patched.ok()) return FailCall(*cluster, patched.status());
  std::cout << resource << (suspended ? " suspended" : " resumed") << "\n";
  return kExitSucceeded;
}

}  // namespace cohort::cli
