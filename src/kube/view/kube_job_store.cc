#include "kube/view/kube_job_store.h"

#include <algorithm>

#include "job/job_kind.h"
#include "job/spec_writer.h"
#include "job/status_json.h"
#include "view/table.h"

namespace cohort::kube {
namespace {

// The most copies one aggregated Event becomes (its count is the server's, not bounded there).
constexpr int kMaxEventRepeats = 100;

std::string StringAt(const nlohmann::json& object, const nlohmann::json::json_pointer& pointer) {
  if (!object.contains(pointer)) return "";
  const nlohmann::json& value = object.at(pointer);
  return value.is_string() ? value.get<std::string>() : "";
}

std::optional<Time> TimeAt(const nlohmann::json& object,
                           const nlohmann::json::json_pointer& pointer) {
  std::string text = StringAt(object, pointer);
  if (text.empty()) return std::nullopt;
  return ParseTime(text);
}

std::string PodName(const nlohmann::json& pod) {
  return StringAt(pod, nlohmann::json::json_pointer("/metadata/name"));
}

// The exit code of the container's current run if it has ended, else of its previous run.
std::optional<int> ExitCode(const nlohmann::json& container) {
  for (const char* state : {"/state/terminated/exitCode", "/lastState/terminated/exitCode"}) {
    nlohmann::json::json_pointer pointer(state);
    if (container.contains(pointer) && container.at(pointer).is_number_integer()) {
      return container.at(pointer).get<int>();
    }
  }
  return std::nullopt;
}

// The port named `port_name` (the kind's facts().port_name) that the pod's
// containers declare, else 0.
int ReplicaPort(const nlohmann::json& pod, const std::string& port_name) {
  nlohmann::json::json_pointer containers("/spec/containers");
  if (!pod.contains(containers) || !pod.at(containers).is_array()) return 0;
  for (const nlohmann::json& container : pod.at(containers)) {
    if (!container.is_object() || !container.contains("ports")) continue;
    for (const nlohmann::json& port : container["ports"]) {
      if (port.is_object() && port.value("name", "") == port_name &&
          port.value("containerPort", nlohmann::json()).is_number_integer()) {
        return port["containerPort"].get<int>();
      }
    }
  }
  return 0;
}

exec::ReplicaRow RowOfPod(const nlohmann::json& pod, const job::JobKind& kind) {
  exec::ReplicaRow row;
  row.name = ReplicaOfPod(pod);
  std::string phase = StringAt(pod, nlohmann::json::json_pointer("/status/phase"));
  row.phase = phase.empty() ? "Pending" : phase;
  row.port = ReplicaPort(pod, kind.facts().port_name);
  row.started_at = TimeAt(pod, nlohmann::json::json_pointer("/status/startTime"));
  if (const nlohmann::json* container = MainContainerStatus(pod)) {
    row.restarts = container->value("restartCount", 0);
    row.exit_code = ExitCode(*container);
    row.finished_at =
        TimeAt(*container, nlohmann::json::json_pointer("/state/terminated/finishedAt"));
  }
  return row;
}

// The replica order of the job's spec: type by type in the spec's order, indices ascending.
void SortLikeSpec(const job::Job& job, std::vector<exec::ReplicaRow>& rows) {
  auto rank = [&](const exec::ReplicaRow& row) {
    int type_rank = 0;
    for (const auto& [type, spec] : job.replica_specs) {
      std::string prefix = job::LowerCase(type) + "-";
      if (row.name.rfind(prefix, 0) == 0) {
        return std::make_pair(type_rank, std::atoi(row.name.c_str() + prefix.size()));
      }
      ++type_rank;
    }
    return std::make_pair(type_rank, 0);
  };
  std::stable_sort(rows.begin(), rows.end(),
                   [&](const auto& a, const auto& b) { return rank(a) < rank(b); });
}

// Event objects as the job's events, oldest first.
std::vector<job::Event> EventsOf(const ClusterJobObjects& objects) {
  std::vector<job::Event> events;
  for (const nlohmann::json& object : objects.events) {
    job::Event event;
    event.type = object.value("type", "Normal");
    event.reason = object.value("reason", "");
    event.message = object.value("message", "");
    if (StringAt(object, nlohmann::json::json_pointer("/involvedObject/kind")) == "Pod") {
      event.message = "pod/" +
                      StringAt(object, nlohmann::json::json_pointer("/involvedObject/name")) +
                      ": " + event.message;
    }
    std::optional<Time> last = TimeAt(object, nlohmann::json::json_pointer("/lastTimestamp"));
    if (!last) last = TimeAt(object, nlohmann::json::json_pointer("/eventTime"));
    std::optional<Time> first = TimeAt(object, nlohmann::json::json_pointer("/firstTimestamp"));
    if (!last) last = first;
    if (!last) last = TimeAt(object, nlohmann::json::json_pointer("/metadata/creationTimestamp"));
    if (!last) continue;  // an Event with no time at all cannot be placed
    int count = std::clamp(object.value("count", 1), 1, kMaxEventRepeats);
    event.time = first.value_or(*last);
    events.push_back(event);
    event.time = *last;
    for (int repeat = 1; repeat < count; ++repeat) events.push_back(event);
  }
  std::stable_sort(events.begin(), events.end(),
                   [](const job::Event& a, const job::Event& b) { return a.time < b.time; });
  return events;
}

}  // namespace

std::string JobPodSelector(const std::string& job_name) {
  return std::string(kJobNameLabel) + "=" + job_name;
}

std::string ReplicaOfPod(const nlohmann::json& pod) {
  nlohmann::json::json_pointer labels("/metadata/labels");
  if (!pod.contains(labels) || !pod.at(labels).is_object()) return "";
  const nlohmann::json& values = pod.at(labels);
  std::string type = values.value(kReplicaTypeLabel, "");
  std::string index = values.value(kReplicaIndexLabel, "");
  if (type.empty() || index.empty()) return "";
  return job::LowerCase(type) + "-" + index;
}

const nlohmann::json* MainContainerStatus(const nlohmann::json& pod) {
  nlohmann::json::json_pointer statuses("/status/containerStatuses");
  if (!pod.contains(statuses) || !pod.at(statuses).is_array() || pod.at(statuses).empty()) {
    return nullptr;
  }
  for (const nlohmann::json& status : pod.at(statuses)) {
    if (!status.is_object()) continue;
    for (const job::JobKind* kind : job::KindRegistry::Default().kinds()) {
      if (status.value("name", "") == kind->facts().container_name) return &status;
    }
  }
  const nlohmann::json& first = pod.at(statuses).front();
  return first.is_object() ? &first : nullptr;
}

std::string PodStatusText(const nlohmann::json& pod) {
  if (!StringAt(pod, nlohmann::json::json_pointer("/metadata/deletionTimestamp")).empty()) {
    return "Terminating";
  }
  std::string phase = StringAt(pod, nlohmann::json::json_pointer("/status/phase"));
  std::string reason = StringAt(pod, nlohmann::json::json_pointer("/status/reason"));
  if (!reason.empty()) return reason;  // Evicted, ...
  if (const nlohmann::json* container = MainContainerStatus(pod)) {
    std::string waiting =
        StringAt(*container, nlohmann::json::json_pointer("/state/waiting/reason"));
    if (!waiting.empty()) return waiting;
    nlohmann::json::json_pointer terminated("/state/terminated");
    if (container->contains(terminated)) {
      std::string why =
          StringAt(*container, nlohmann::json::json_pointer("/state/terminated/reason"));
      if (!why.empty()) return why;
      std::optional<int> code = ExitCode(*container);
      return code && *code == 0 ? "Completed" : "Error";
    }
  }
  return phase.empty() ? "Pending" : phase;
}

std::string PodTable(const std::vector<nlohmann::json>& pods, bool wide, bool show_namespace,
                     Time now) {
  std::vector<view::Row> rows;
  view::Row header = {"NAME", "READY", "STATUS", "RESTARTS", "AGE"};
  if (show_namespace) header.insert(header.begin(), "NAMESPACE");
  if (wide) header.insert(header.end(), {"IP", "NODE", "NOMINATED NODE", "READINESS GATES"});
  rows.push_back(header);
  for (const nlohmann::json& pod : pods) {
    int ready = 0, total = 0, restarts = 0;
    nlohmann::json::json_pointer statuses("/status/containerStatuses");
    if (pod.contains(statuses) && pod.at(statuses).is_array()) {
      for (const nlohmann::json& status : pod.at(statuses)) {
        if (!status.is_object()) continue;
        ++total;
        if (status.value("ready", false)) ++ready;
        restarts += status.value("restartCount", 0);
      }
    }
    nlohmann::json::json_pointer containers("/spec/containers");
    if (total == 0 && pod.contains(containers) && pod.at(containers).is_array()) {
      total = static_cast<int>(pod.at(containers).size());
    }
    std::optional<Time> created =
        TimeAt(pod, nlohmann::json::json_pointer("/metadata/creationTimestamp"));
    view::Row row = {PodName(pod), std::to_string(ready) + "/" + std::to_string(total),
                     PodStatusText(pod), std::to_string(restarts),
                     created ? view::Age(*created, now) : "<unknown>"};
    if (show_namespace) {
      row.insert(row.begin(), StringAt(pod, nlohmann::json::json_pointer("/metadata/namespace")));
    }
    if (wide) {
      auto or_none = [](const std::string& text) { return text.empty() ? "<none>" : text; };
      row.insert(row.end(),
                 {or_none(StringAt(pod, nlohmann::json::json_pointer("/status/podIP"))),
                  or_none(StringAt(pod, nlohmann::json::json_pointer("/spec/nodeName"))),
                  or_none(StringAt(pod, nlohmann::json::json_pointer("/status/nominatedNodeName"))),
                  "<none>"});
    }
    rows.push_back(row);
  }
  return view::FormatTable(rows);
}

Status KubeJobStore::Add(const ClusterJobObjects& objects) {
  const nlohmann::json& object = objects.job;
  const std::string name = StringAt(object, nlohmann::json::json_pointer("/metadata/name"));
  const std::string namespace_name =
      StringAt(object, nlohmann::json::json_pointer("/metadata/namespace"));
  const std::string what = object.value("kind", "job") + " " + namespace_name + "/" + name;
  nlohmann::json spec_object = {{"apiVersion", object.value("apiVersion", "")},
                                {"kind", object.value("kind", "")},
                                {"metadata", {{"name", name}, {"namespace", namespace_name}}},
                                {"spec", object.value("spec", nlohmann::json::object())}};
  for (const char* field : {"labels", "annotations"}) {
    if (object.contains("metadata") && object["metadata"].contains(field)) {
      spec_object["metadata"][field] = object["metadata"][field];
    }
  }
  StatusOr<job::Job> job = job::JobFromJson(spec_object);
  if (!job.ok()) return Status::InvalidArgument(what + ": " + job.status().message());
  SetCreationTime(TimeAt(object, nlohmann::json::json_pointer("/metadata/creationTimestamp"))
                      .value_or(Clock::now()));
  if (Status created = CreateJob(*job, nullptr); !created.ok()) return created;
  exec::JobKey key{namespace_name, name};
  job::JobStatus status;
  if (object.contains("status") && object["status"].is_object()) {
    StatusOr<job::JobStatus> read = job::JobStatusFromJson(object["status"]);
    if (!read.ok()) return Status::InvalidArgument(what + ": status: " + read.status().message());
    status = *read;
  }
  if (Status written = WriteStatus(key, status); !written.ok()) return written;
  if (Status appended = AppendEvents(key, EventsOf(objects)); !appended.ok()) return appended;
  std::vector<exec::ReplicaRow> rows;
  for (const nlohmann::json& pod : objects.pods) {
    exec::ReplicaRow row = RowOfPod(pod, *job->job_kind);
    if (!row.name.empty()) rows.push_back(row);
  }
  SortLikeSpec(*job, rows);
  return WriteReplicas(key, rows);
}

std::string KubeJobStore::LogLocation(const exec::JobKey& key, const std::string& replica) const {
  return "pod/" + key.name + "-" + replica;
}

}  // namespace cohort::kube
