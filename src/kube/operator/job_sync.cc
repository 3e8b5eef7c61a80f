#include "kube/operator/job_sync.h"

#include <algorithm>
#include <map>

#include "job/defaults.h"
#include "job/job_kind.h"
#include "job/job_secret.h"
#include "job/reconciler.h"
#include "job/restart_state_machine.h"
#include "job/spec_parser.h"
#include "job/status_json.h"
#include "job/validation.h"
#include "kube/objects/objects.h"

namespace cohort::kube {
namespace {

// The longest event message written; a long validation report is cut here.
constexpr size_t kMaxEventMessageBytes = 4096;

std::optional<Time> Earliest(std::optional<Time> a, std::optional<Time> b) {
  if (!a) return b;
  if (!b) return a;
  return std::min(*a, *b);
}

std::string Name(const nlohmann::json& object) { return object.at("metadata").value("name", ""); }
std::string Uid(const nlohmann::json& object) { return object.at("metadata").value("uid", ""); }

// The job's runPolicy.managedBy when it names a controller other than Kubeflow's, else "".
std::string OtherManager(const nlohmann::json& object) {
  auto spec = object.find("spec");
  if (spec == object.end() || !spec->is_object()) return "";
  auto run_policy = spec->find("runPolicy");
  if (run_policy == spec->end() || !run_policy->is_object()) return "";
  auto managed_by = run_policy->find("managedBy");
  if (managed_by == run_policy->end() || !managed_by->is_string()) return "";
  const std::string manager = managed_by->get<std::string>();
  return manager.empty() || manager == job::kManagedByTrainingOperator ? "" : manager;
}

StatusOr<job::Job> DecodeAndValidate(const nlohmann::json& object, const std::string& key) {
  StatusOr<job::Job> decoded = job::DecodeJob(object, {}, key);
  if (!decoded.ok()) return decoded.status();
  job::ApplyDefaults(*decoded);
  COHORT_RETURN_IF_ERROR(job::ValidateJob(*decoded));
  return decoded;
}

// The kind `object` says it is (apiVersion and kind), else `cached_as`, the kind of the informer
// that cached it: the kind its pods' owner references name, its Events' source and its resource.
const job::JobKind& KindOf(const nlohmann::json& object, const job::JobKind& cached_as) {
  const job::JobKind* kind =
      job::KindRegistry::Default().Find(object.value("apiVersion", ""), object.value("kind", ""));
  return kind != nullptr ? *kind : cached_as;
}

// Whole seconds, rounded up. Restarts are decided at such a time, so that the restart-after
// annotation (whole seconds) holds the machine's time exactly and a restart is never made before
// its back-off has passed.
Time CeilToSeconds(Time time) {
  const Time floor = std::chrono::floor<std::chrono::seconds>(time);
  return floor == time ? time : floor + std::chrono::seconds(1);
}

// Where a PodGroup of `api_version` ("scheduling.volcano.sh/v1beta1") lives.
Resource PodGroupResource(const std::string& api_version) {
  const size_t slash = api_version.find('/');
  return Resource{api_version.substr(0, slash),
                  slash == std::string::npos ? "" : api_version.substr(slash + 1), "podgroups",
                  "PodGroup", true};
}

void SetAnnotation(nlohmann::json& object, const std::string& key, const std::string& value) {
  nlohmann::json& metadata = object["metadata"];
  if (!metadata.contains("annotations") || !metadata["annotations"].is_object()) {
    metadata["annotations"] = nlohmann::json::object();
  }
  metadata["annotations"][key] = value;
}

// A replica whose restart waits, as the reconciler is to see it: Pending, with the new counts.
job::ObservedReplica WaitingReplica(const ReplicaRef& replica,
                                    const job::RestartStateMachine& restarts) {
  job::ObservedReplica waiting;
  waiting.type = replica.type;
  waiting.index = replica.index;
  waiting.phase = job::ReplicaPhase::kPending;
  waiting.restart_count = restarts.restarts();
  waiting.group_restarts = restarts.group_restarts();
  return waiting;
}

}  // namespace

ObjectBuilders KubeObjectBuilders() {
  ObjectBuilders builders;
  builders.pod = BuildPod;
  builders.service = BuildService;
  builders.pod_group = BuildPodGroup;
  builders.job_secret = [](const job::Job& job, const Owner& owner) -> StatusOr<nlohmann::json> {
    StatusOr<std::string> secret = job::NewJobSecret();
    if (!secret.ok()) return secret.status();
    return BuildJobSecret(job, owner, *secret);
  };
  return builders;
}

JobSync::JobSync(Api& api, JobCaches caches, ObjectBuilders builders, ObjectOptions options,
                 std::function<Time()> clock, std::function<bool()> may_act,
                 std::function<void(const std::string&)> log)
    : api_(api),
      caches_(std::move(caches)),
      builders_(std::move(builders)),
      options_(std::move(options)),
      clock_(std::move(clock)),
      may_act_(std::move(may_act)),
      log_(std::move(log)) {}

// One pass: the state it gathers and the steps of job_sync.h, in order.
class JobSync::Pass {
 public:
  // `object` is the job as cached by `operated`'s informer; `key` its "namespace/name".
  Pass(JobSync& sync, const OperatedKind& operated, nlohmann::json object, std::string key)
      : sync_(sync),
        operated_(operated),
        object_(std::move(object)),
        kind_(KindOf(object_, *operated.kind)),
        key_(std::move(key)),
        namespace_(object_["metadata"].value("namespace", "default")),
        uid_(Uid(object_)),
        now_(sync.clock_()) {}

