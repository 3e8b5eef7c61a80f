#include "kube/operator/replica_objects.h"

#include <algorithm>
#include <set>

#include "cluster/peer_report.h"

namespace cohort::kube {
namespace {

const nlohmann::json& Field(const nlohmann::json& object, const char* key) {
  static const nlohmann::json kNull;
  if (!object.is_object()) return kNull;
  auto found = object.find(key);
  return found == object.end() ? kNull : *found;
}

std::string StringField(const nlohmann::json& object, const char* key) {
  const nlohmann::json& value = Field(object, key);
  return value.is_string() ? value.get<std::string>() : std::string();
}

int IntField(const nlohmann::json& object, const char* key) {
  const nlohmann::json& value = Field(object, key);
  if (!value.is_number_integer()) return 0;
  const int64_t number = value.get<int64_t>();
  if (number < -1000000 || number > 1000000) return number < 0 ? -1000000 : 1000000;
  return static_cast<int>(number);
}

std::optional<Time> TimeField(const nlohmann::json& object, const char* key) {
  std::string text = StringField(object, key);
  if (text.empty()) return std::nullopt;
  return ParseTime(text);
}

const nlohmann::json* JobContainerStatus(const nlohmann::json& pod,
                                         const std::string& container_name) {
  const nlohmann::json& statuses = Field(Field(pod, "status"), "containerStatuses");
  if (!statuses.is_array() || statuses.empty()) return nullptr;
  for (const nlohmann::json& status : statuses) {
    if (StringField(status, "name") == container_name) return &status;
  }
  return &statuses.front();
}

// 128 + N for a container killed by signal N that reports no exit code of its own.
int ExitCodeOf(const nlohmann::json& terminated) {
  const int exit_code = IntField(terminated, "exitCode");
  const int signal_number = IntField(terminated, "signal");
  if (exit_code == 0 && signal_number > 0 && signal_number < 128) return 128 + signal_number;
  return exit_code;
}

// What a failed pod whose container never terminated (an eviction, a lost node) reads as: above
// 128, so that ExitCode retries it, as the operator does with its 0xbeef.
constexpr int kNoExitCode = 255;

// The exit code of a container ended by SIGTERM, as a terminated replica reads when the kubelet
// reported none.
constexpr int kTerminatedExitCode = 128 + 15;

}  // namespace

std::string ObjectKey(const std::string& namespace_name, const std::string& name) {
  return namespace_name + "/" + name;
}

std::string ObjectKey(const nlohmann::json& object) {
  const nlohmann::json& metadata = Field(object, "metadata");
  return ObjectKey(StringField(metadata, "namespace"), StringField(metadata, "name"));
}

std::string OwnedObjectsSelector(const std::vector<const job::JobKind*>& kinds) {
  std::set<std::string> controllers;
  for (const job::JobKind* kind : kinds) controllers.insert(kind->facts().controller_name);
  if (controllers.size() == 1) return std::string(kOperatorNameLabel) + "=" + *controllers.begin();
  std::string values;
  for (const std::string& controller : controllers) {
    values += (values.empty() ? "" : ",") + controller;
  }
  return std::string(kOperatorNameLabel) + " in (" + values + ")";
}

std::string JobQueueKey(const job::JobKind& kind, const std::string& object_key) {
  return kind.name() + "/" + object_key;
}

std::optional<JobQueueKeyParts> ParseJobQueueKey(const std::string& key) {
  const size_t slash = key.find('/');
  if (slash == std::string::npos || slash == 0) return std::nullopt;
  return JobQueueKeyParts{key.substr(0, slash), key.substr(slash + 1)};
}

std::string ControllerUid(const nlohmann::json& object, const std::string& owner_kind) {
  const nlohmann::json& owners = Field(Field(object, "metadata"), "ownerReferences");
  if (!owners.is_array()) return "";
  for (const nlohmann::json& owner : owners) {
    const nlohmann::json& controller = Field(owner, "controller");
    if (controller.is_boolean() && controller.get<bool>() &&
        StringField(owner, "kind") == owner_kind) {
      return StringField(owner, "uid");
    }
  }
  return "";
}

std::string ControllerKey(const nlohmann::json& object, const std::string& owner_kind) {
  const nlohmann::json& metadata = Field(object, "metadata");
  const nlohmann::json& owners = Field(metadata, "ownerReferences");
  if (!owners.is_array()) return "";
  for (const nlohmann::json& owner : owners) {
    const nlohmann::json& controller = Field(owner, "controller");
    if (controller.is_boolean() && controller.get<bool>() &&
        StringField(owner, "kind") == owner_kind) {
      return ObjectKey(StringField(metadata, "namespace"), StringField(owner, "name"));
    }
  }
  return "";
}

std::string Annotation(const nlohmann::json& object, const std::string& key) {
  const nlohmann::json& annotations = Field(Field(object, "metadata"), "annotations");
  return StringField(annotations, key.c_str());
}

int ParseCount(const std::string& text) {
  if (text.empty() || text.size() > 9) return text.size() > 9 ? kMaxRecordedRestarts : 0;
  int count = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return 0;
    count = count * 10 + (c - '0');
  }
  return std::min(count, kMaxRecordedRestarts);
}

