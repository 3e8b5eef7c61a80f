#include "view/local_job_client.h"

#include "base/names.h"
#include "job/job_kind.h"
#include "job/reconciler.h"
#include "job/spec_writer.h"
#include "view/job_view.h"
#include "view/job_watch.h"
#include "view/pod_view.h"
#include "view/spec_diff.h"

namespace cohort::view {
namespace {

// One call's LocalJobs, and its store as a JobList holds it (sharing the LocalJobs' life).
struct Jobs {
  std::shared_ptr<exec::LocalJobs> local;
  std::shared_ptr<const exec::JobStateStore> store;
};
Jobs Open(const std::filesystem::path& home) {
  auto local = std::make_shared<exec::LocalJobs>(home);
  std::shared_ptr<const exec::JobStateStore> store(local, &local->store());
  return {std::move(local), std::move(store)};
}

}  // namespace

Status LocalJobClient::CheckKind(const exec::JobStateStore& store, const exec::JobKey& key,
                                 const job::JobKind* kind) {
  if (kind == nullptr) return Status::OK();
  StatusOr<job::Job> spec = store.ReadSpec(key);
  if (!spec.ok()) return spec.status();
  if (spec->job_kind == kind) return Status::OK();
  return Status::NotFound(kind->name() + " " + key.ToString() + " not found (it is a " +
                          spec->job_kind->name() + ": cohort get " +
                          job::LowerCase(spec->job_kind->name()) + " " + key.name + ")");
}

StatusOr<std::vector<exec::JobKey>> LocalJobClient::Lookup(exec::LocalJobs& jobs,
                                                           const JobQuery& query) {
  if (!query.all_namespaces) {
    COHORT_RETURN_IF_ERROR(CheckName(query.namespace_name, "namespace", ""));
  }
  for (const std::string& name : query.names) {
    COHORT_RETURN_IF_ERROR(CheckName(name, "job name", ""));
  }
  std::vector<exec::JobKey> keys;
  if (!query.names.empty()) {
    for (const std::string& name : query.names) {
      StatusOr<std::vector<exec::JobKey>> found = jobs.Lookup(name, query.namespace_name, false);
      if (!found.ok()) return found.status();
      for (const exec::JobKey& key : *found) {
        if (Status of_kind = CheckKind(jobs.store(), key, query.kind); !of_kind.ok()) {
          return of_kind;
        }
      }
      keys.insert(keys.end(), found->begin(), found->end());
    }
    return keys;
  }
  if (options_.tidy_every.count() == 0) {
    StatusOr<std::vector<exec::JobKey>> found =
        jobs.Lookup("", query.namespace_name, query.all_namespaces);
    if (!found.ok()) return found.status();
    keys = std::move(*found);
  } else {
    {
      std::lock_guard<std::mutex> lock(tidy_mutex_);
      auto now = std::chrono::steady_clock::now();
      if (now - last_tidy_ >= options_.tidy_every) {
        jobs.Tidy(jobs.store().ListJobs());
        last_tidy_ = now;
      }
    }
    keys = jobs.store().ListJobs(query.all_namespaces ? "" : query.namespace_name);
  }
  if (query.kind == nullptr) return keys;
  // The local store keys jobs by namespace and name alone: a job's kind is its spec's.
  std::vector<exec::JobKey> of_kind;
  for (const exec::JobKey& key : keys) {
    StatusOr<job::Job> spec = jobs.store().ReadSpec(key);
    if (spec.ok() && spec->job_kind == query.kind) of_kind.push_back(key);
  }
  return of_kind;
}

StatusOr<JobList> LocalJobClient::GetJobs(const JobQuery& query) {
  Jobs jobs = Open(options_.home);
  StatusOr<std::vector<exec::JobKey>> keys = Lookup(*jobs.local, query);
  if (!keys.ok()) return keys.status();
  JobList list{jobs.store, std::move(*keys), {}};
  if (query.objects) {
    for (const exec::JobKey& key : list.keys) {
      StatusOr<nlohmann::json> object = JobObject(*list.store, key);
      if (object.ok()) list.objects.push_back(std::move(*object));
    }
  }
  return list;
}

StatusOr<PodList> LocalJobClient::GetPods(const JobQuery& query,
                                          const std::vector<std::string>& pod_names) {
  Jobs jobs = Open(options_.home);
  auto pods = std::make_shared<std::vector<PodRef>>();
  if (pod_names.empty()) {
    StatusOr<std::vector<exec::JobKey>> keys = Lookup(*jobs.local, query);
    if (!keys.ok()) return keys.status();
    for (const exec::JobKey& key : *keys) {
      std::vector<PodRef> of_job = JobPods(*jobs.store, key);
      pods->insert(pods->end(), of_job.begin(), of_job.end());
    }
  } else {
    COHORT_RETURN_IF_ERROR(CheckName(query.namespace_name, "namespace", ""));
    for (const std::string& name : pod_names) {
      COHORT_RETURN_IF_ERROR(CheckName(name, "pod name", ""));
    }
    jobs.local->Tidy(jobs.local->store().ListJobs(query.namespace_name));
    for (const std::string& name : pod_names) {
      StatusOr<PodRef> pod = FindPod(*jobs.store, query.namespace_name, name);
      if (!pod.ok()) return pod.status();
      pods->push_back(*pod);
    }
  }
  PodList list;
  for (const PodRef& pod : *pods) {
    list.objects.push_back(PodObject(*jobs.store, pod));
    list.jobs.push_back(pod.job);
  }
  std::shared_ptr<const exec::JobStateStore> store = jobs.store;
  list.table = [store, pods](const std::vector<size_t>& which, bool wide, bool show_namespace) {
    std::vector<PodRef> selected;
    for (size_t index : which) selected.push_back(pods->at(index));
    return PodTable(*store, selected, wide, show_namespace);
  };
  return list;
}

StatusOr<bool> LocalJobClient::Watch(
    const std::vector<exec::JobKey>& keys, std::chrono::milliseconds timeout,
    const std::function<void(const JobList& changed)>& on_changed) {
  Jobs jobs = Open(options_.home);
  JobWatch watch(*jobs.store, keys);
  watch.Changed();  // what the caller has just printed
  return WatchJobs(
      watch, timeout, [&] { jobs.local->Tidy(keys); },
      [&](const exec::JobKey& key) {
        on_changed(JobList{jobs.store, {key}, {}});
      });
}

StatusOr<Created> LocalJobClient::Create(const CreateRequest& request) {
  exec::LocalJobs jobs(options_.home);
  if (request.on_warning) {
    for (const std::string& warning : request.local_warnings) request.on_warning(warning);
  }
  StatusOr<exec::ImageMap> images = jobs.LoadImages(request.image_flags);
  if (!images.ok()) return images.status();
  StatusOr<exec::CreatedJob> created = jobs.Create(request.job, *images);
  if (!created.ok()) return created.status();
  exec::JobKey key = created->key;
  if (Status detached = jobs.Detach(std::move(*created), request.image_flags); !detached.ok()) {
    return detached;
  }
  return Created{key, request.job.job_kind->ResourceName(), Created::Outcome::kCreated, ""};
}

StatusOr<Created> LocalJobClient::Apply(const CreateRequest& request) {
  exec::LocalJobs jobs(options_.home);
  const job::Job& job = request.job;
  exec::JobKey key{job.metadata.namespace_name, job.metadata.name};
  if (!jobs.store().Exists(key)) return Create(request);
  const std::string resource = job.job_kind->ResourceName();
  StatusOr<nlohmann::json> running = jobs.store().ReadSpecObject(key);
  if (!running.ok()) return running.status();
  std::vector<std::string> differences =
      SpecDifferences((*running)["spec"], job::ToJson(job)["spec"]);
  if (differences.empty()) return Created{key, resource, Created::Outcome::kUnchanged, ""};
  std::string message = resource + "/" + key.name +
                        " exists with another spec; a local job keeps the spec it was started "
                        "with (delete it and apply again to run this one):";
  for (const std::string& difference : differences) message += "\n  " + difference;
  return Status::InvalidArgument(message);
}

StatusOr<std::string> LocalJobClient::Delete(const exec::JobKey& key, const job::JobKind* kind) {
  COHORT_RETURN_IF_ERROR(exec::CheckJobKey(key));
  exec::LocalJobs jobs(options_.home);
  if (!jobs.store().Exists(key)) return JobNotFound(key, kind);
  if (Status of_kind = CheckKind(jobs.store(), key, kind); !of_kind.ok()) return of_kind;
  const std::string resource = ResourceName(jobs.store(), key);
  if (Status deleted = jobs.Delete(key); !deleted.ok()) return deleted;
  return resource;
}

StatusOr<std::string> LocalJobClient::DeleteAndPurge(
    const exec::JobKey& key, const job::JobKind* kind,
    const std::function<void(const std::string&)>& on_removed) {
  COHORT_RETURN_IF_ERROR(exec::CheckJobKey(key));
  exec::LocalJobs jobs(options_.home);
  if (!jobs.store().Exists(key)) return JobNotFound(key, kind);
  if (Status of_kind = CheckKind(jobs.store(), key, kind); !of_kind.ok()) return of_kind;
  const std::string resource = ResourceName(jobs.store(), key);
  Status purged = jobs.DeleteAndPurge(
      key, [&](const std::filesystem::path& directory) { on_removed(directory.string()); });
  if (!purged.ok()) return purged;
  return resource;
}

StatusOr<std::string> LocalJobClient::SetSuspended(const exec::JobKey& key,
                                                   const job::JobKind* kind, bool suspended) {
  COHORT_RETURN_IF_ERROR(exec::CheckJobKey(key));
  exec::LocalJobs jobs(options_.home);
  if (jobs.store().Exists(key)) {
    if (Status of_kind = CheckKind(jobs.store(), key, kind); !of_kind.ok()) return of_kind;
  }
  const std::string resource = ResourceName(jobs.store(), key);
  StatusOr<job::JobStatus> current = jobs.store().ReadStatus(key);
  if (suspended && current.ok() && job::IsFinished(*current)) {
    return Status::InvalidArgument(resource + "/" + key.name + " has already " +
                                   job::JobState(*current) +
                                   "; a finished job cannot be suspended");
  }
  if (Status changed = jobs.SetSuspended(key, suspended); !changed.ok()) return changed;
  return resource;
}

StatusOr<job::JobStatus> LocalJobClient::Wait(const exec::JobKey& key, const job::JobKind* kind,
                                              std::chrono::milliseconds timeout) {
  COHORT_RETURN_IF_ERROR(exec::CheckJobKey(key));
  exec::LocalJobs jobs(options_.home);
  if (jobs.store().Exists(key)) {
    if (Status of_kind = CheckKind(jobs.store(), key, kind); !of_kind.ok()) return of_kind;
  }
  return jobs.Wait(key, static_cast<double>(timeout.count()) / 1000);
}

Status LocalJobClient::Logs(const std::string& namespace_name, const LogRequest& request,
                            const LogSink& sink) {
  exec::LocalJobs jobs(options_.home);
  exec::JobKey key{namespace_name, request.name};
  COHORT_RETURN_IF_ERROR(CheckName(namespace_name, "namespace", ""));
  COHORT_RETURN_IF_ERROR(CheckName(request.name, "job or pod name", ""));
  if (!request.replica.empty()) {
    COHORT_RETURN_IF_ERROR(CheckName(request.replica, "replica", "--replica"));
  }
  std::string replica = request.replica;
  bool is_pod = false;  // a pod's log is its replica's last run, as kubectl's current container
  if (!jobs.store().Exists(key)) {
    StatusOr<PodRef> pod = FindPod(jobs.store(), namespace_name, request.name);
    if (!pod.ok()) {
      return Status::NotFound("job " + key.ToString() + " not found, nor " +
                              pod.status().message());
    }
    key = pod->job;
    replica = pod->replica;
    is_pod = true;
  }
  if (Status of_kind = CheckKind(jobs.store(), key, request.kind); !of_kind.ok()) return of_kind;
  if (!replica.empty()) {
    if (Status known = jobs.CheckReplica(key, replica); !known.ok()) return known;
  }
  if (!request.container.empty()) {
    StatusOr<job::Job> spec = jobs.store().ReadSpec(key);
    std::string container = spec.ok() ? spec->job_kind->facts().container_name : "";
    if (request.container != container) {
      return Status::InvalidArgument("container " + request.container + " is not valid for " +
                                     key.name + ": its replicas run one container, " + container);
    }
  }
  exec::LogSelection selection;
  selection.previous = request.previous;
  selection.latest = is_pod && !request.previous;
  if (request.tail >= 0) selection.tail = static_cast<size_t>(request.tail);
  selection.since = request.since;
  const bool every_replica = replica.empty();
  Status read = jobs.ReadLogs(
      key, replica, request.follow,
      [&](const std::string& from, const std::string& line) {
        sink.line(every_replica ? from : "", line);
      },
      [&] {
        if (sink.flush) sink.flush();
      },
      selection);
  // What the logs cannot give (no previous run) is the request's to change, as an API server's
  // 400 for the same request.
  if (!read.ok()) return Status::InvalidArgument(read.message());
  return Status::OK();
}

}  // namespace cohort::view