  StatusOr<SyncResult> Run();

 private:
  Status MayAct() const;
  void Log(const std::string& line) const {
    if (sync_.log_) sync_.log_(Describe() + ": " + line);
  }
  Status MarkInvalid(const std::string& problem);
  void CollectObjects();
  Status Observe(std::vector<job::ObservedReplica>& observed);
  void ReportAbnormalPod(const nlohmann::json& pod);
  Status CarryOut(const job::Action& action);
  Status StartReplica(const ReplicaRef& replica, const job::RestartRecord& restarts);
  Status RestartReplica(const ReplicaRef& replica, bool group_restart);
  Status TerminateReplica(const ReplicaRef& replica);
  Status StopReplica(const ReplicaRef& replica);
  Status RecordOnService(const ReplicaRef& replica, const nlohmann::json& annotations);
  Status DeleteJob();
  Status EnsurePodGroup(bool& admitted);
  Status EnsureJobSecret();
  void DeletePodGroup();
  Status DeletePod(const nlohmann::json& pod);
  Status DeleteService(const nlohmann::json& service);
  Status ClearPendingRestart(const ReplicaRef& replica);
  Status WriteStatus(const job::JobStatus& status);
  void RecordEvents();
  Owner OwnerOf() const { return Owner{kind_.api_version(), kind_.name(), Name(object_), uid_}; }
  // "TFJob default/mnist": the job, for logs and messages.
  std::string Describe() const { return kind_.name() + " " + key_; }
  std::string PodName(const ReplicaRef& replica) const {
    return job::ReplicaName(Name(object_), replica.type, replica.index);
  }
  void AddEvent(const char* type, const std::string& reason, std::string message) {
    if (message.size() > kMaxEventMessageBytes) message.resize(kMaxEventMessageBytes);
    events_.push_back(
        job::Event{type, reason, message, std::chrono::floor<std::chrono::seconds>(now_)});
  }