std::optional<ReplicaRef> ReplicaOf(const job::Job& job, const nlohmann::json& object) {
  const nlohmann::json& labels = Field(Field(object, "metadata"), "labels");
  const std::string type_label = StringField(labels, kReplicaTypeLabel);
  const std::string index_label = StringField(labels, kReplicaIndexLabel);
  if (type_label.empty() || index_label.empty() || index_label.size() > 6) return std::nullopt;
  for (char c : index_label) {
    if (c < '0' || c > '9') return std::nullopt;
  }
  for (const auto& [type, spec] : job.replica_specs) {
    if (job::LowerCase(type) == type_label) return ReplicaRef{type, std::stoi(index_label)};
  }
  return std::nullopt;
}

bool IsTerminating(const nlohmann::json& object) {
  return !StringField(Field(object, "metadata"), "deletionTimestamp").empty();
}

job::ObservedReplica ObservePod(const nlohmann::json& pod, const ReplicaRef& replica,
                                const std::string& container_name) {
  job::ObservedReplica observed;
  observed.type = replica.type;
  observed.index = replica.index;
  const nlohmann::json& status = Field(pod, "status");
  const nlohmann::json* container = JobContainerStatus(pod, container_name);
  const nlohmann::json& state = container ? Field(*container, "state") : Field(status, "none");
  const job::RestartRecord restarts = RestartRecordOfPod(pod, container_name);
  observed.restart_count = restarts.restarts;
  observed.group_restarts = restarts.group_restarts;
  const std::string phase = StringField(status, "phase");
  const nlohmann::json& running = Field(state, "running");
  const nlohmann::json& terminated = Field(state, "terminated");
  if (phase == "Running") {
    if (container == nullptr || running.is_object()) {
      observed.phase = job::ReplicaPhase::kRunning;
      observed.started_at = TimeField(running, "startedAt");
      if (!observed.started_at) observed.started_at = TimeField(status, "startTime");
    } else {
      observed.phase = job::ReplicaPhase::kPending;  // the kubelet restarts it in place
    }
  } else if (phase == "Succeeded" || phase == "Failed") {
    observed.phase =
        phase == "Succeeded" ? job::ReplicaPhase::kSucceeded : job::ReplicaPhase::kFailed;
    if (terminated.is_object()) {
      observed.exit_code = ExitCodeOf(terminated);
      observed.started_at = TimeField(terminated, "startedAt");
      observed.finished_at = TimeField(terminated, "finishedAt");
      observed.termination_message = StringField(terminated, "message");
      if (observed.termination_message.size() > cluster::kMaxTerminationMessageBytes) {
        observed.termination_message.resize(cluster::kMaxTerminationMessageBytes);
      }
    } else {
      observed.exit_code = phase == "Succeeded" ? 0 : kNoExitCode;
    }
    if (phase == "Failed" && observed.exit_code == 0) observed.exit_code = kNoExitCode;
    if (!observed.started_at) observed.started_at = TimeField(status, "startTime");
  } else {
    observed.phase = job::ReplicaPhase::kPending;
  }
  return observed;
}