  JobSync& sync_;
  const OperatedKind& operated_;
  nlohmann::json object_;
  const job::JobKind& kind_;  // the object's kind: what its pods' owner references name
  const std::string key_;
  const std::string namespace_;
  const std::string uid_;
  const Time now_;
  job::Job job_;
  job::JobStatus previous_;
  bool status_was_read_ = false;
  std::map<ReplicaRef, nlohmann::json> pods_;
  std::map<ReplicaRef, nlohmann::json> services_;
  // Replicas whose restart waits, resumed from the records on their services.
  std::map<ReplicaRef, job::RestartStateMachine> pending_;
  std::map<ReplicaRef, TerminationRecord> terminated_;  // and not restarted yet
  std::vector<job::Event> events_;
  std::optional<Time> requeue_at_;
  std::optional<bool> pod_group_admitted_;  // once this pass has looked at the PodGroup
  bool job_secret_ready_ = false;           // once this pass has found or made the Secret
  SyncResult result_;
};

Status JobSync::Pass::MayAct() const {
  if (sync_.may_act_ && !sync_.may_act_()) {
    return Status::Aborted("not the leader any more: " + Describe() + " left as it is");
  }
  return Status::OK();
}

StatusOr<SyncResult> JobSync::Pass::Run() {
  if (const std::string manager = OtherManager(object_); !manager.empty()) {
    Log("skipped: runPolicy.managedBy is " + manager);
    result_.skipped = true;
    return result_;
  }
  if (IsTerminating(object_)) {
    result_.skipped = true;  // being deleted: the garbage collector removes its pods
    return result_;
  }
  if (object_.contains("status") && !object_["status"].is_null()) {
    StatusOr<job::JobStatus> read = job::JobStatusFromJson(object_["status"]);
    if (read.ok()) {
      previous_ = std::move(*read);
      status_was_read_ = true;
    } else {
      Log("status unreadable, reconciling from an empty one: " + read.status().message());
    }
  }
  StatusOr<job::Job> decoded = DecodeAndValidate(object_, key_);
  if (!decoded.ok()) {
    COHORT_RETURN_IF_ERROR(MarkInvalid(decoded.status().message()));
    return result_;
  }
  job_ = std::move(*decoded);

  CollectObjects();
  std::vector<job::ObservedReplica> observed;
  COHORT_RETURN_IF_ERROR(Observe(observed));

  job::ReconcileResult reconciled = job::Reconcile(job_, previous_, observed, now_);
  Status acted;
  bool terminate_failed = false;
  for (const job::Action& action : reconciled.actions) {
    // A reporter restarted while the replica it reported still runs would take its report with
    // it: its group restart waits for a pass in which the termination is made.
    if (terminate_failed && action.kind == job::Action::Kind::kRestart && action.group_restart) {
      continue;
    }
    Status done = CarryOut(action);
    if (!done.ok() && action.kind == job::Action::Kind::kTerminate) terminate_failed = true;
    if (!done.ok() && acted.ok()) acted = done;
    if (!MayAct().ok()) return MayAct();  // leadership lost: touch nothing more
    if (result_.deleted) break;
  }
  if (result_.deleted) {
    RecordEvents();
    return result_;
  }
  if (reconciled.finished) {
    // A restart that was waiting when the job finished is not made: its record goes.
    for (const auto& [replica, pending] : pending_) {
      if (pods_.count(replica) || !services_.count(replica)) continue;
      Status deleted = DeleteService(services_.at(replica));
      if (!deleted.ok() && acted.ok()) acted = deleted;
    }
  }
  if (!sync_.options_.gang_scheduler.empty() && (reconciled.finished || job_.run_policy.suspend)) {
    DeletePodGroup();
  }
  Status written = WriteStatus(reconciled.status);
  if (written.ok()) {
    std::vector<job::Event> decided = reconciled.events;
    for (job::Event& event : decided) {
      if (event.message.size() > kMaxEventMessageBytes) event.message.resize(kMaxEventMessageBytes);
    }
    events_.insert(events_.begin(), decided.begin(), decided.end());
  } else {
    Log("status not written (" + written.message() + "); its events wait for the next pass");
  }
  RecordEvents();
  result_.requeue_at = Earliest(reconciled.requeue_at, requeue_at_);
  if (!written.ok()) return written;
  if (!acted.ok()) return acted;
  return result_;
}

// An invalid job fails once, with the parser's or the validator's message, and is left alone.
Status JobSync::Pass::MarkInvalid(const std::string& problem) {
  if (job::IsFailed(previous_)) return Status::OK();
  std::string message = Describe() + " is invalid: " + problem;
  if (message.size() > kMaxEventMessageBytes) message.resize(kMaxEventMessageBytes);
  Log("invalid: " + problem);
  job::JobStatus failed = previous_;
  const std::string reason = kind_.Reason(job::kConditionFailed);
  const Time now = std::chrono::floor<std::chrono::seconds>(now_);
  job::SetCondition(failed, job::kConditionFailed, "True", reason, message, now);
  if (!failed.completion_time) failed.completion_time = now;
  COHORT_RETURN_IF_ERROR(WriteStatus(failed));
  AddEvent("Warning", reason, message);
  RecordEvents();
  return Status::OK();
}

// The pods and services this job controls, by replica. Objects with the operator's labels that
// another object (or nothing) controls are not the job's, whatever their names.
void JobSync::Pass::CollectObjects() {
  auto collect = [&](Informer* cache, std::map<ReplicaRef, nlohmann::json>& into) {
    if (cache == nullptr) return;
    for (nlohmann::json& object : cache->ListControlledBy(uid_)) {
      if (object["metadata"].value("namespace", "") != namespace_) continue;
      if (ControllerUid(object, kind_.name()) != uid_) continue;
      std::optional<ReplicaRef> replica = ReplicaOf(job_, object);
      if (!replica) continue;
      into[*replica] = std::move(object);
    }
  };
  collect(sync_.caches_.pods, pods_);
  collect(sync_.caches_.services, services_);
  for (const auto& [replica, service] : services_) {
    if (std::optional<job::RestartRecord> waiting = WaitingRestartOf(service)) {
      pending_[replica] = job::RestartStateMachine::Resume(*waiting);
    } else if (std::optional<TerminationRecord> record = TerminationRecordOf(service)) {
      terminated_[replica] = *record;
    }
  }
}

// Each replica as the reconciler sees it. A replica waiting for its restart is Pending with its new
// restart count; once its back-off has passed and the exited pod is gone, the new pod is created
// here, as the local controller starts due restarts before it reconciles. A replica whose pod was
// terminated is Failed until it is restarted, from its record, whether the pod is still
// terminating or gone.
Status JobSync::Pass::Observe(std::vector<job::ObservedReplica>& observed) {
  const std::string& container = job_.job_kind->facts().container_name;
  for (auto& [replica, pod] : pods_) {
    if (pending_.count(replica) != 0 || terminated_.count(replica) != 0) continue;
    observed.push_back(ObservePod(pod, replica, container));
    ReportAbnormalPod(pod);
  }
  for (const auto& [replica, record] : terminated_) {
    auto pod = pods_.find(replica);
    const bool pod_is_terminated = pod != pods_.end() && Uid(pod->second) == record.pod_uid;
    observed.push_back(ObserveTerminated(pod_is_terminated ? pod->second : nlohmann::json(), record,
                                         replica, container));
  }
  // A copy: a restart that is done or made here leaves pending_.
  const std::map<ReplicaRef, job::RestartStateMachine> waiting_restarts = pending_;
  for (const auto& [replica, restarts] : waiting_restarts) {
    auto pod = pods_.find(replica);
    if (pod != pods_.end() && Uid(pod->second) != restarts.record().replaces) {
      // The new pod exists: the restart is done, only its record is left to clear.
      COHORT_RETURN_IF_ERROR(ClearPendingRestart(replica));
      observed.push_back(ObservePod(pod->second, replica, container));
      continue;
    }
    const job::ObservedReplica waiting = WaitingReplica(replica, restarts);
    const Time restart_after = *restarts.restart_after();
    if (pod != pods_.end()) {
      // The exited pod this restart replaces is still there: it goes first.
      observed.push_back(waiting);
      if (!IsTerminating(pod->second)) COHORT_RETURN_IF_ERROR(DeletePod(pod->second));
      requeue_at_ = Earliest(requeue_at_, std::max(now_ + std::chrono::seconds(1), restart_after));
      continue;
    }
    if (!restarts.IsDue(now_) || job::IsFinished(previous_)) {
      observed.push_back(waiting);
      if (!job::IsFinished(previous_)) requeue_at_ = Earliest(requeue_at_, restart_after);
      continue;
    }
    Status started = StartReplica(replica, restarts.record());
    COHORT_RETURN_IF_ERROR(MayAct());  // leadership lost: touch nothing more
    if (!started.ok() || pods_.count(replica) == 0) {
      observed.push_back(waiting);
      requeue_at_ = Earliest(requeue_at_, now_ + std::chrono::seconds(1));
      continue;
    }
    COHORT_RETURN_IF_ERROR(ClearPendingRestart(replica));
    observed.push_back(ObservePod(pods_.at(replica), replica, container));
  }
  return Status::OK();
}

// As the operator's abnormal-pod recorder: a live pod whose container waits with a message
// (ErrImagePull, CrashLoopBackOff...) or, before any container status, whose latest condition is
// not True (Unschedulable) gets a Warning on the job, with the kubelet's or scheduler's reason.
// Repeats are aggregated by the event recorder.
void JobSync::Pass::ReportAbnormalPod(const nlohmann::json& pod) {
  if (IsTerminating(pod) || !pod.contains("status") || !pod["status"].is_object()) return;
  const nlohmann::json& status = pod["status"];
  const std::string phase = status.value("phase", "");
  if (phase != "Pending" && phase != "Running") return;
  const std::string name = Name(pod);
  const nlohmann::json containers = status.value("containerStatuses", nlohmann::json::array());
  if (containers.is_array() && !containers.empty()) {
    for (const nlohmann::json& container : containers) {
      if (!container.is_object() || !container.contains("state")) continue;
      const nlohmann::json& waiting = container["state"].value("waiting", nlohmann::json());
      if (!waiting.is_object()) continue;
      const std::string reason = waiting.value("reason", "");
      const std::string message = waiting.value("message", "");
      if (reason.empty() || message.empty()) continue;
      AddEvent("Warning", reason,
               "Error pod " + name + " container " + container.value("name", "") +
                   " waiting message: " + message);
    }
    return;
  }
  const nlohmann::json conditions = status.value("conditions", nlohmann::json::array());
  if (!conditions.is_array() || conditions.empty() || !conditions.back().is_object()) return;
  const nlohmann::json& latest = conditions.back();
  const std::string reason = latest.value("reason", "");
  if (latest.value("status", "") == "True" || reason.empty()) return;
  AddEvent("Warning", reason,
           "Error pod " + name + " condition message: " + latest.value("message", ""));
}

Status JobSync::Pass::CarryOut(const job::Action& action) {
  const ReplicaRef replica{action.type, action.index};
  const std::string what =
      action.type + " " + std::to_string(action.index) + " (" + action.reason + ")";
  switch (action.kind) {
    case job::Action::Kind::kStart:
      if (pods_.count(replica) || pending_.count(replica) || terminated_.count(replica)) {
        return Status::OK();
      }
      Log("start " + what);
      return StartReplica(replica, job::RestartRecord{});
    case job::Action::Kind::kRestart:
      Log("restart " + what);
      return RestartReplica(replica, action.group_restart);
    case job::Action::Kind::kTerminate:
      Log("terminate " + what);
      return TerminateReplica(replica);
    case job::Action::Kind::kStop:
      Log("stop " + what);
      return StopReplica(replica);
    case job::Action::Kind::kDeleteJob:
      Log("delete the job (" + action.reason + ")");
      return DeleteJob();
  }
  return Status::OK();
}

// The service first (peers resolve each other through it), then the pod. A re-created replica's
// counts (`restarts`) go on the pod, so that they survive this operator.
Status JobSync::Pass::StartReplica(const ReplicaRef& replica, const job::RestartRecord& restarts) {
  bool admitted = true;
  COHORT_RETURN_IF_ERROR(EnsurePodGroup(admitted));
  if (!admitted) return Status::OK();  // no pod yet: the caller sees none was created
  COHORT_RETURN_IF_ERROR(EnsureJobSecret());
  const std::string name = PodName(replica);
  if (services_.count(replica) == 0) {
    StatusOr<nlohmann::json> service =
        sync_.builders_.service(job_, OwnerOf(), replica.type, replica.index, sync_.options_);
    if (!service.ok()) {
      AddEvent("Warning", "FailedCreateService", "Error creating: " + service.status().message());
      return service.status();
    }
    COHORT_RETURN_IF_ERROR(MayAct());
    StatusOr<nlohmann::json> created = sync_.api_.Create(ServiceResource(), namespace_, *service);
    if (created.ok()) {
      AddEvent("Normal", "SuccessfulCreateService", "Created service: " + name);
      services_[replica] = *created;
      if (sync_.caches_.services) sync_.caches_.services->Upsert(*created);
    } else if (created.status().code() != Status::Code::kAlreadyExists) {
      AddEvent("Warning", "FailedCreateService", "Error creating: " + created.status().message());
      return created.status();
    }
  }
  StatusOr<nlohmann::json> pod =
      sync_.builders_.pod(job_, OwnerOf(), replica.type, replica.index, sync_.options_);
  if (!pod.ok()) {
    AddEvent("Warning", "FailedCreatePod", "Error creating: " + pod.status().message());
    return pod.status();
  }
  AnnotatePodRestarts(*pod, restarts);
  COHORT_RETURN_IF_ERROR(MayAct());
  if (!job_.replica_specs.at(replica.type).template_spec.restart_policy.empty()) {
    AddEvent("Warning", "SetPodTemplateRestartPolicy",
             "Restart policy in pod template will be overwritten by restart policy in replica "
             "spec");
  }
  StatusOr<nlohmann::json> created = sync_.api_.Create(PodResource(), namespace_, *pod);
  if (!created.ok()) {
    // AlreadyExists from a pod of this job is the last run's, still terminating: the next pass
    // creates the new one. A pod of that name that the job does not control stays in the way,
    // untouched, and is reported.
    std::optional<nlohmann::json> existing =
        sync_.caches_.pods ? sync_.caches_.pods->Get(ObjectKey(namespace_, name)) : std::nullopt;
    const bool ours = existing && ControllerUid(*existing, kind_.name()) == uid_;
    if (created.status().code() != Status::Code::kAlreadyExists || !ours) {
      AddEvent("Warning", "FailedCreatePod", "Error creating: " + created.status().message());
    }
    return created.status();
  }
  AddEvent("Normal", "SuccessfulCreatePod", "Created pod: " + name);
  pods_[replica] = *created;
  if (sync_.caches_.pods) sync_.caches_.pods->Upsert(*created);
  return Status::OK();
}

// The restart is recorded on the replica's service before the exited pod is deleted, so that an
// operator that stops between the two finds the restart and its counts on the server. The
// replica's restart state machine resumes from the counts of the run that exited: a terminated
// replica's termination record (its pod terminating or gone), which the waiting restart replaces,
// else its exited pod.
Status JobSync::Pass::RestartReplica(const ReplicaRef& replica, bool group_restart) {
  auto pod = pods_.find(replica);
  auto terminated = terminated_.find(replica);
  job::RestartStateMachine restarts;
  std::string replaces_uid;
  if (terminated != terminated_.end()) {
    job::RestartRecord counts;
    counts.restarts = terminated->second.restarts;
    counts.group_restarts = terminated->second.group_restarts;
    restarts = job::RestartStateMachine::Resume(counts);
    replaces_uid = terminated->second.pod_uid;
  } else {
    if (pod == pods_.end() || IsTerminating(pod->second)) return Status::OK();
    restarts = job::RestartStateMachine::Resume(
        RestartRecordOfPod(pod->second, job_.job_kind->facts().container_name));
    replaces_uid = Uid(pod->second);
  }
  restarts.RestartDecided(group_restart, CeilToSeconds(now_), replaces_uid);
  nlohmann::json annotations = WaitingRestartAnnotations(restarts.record());
  annotations[kTerminatedPodAnnotation] = nullptr;
  annotations[kTerminatedAtAnnotation] = nullptr;
  COHORT_RETURN_IF_ERROR(RecordOnService(replica, annotations));
  pending_[replica] = restarts;
  terminated_.erase(replica);
  requeue_at_ = Earliest(requeue_at_, restarts.restart_after());
  if (pod == pods_.end() || Uid(pod->second) != replaces_uid || IsTerminating(pod->second)) {
    return Status::OK();
  }
  return DeletePod(pod->second);
}

// A replica its peers report hung: the termination is recorded on its service (the pod's uid and
// counts), then the pod is deleted with its grace period, as the kubelet ends a container whose
// liveness probe failed. Until the replica is restarted it is observed from that record.
Status JobSync::Pass::TerminateReplica(const ReplicaRef& replica) {
  auto pod = pods_.find(replica);
  if (pod == pods_.end() || IsTerminating(pod->second) || terminated_.count(replica) ||
      pending_.count(replica)) {
    return Status::OK();
  }
  const job::RestartRecord counts =
      RestartRecordOfPod(pod->second, job_.job_kind->facts().container_name);
  const TerminationRecord record{Uid(pod->second), std::chrono::floor<std::chrono::seconds>(now_),
                                 counts.restarts, counts.group_restarts};
  COHORT_RETURN_IF_ERROR(RecordOnService(
      replica, {{kTerminatedPodAnnotation, record.pod_uid},
                {kTerminatedAtAnnotation, FormatTime(record.at)},
                {kRestartsAnnotation, std::to_string(record.restarts)},
                {kGroupRestartsAnnotation, std::to_string(record.group_restarts)}}));
  terminated_[replica] = record;
  return DeletePod(pod->second);
}

// Merges `annotations` (a null removes one) into the replica's service, creating the service when
// it is gone.
Status JobSync::Pass::RecordOnService(const ReplicaRef& replica,
                                      const nlohmann::json& annotations) {
  COHORT_RETURN_IF_ERROR(MayAct());
  StatusOr<nlohmann::json> recorded =
      sync_.api_.Patch(ServiceResource(), namespace_, PodName(replica),
                       nlohmann::json{{"metadata", {{"annotations", annotations}}}});
  if (!recorded.ok() && recorded.status().code() == Status::Code::kNotFound) {
    StatusOr<nlohmann::json> service =
        sync_.builders_.service(job_, OwnerOf(), replica.type, replica.index, sync_.options_);
    if (!service.ok()) return service.status();
    for (const auto& [key, value] : annotations.items()) {
      if (value.is_string()) SetAnnotation(*service, key, value.get<std::string>());
    }
    recorded = sync_.api_.Create(ServiceResource(), namespace_, *service);
  }
  if (!recorded.ok()) {
    return recorded.status().WithContext("recording on the service of " + PodName(replica));
  }
  services_[replica] = *recorded;
  if (sync_.caches_.services) sync_.caches_.services->Upsert(*recorded);
  return Status::OK();
}

Status JobSync::Pass::StopReplica(const ReplicaRef& replica) {
  Status result;
  if (auto pod = pods_.find(replica); pod != pods_.end() && !IsTerminating(pod->second)) {
    result = DeletePod(pod->second);
  }
  COHORT_RETURN_IF_ERROR(MayAct());
  if (auto service = services_.find(replica); service != services_.end()) {
    Status deleted = DeleteService(service->second);
    if (result.ok()) result = deleted;
  }
  return result;
}

Status JobSync::Pass::DeletePod(const nlohmann::json& pod) {
  COHORT_RETURN_IF_ERROR(MayAct());
  const std::string name = Name(pod);
  Status deleted = sync_.api_.Delete(PodResource(), namespace_, name, {"", Uid(pod), std::nullopt});
  if (!deleted.ok() && deleted.code() != Status::Code::kNotFound) {
    AddEvent("Warning", "FailedDeletePod", "Error deleting: " + deleted.message());
    return deleted;
  }
  if (deleted.ok()) AddEvent("Normal", "SuccessfulDeletePod", "Deleted pod: " + name);
  if (sync_.caches_.pods) sync_.caches_.pods->Remove(ObjectKey(namespace_, name));
  return Status::OK();
}

Status JobSync::Pass::DeleteService(const nlohmann::json& service) {
  COHORT_RETURN_IF_ERROR(MayAct());
  const std::string name = Name(service);
  Status deleted =
      sync_.api_.Delete(ServiceResource(), namespace_, name, {"", Uid(service), std::nullopt});
  if (!deleted.ok() && deleted.code() != Status::Code::kNotFound) {
    AddEvent("Warning", "FailedDeleteService", "Error deleting: " + deleted.message());
    return deleted;
  }
  if (deleted.ok()) AddEvent("Normal", "SuccessfulDeleteService", "Deleted service: " + name);
  if (sync_.caches_.services) sync_.caches_.services->Remove(ObjectKey(namespace_, name));
  return Status::OK();
}

// The waiting restart has been made (its new pod carries the counts): the replica's state machine
// settles, and the service no longer records a waiting restart.
Status JobSync::Pass::ClearPendingRestart(const ReplicaRef& replica) {
  COHORT_RETURN_IF_ERROR(MayAct());
  auto waiting = pending_.find(replica);
  job::RestartStateMachine restarts =
      waiting != pending_.end() ? waiting->second : job::RestartStateMachine();
  restarts.Restarted();
  const nlohmann::json annotations = WaitingRestartAnnotations(restarts.record());
  StatusOr<nlohmann::json> patched =
      sync_.api_.Patch(ServiceResource(), namespace_, PodName(replica),
                       nlohmann::json{{"metadata", {{"annotations", annotations}}}});
  if (!patched.ok() && patched.status().code() != Status::Code::kNotFound) {
    return patched.status();
  }
  if (patched.ok() && sync_.caches_.services) sync_.caches_.services->Upsert(*patched);
  pending_.erase(replica);
  return Status::OK();
}

// TTL: the job goes with its dependents first (foreground), never a newer job of the same name.
Status JobSync::Pass::DeleteJob() {
  COHORT_RETURN_IF_ERROR(MayAct());
  Status deleted = sync_.api_.Delete(JobResource(kind_), namespace_, Name(object_),
                                     {"Foreground", uid_, std::nullopt});
  if (!deleted.ok() && deleted.code() != Status::Code::kNotFound) {
    AddEvent("Warning", "FailedDeleteJob", "Error deleting: " + deleted.message());
    return deleted;
  }
  AddEvent("Normal", "SuccessfulDeleteJob", "Deleted job: " + Name(object_));
  result_.deleted = true;
  return Status::OK();
}

// With gang scheduling the job's PodGroup exists before any of its pods. Volcano also admits the
// group before its pods may be created (the operator's DelayPodCreationDueToPodGroup): until the
// group's phase is set and not Pending, `admitted` is false and the job is looked at again in 1 s.
Status JobSync::Pass::EnsurePodGroup(bool& admitted) {
  admitted = true;
  if (sync_.options_.gang_scheduler.empty() || !sync_.builders_.pod_group) return Status::OK();
  if (pod_group_admitted_) {  // looked at once per pass
    admitted = *pod_group_admitted_;
    return Status::OK();
  }
  StatusOr<std::optional<nlohmann::json>> built =
      sync_.builders_.pod_group(job_, OwnerOf(), sync_.options_);
  if (!built.ok()) return built.status();
  if (built->has_value()) {
    const nlohmann::json& group = **built;
    const Resource resource = PodGroupResource(group.value("apiVersion", ""));
    const std::string name = group["metadata"].value("name", "");
    StatusOr<nlohmann::json> stored = sync_.api_.Get(resource, namespace_, name);
    if (!stored.ok() && stored.status().code() == Status::Code::kNotFound) {
      COHORT_RETURN_IF_ERROR(MayAct());
      stored = sync_.api_.Create(resource, namespace_, group);
    }
    if (!stored.ok()) return stored.status().WithContext("creating the PodGroup of " + Describe());
    if (resource.group == "scheduling.volcano.sh") {
      const nlohmann::json& status = (*stored)["status"];
      const std::string phase = status.is_object() ? status.value("phase", "") : "";
      if (phase.empty() || phase == "Pending") {
        Log("waits for PodGroup " + name + " to be admitted (phase \"" + phase + "\")");
        admitted = false;
        requeue_at_ = Earliest(requeue_at_, now_ + std::chrono::seconds(1));
      }
    }
  }
  pod_group_admitted_ = admitted;
  return Status::OK();
}

// The job's Secret exists before any of its pods, which read COHORT_JOB_SECRET from it. It is
// made once, with a fresh secret, and never changed (it is immutable): a replica re-created later
// reads what its peers read. A Secret of that name that this job does not control (another
// object's, or nobody's) is not the job's: its value may be known to others, so no pod is made.
Status JobSync::Pass::EnsureJobSecret() {
  if (job_secret_ready_ || !sync_.builders_.job_secret) return Status::OK();
  const std::string name = JobSecretName(job_);
  const Resource resource = SecretResource();
  auto check_owner = [&](const nlohmann::json& secret) -> Status {
    if (ControllerUid(secret, kind_.name()) == uid_) return Status::OK();
    Status refused = Status::FailedPrecondition(
        "secret " + namespace_ + "/" + name + " exists but is not controlled by " + Describe() +
        ": its job secret may be known to others, so no pod of the job is created; delete it "
        "and the operator makes the job's own");
    AddEvent("Warning", "FailedCreateSecret", "Error creating: " + refused.message());
    return refused;
  };
  StatusOr<nlohmann::json> stored = sync_.api_.Get(resource, namespace_, name);
  if (!stored.ok() && stored.status().code() == Status::Code::kNotFound) {
    StatusOr<nlohmann::json> secret = sync_.builders_.job_secret(job_, OwnerOf());
    if (!secret.ok()) {
      AddEvent("Warning", "FailedCreateSecret", "Error creating: " + secret.status().message());
      return secret.status();
    }
    COHORT_RETURN_IF_ERROR(MayAct());
    stored = sync_.api_.Create(resource, namespace_, *secret);
    if (stored.ok()) {
      AddEvent("Normal", "SuccessfulCreateSecret", "Created secret: " + name);
    } else if (stored.status().code() == Status::Code::kAlreadyExists) {
      stored = sync_.api_.Get(resource, namespace_, name);  // made meanwhile: whose is it?
    } else {
      AddEvent("Warning", "FailedCreateSecret", "Error creating: " + stored.status().message());
    }
  }
  if (!stored.ok()) return stored.status().WithContext("the job secret of " + Describe());
  COHORT_RETURN_IF_ERROR(check_owner(*stored));
  job_secret_ready_ = true;
  return Status::OK();
}

// Gang scheduling: the PodGroup goes when the job finishes or is suspended.
void JobSync::Pass::DeletePodGroup() {
  if (!sync_.builders_.pod_group || !MayAct().ok()) return;
  StatusOr<std::optional<nlohmann::json>> built =
      sync_.builders_.pod_group(job_, OwnerOf(), sync_.options_);
  if (!built.ok() || !built->has_value()) return;
  const nlohmann::json& group = **built;
  Status deleted = sync_.api_.Delete(PodGroupResource(group.value("apiVersion", "")), namespace_,
                                     group["metadata"].value("name", ""), {});
  if (deleted.ok()) {
    AddEvent("Normal", "SuccessfulDeletePodGroup",
             "Deleted PodGroup: " + group["metadata"].value("name", ""));
  } else if (deleted.code() != Status::Code::kNotFound) {
    AddEvent("Warning", "FailedDeletePodGroup", "Error deleting: " + deleted.message());
  }
}

// Through /status, only when the status changed; a 409 reads the job again and retries.
Status JobSync::Pass::WriteStatus(const job::JobStatus& status) {
  const nlohmann::json wanted = job::JobStatusToJson(status);
  if (status_was_read_ && wanted == job::JobStatusToJson(previous_)) return Status::OK();
  COHORT_RETURN_IF_ERROR(MayAct());
  StatusOr<nlohmann::json> updated = UpdateWithRetry(
      sync_.api_, JobResource(kind_), namespace_, Name(object_),
      [&](nlohmann::json& object) {
        if (Uid(object) != uid_) return false;  // a newer job of the same name
        object["status"] = wanted;
        return true;
      },
      /*status_subresource=*/true);
  if (!updated.ok()) return updated.status().WithContext("writing the status of " + Describe());
  if (job::JobState(status) != job::JobState(previous_)) {
    Log("is " + job::JobState(status) + " (was " +
        (job::JobState(previous_).empty() ? std::string("new") : job::JobState(previous_)) + ")");
  }
  if (operated_.jobs) operated_.jobs->Upsert(*updated);
  return Status::OK();
}

void JobSync::Pass::RecordEvents() {
  for (const job::Event& event : events_) {
    Status recorded = operated_.recorder->Record(object_, event);
    if (!recorded.ok()) Log("event " + event.reason + " not recorded: " + recorded.message());
  }
  events_.clear();
}

StatusOr<SyncResult> JobSync::Sync(const std::string& key) {
  std::optional<JobQueueKeyParts> parts = ParseJobQueueKey(key);
  if (!parts) return Status::InvalidArgument("job key \"" + key + "\" names no job kind");
  for (const OperatedKind& operated : caches_.kinds) {
    if (operated.kind->name() != parts->kind) continue;
    std::optional<nlohmann::json> object =
        operated.jobs ? operated.jobs->Get(parts->object_key) : std::nullopt;
    if (!object) return SyncResult{};  // gone: its pods go with it (ownerReferences)
    Pass pass(*this, operated, std::move(*object), parts->object_key);
    return pass.Run();
  }
  return Status::InvalidArgument("job key \"" + key + "\": the operator does not run " +
                                 parts->kind + "s");
}

}  // namespace cohort::kube