job::RestartRecord RestartRecordOfPod(const nlohmann::json& pod,
                                      const std::string& container_name) {
  const nlohmann::json* container = JobContainerStatus(pod, container_name);
  const int in_place = container ? std::max(0, IntField(*container, "restartCount")) : 0;
  job::RestartRecord record;
  record.restarts = ParseCount(Annotation(pod, kRestartsAnnotation)) + in_place;
  record.group_restarts = ParseCount(Annotation(pod, kGroupRestartsAnnotation));
  return job::RestartStateMachine::Resume(record).record();
}

void AnnotatePodRestarts(nlohmann::json& pod, const job::RestartRecord& record) {
  auto annotate = [&](const char* key, int count) {
    if (count == 0) return;
    nlohmann::json& metadata = pod["metadata"];
    if (!metadata.contains("annotations") || !metadata["annotations"].is_object()) {
      metadata["annotations"] = nlohmann::json::object();
    }
    metadata["annotations"][key] = std::to_string(count);
  };
  annotate(kRestartsAnnotation, record.restarts);
  annotate(kGroupRestartsAnnotation, record.group_restarts);
}

std::optional<job::RestartRecord> WaitingRestartOf(const nlohmann::json& service) {
  const std::string after = Annotation(service, kRestartAfterAnnotation);
  if (after.empty()) return std::nullopt;
  job::RestartRecord record;
  record.restarts = ParseCount(Annotation(service, kRestartsAnnotation));
  record.group_restarts = ParseCount(Annotation(service, kGroupRestartsAnnotation));
  const std::optional<Time> parsed = ParseTime(after);
  record.restart_after = parsed ? *parsed : Time();
  record.replaces = Annotation(service, kRestartOfAnnotation);
  return job::RestartStateMachine::Resume(record).record();
}

nlohmann::json WaitingRestartAnnotations(const job::RestartRecord& record) {
  if (!record.restart_after) {
    return {{kRestartAfterAnnotation, nullptr},
            {kRestartOfAnnotation, nullptr},
            {kRestartsAnnotation, nullptr},
            {kGroupRestartsAnnotation, nullptr}};
  }
  return {{kRestartsAnnotation, std::to_string(record.restarts)},
          {kRestartAfterAnnotation, FormatTime(*record.restart_after)},
          {kRestartOfAnnotation, record.replaces},
          {kGroupRestartsAnnotation, std::to_string(record.group_restarts)}};
}

std::optional<TerminationRecord> TerminationRecordOf(const nlohmann::json& service) {
  const std::string uid = Annotation(service, kTerminatedPodAnnotation);
  if (uid.empty()) return std::nullopt;
  TerminationRecord record;
  record.pod_uid = uid;
  std::optional<Time> at = ParseTime(Annotation(service, kTerminatedAtAnnotation));
  record.at = at ? *at : Time();
  record.restarts = ParseCount(Annotation(service, kRestartsAnnotation));
  record.group_restarts =
      std::min(record.restarts, ParseCount(Annotation(service, kGroupRestartsAnnotation)));
  return record;
}

job::ObservedReplica ObserveTerminated(const nlohmann::json& pod, const TerminationRecord& record,
                                       const ReplicaRef& replica,
                                       const std::string& container_name) {
  job::ObservedReplica observed;
  if (pod.is_object()) observed = ObservePod(pod, replica, container_name);
  observed.type = replica.type;
  observed.index = replica.index;
  const nlohmann::json* container =
      pod.is_object() ? JobContainerStatus(pod, container_name) : nullptr;
  const nlohmann::json& terminated =
      container ? Field(Field(*container, "state"), "terminated") : Field(pod, "none");
  observed.exit_code = terminated.is_object() ? ExitCodeOf(terminated) : 0;
  if (observed.exit_code == 0) observed.exit_code = kTerminatedExitCode;
  observed.phase = job::ReplicaPhase::kFailed;
  observed.restart_count = record.restarts;
  observed.group_restarts = record.group_restarts;
  observed.finished_at = TimeField(terminated, "finishedAt");
  if (!observed.finished_at) observed.finished_at = record.at;
  return observed;
}

}  // namespace cohort::kube
