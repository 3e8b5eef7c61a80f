#include "ui/dashboard_api.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <thread>

#include "base/names.h"
#include "base/time.h"
#include "exec/job_store.h"
#include "exec/local_jobs.h"
#include "job/reconciler.h"
#include "job/status_json.h"
#include "ui/freed_memory.h"
#include "ui/request_store.h"
#include "ui/selectors.h"
#include "view/command_line.h"
#include "view/job_view.h"
#include "view/pod_view.h"
#include "view/prometheus_metrics.h"

namespace cohort::ui {
namespace {

using nlohmann::json;

constexpr size_t kMaxParameterBytes = 1024;
constexpr size_t kMaxRunIndexes = 4096;
// A followed log sends at most this much per read, and a line longer than this in pieces.
constexpr size_t kMaxFollowBatchBytes = size_t{1} << 20;
constexpr std::chrono::seconds kHeartbeatEvery{15};
// Points of one scalar series in one answer (max_points), at most.
constexpr uint64_t kMaxPointsPerSeries = 1000000;
// Events of one request, the most recent kept.
constexpr size_t kMaxEvents = 10000;

// The kind whose resource is /apis/GROUP/VERSION/PLURAL, or null.
const job::JobKind* KindOfResource(const std::string& group, const std::string& version,
                                   const std::string& plural) {
  for (const job::JobKind* kind : job::KindRegistry::Default().kinds()) {
    const job::KindFacts& facts = kind->facts();
    if (facts.group == group && facts.version == version && facts.plural == plural) return kind;
  }
  return nullptr;
}

// Whether some kind's resources are under /apis/GROUP/VERSION.
bool IsJobGroupVersion(const std::string& group, const std::string& version) {
  for (const job::JobKind* kind : job::KindRegistry::Default().kinds()) {
    if (kind->facts().group == group && kind->facts().version == version) return true;
  }
  return false;
}

// The kind of the job `key` in `store`, or null when its spec cannot be read.
const job::JobKind* KindOfJob(const exec::JobStateStore& store, const exec::JobKey& key) {
  StatusOr<job::Job> spec = store.ReadSpec(key);
  return spec.ok() ? spec->job_kind : nullptr;
}

// `value` as a JSON number, as printf writes it in `format` (std::to_chars gives the same text,
// several times faster), or null where it is not finite: JSON has no NaN nor infinity (a gap in the
// curve).
char* AppendNumber(char* at, char* end, double value, std::chars_format format, int precision) {
  static constexpr char kNull[] = "null";
  if (std::isfinite(value)) {
    std::to_chars_result written = std::to_chars(at, end, value, format, precision);
    if (written.ec == std::errc()) return written.ptr;
  }
  return std::copy(kNull, kNull + 4, at);
}

// One point as [step,wall_time,value]: the wall time to the millisecond (%.3f), the value to 9
// significant digits (%.9g, a float's precision).
void AppendPointJson(const view::ScalarPoint& point, std::string* out) {
  // '[', a step, a fixed double (at most 309 digits, a sign, a point and 3 decimals), a value
  // of 9 digits and an exponent, two commas and ']'.
  char text[512];
  char* const end = text + sizeof(text);
  char* at = text;
  *at++ = '[';
  at = std::to_chars(at, end, point.step).ptr;
  *at++ = ',';
  at = AppendNumber(at, end, point.wall_time, std::chars_format::fixed, 3);
  *at++ = ',';
  at = AppendNumber(at, end, point.value, std::chars_format::general, 9);
  *at++ = ']';
  out->append(text, static_cast<size_t>(at - text));
}

std::vector<std::string> Split(const std::string& path) {
  std::vector<std::string> parts;
  size_t position = 0;
  while (position < path.size()) {
    size_t slash = path.find('/', position);
    if (slash == std::string::npos) slash = path.size();
    if (slash > position) parts.push_back(path.substr(position, slash - position));
    position = slash + 1;
  }
  return parts;
}

// A namespace, job or pod name as the store allows them (DNS-1123 labels, base/names.h):
// nothing else reaches the store, so "..", "/" or "%00" never name a file.
bool IsValidName(const std::string& name) { return !Dns1123LabelProblem(name).has_value(); }

ApiResponse Json(const json& object, int status = 200) {
  ApiResponse response;
  response.status = status;
  response.body = object.dump();
  return response;
}

ApiResponse FromStatus(const Status& status) {
  auto [code, reason] = HttpStatusFor(status);
  return StatusResponse(code, reason, status.message());
}

ApiResponse JobNotFound(const std::string& name, const job::JobKind& kind) {
  return StatusResponse(
      404, "NotFound",
      kind.facts().plural + "." + kind.facts().group + " \"" + name + "\" not found");
}

std::optional<std::string> Param(const ApiRequest& request, const std::string& name) {
  auto it = request.params.find(name);
  if (it == request.params.end()) return std::nullopt;
  return it->second;
}

StatusOr<bool> BoolParam(const ApiRequest& request, const std::string& name) {
  std::optional<std::string> value = Param(request, name);
  if (!value || *value == "false" || *value == "0") return false;
  if (value->empty() || *value == "true" || *value == "1") return true;
  return Status::InvalidArgument("parameter " + name + "=" + *value + ": use true or false");
}

StatusOr<uint64_t> ParseCount(const std::string& value, const std::string& name, uint64_t max) {
  bool digits =
      !value.empty() && value.size() <= 19 &&
      std::all_of(value.begin(), value.end(), [](char c) { return c >= '0' && c <= '9'; });
  if (!digits || std::stoull(value) > max) {
    return Status::InvalidArgument(name + "=" + value.substr(0, 40) +
                                   ": give a whole number from 0 to " + std::to_string(max));
  }
  return std::stoull(value);
}

StatusOr<std::optional<uint64_t>> CountParam(const ApiRequest& request, const std::string& name,
                                             uint64_t max) {
  std::optional<std::string> value = Param(request, name);
  if (!value) return std::optional<uint64_t>();
  StatusOr<uint64_t> count = ParseCount(*value, "parameter " + name, max);
  if (!count.ok()) return count.status();
  return std::optional<uint64_t>(*count);
}

bool AcceptsYaml(const ApiRequest& request) {
  return request.accept.find("application/yaml") != std::string::npos ||
         request.accept.find("application/x-yaml") != std::string::npos;
}

json EventObject(const exec::JobKey& key, const job::JobKind& kind, const job::Event& event,
                 size_t index) {
  std::string time = FormatTime(event.time);
  return {{"apiVersion", "v1"},
          {"kind", "Event"},
          {"metadata",
           {{"name", key.name + "." + std::to_string(index)}, {"namespace", key.namespace_name}}},
          {"involvedObject",
           {{"apiVersion", kind.api_version()},
            {"kind", kind.name()},
            {"name", key.name},
            {"namespace", key.namespace_name}}},
          {"type", event.type},
          {"reason", event.reason},
          {"message", event.message},
          {"firstTimestamp", time},
          {"lastTimestamp", time},
          {"count", 1},
          {"source", {{"component", "cohort"}}}};
}

json ReplicaObject(const view::PodRef& pod, const exec::ReplicaRow& row) {
  size_t dash = pod.replica.rfind('-');
  json object = {{"name", pod.replica},
                 {"pod", pod.PodName()},
                 {"replicaType", pod.replica.substr(0, dash)},
                 {"replicaIndex", std::stoi(pod.replica.substr(dash + 1))},
                 {"phase", row.phase},
                 {"status", view::PodStatus(row)},
                 {"restarts", row.restarts},
                 {"port", row.port},
                 {"pid", row.pid},
                 {"removed", row.removed},
                 {"lastLogLines", row.last_log_lines}};
  if (row.exit_code) {
    object["exitCode"] = *row.exit_code;
    object["reason"] = view::PodStatus(row);
  }
  if (row.started_at) object["startedAt"] = FormatTime(*row.started_at);
  if (row.finished_at) object["finishedAt"] = FormatTime(*row.finished_at);
  return object;
}

// Splits bytes into lines as they arrive; a line longer than kMaxFollowBatchBytes is passed on in
// pieces, so that nothing is held without bound.
class LineSplitter {
 public:
  template <typename OnLine>
  void Add(std::string_view bytes, OnLine&& on_line) {
    size_t position = 0;
    while (position < bytes.size()) {
      size_t newline = bytes.find('\n', position);
      if (newline == std::string_view::npos) {
        pending_.append(bytes.substr(position));
        if (pending_.size() >= kMaxFollowBatchBytes) {
          on_line(pending_);
          pending_.clear();
        }
        return;
      }
      pending_.append(bytes.substr(position, newline - position));
      on_line(pending_);
      pending_.clear();
      position = newline + 1;
    }
  }
  // Bytes received but not passed on yet (a line not ended yet).
  size_t pending_size() const { return pending_.size(); }
  template <typename OnLine>
  void Flush(OnLine&& on_line) {
    if (!pending_.empty()) on_line(pending_);
    pending_.clear();
  }

 private:
  std::string pending_;
};

// Writes a log's lines as server-sent events, one event per batch ("id: OFFSET" after it, so that
// a reconnecting EventSource resumes there), and an "end" event when the log will not grow.
class EventStreamWriter {
 public:
  explicit EventStreamWriter(const ResponseWriter& write) : write_(write) {}
  void Line(const std::string& line) {
    batch_ += "data: ";
    for (char c : line) {
      if (c != '\r') batch_ += c;
    }
    batch_ += '\n';
  }
  bool Send(uint64_t offset) {
    if (batch_.empty()) return true;
    batch_ = "id: " + std::to_string(offset) + "\n" + batch_ + "\n";
    bool ok = write_(batch_);
    batch_.clear();
    return ok;
  }
  // The last event of a log that will not grow (its run or its job has ended), so that the page
  // stops instead of reconnecting as an EventSource does when a stream closes.
  bool End() { return write_("event: end\ndata: \n\n"); }

 private:
  const ResponseWriter& write_;
  std::string batch_;
};

// The last `count` events of a job, read backwards from the end of its events file (one event
// per line, exec/job_store.h); lines that are not events are skipped.
StatusOr<std::vector<job::Event>> LastEvents(const exec::JobStore& store, const exec::JobKey& key,
                                             size_t count) {
  StatusOr<FileReader> file = FileReader::Open(store.JobDirectory(key) / "events.jsonl");
  if (!file.ok()) {
    if (file.status().code() == Status::Code::kNotFound) return std::vector<job::Event>();
    return file.status();
  }
  uint64_t size = file->Size();
  StatusOr<uint64_t> start = StartOfLastLines(*file, 0, size, count);
  if (!start.ok()) return start.status();
  std::vector<job::Event> events;
  std::string pending;
  Status read = ForEachChunk(*file, LogRange{*start, size}, [&](std::string_view chunk) {
    pending.append(chunk);
    size_t position = 0, newline;
    while ((newline = pending.find('\n', position)) != std::string::npos) {
      json line = json::parse(pending.substr(position, newline - position), nullptr, false);
      position = newline + 1;
      if (line.is_discarded()) continue;
      StatusOr<job::Event> event = job::EventFromJson(line);
      if (event.ok()) events.push_back(std::move(*event));
    }
    pending.erase(0, position);
    return true;
  });
  if (!read.ok()) return read;
  return events;
}

}  // namespace

std::pair<int, std::string> HttpStatusFor(const Status& status) {
  switch (status.code()) {
    case Status::Code::kNotFound:
      return {404, "NotFound"};
    case Status::Code::kInvalidArgument:
    case Status::Code::kFailedPrecondition:
      return {400, "BadRequest"};
    case Status::Code::kAlreadyExists:
      return {409, "AlreadyExists"};
    case Status::Code::kAborted:
      return {409, "Conflict"};
    case Status::Code::kDeadlineExceeded:
      return {504, "Timeout"};
    case Status::Code::kUnavailable:
      return {503, "ServiceUnavailable"};
    default:
      return {500, "InternalError"};
  }
}

ApiResponse StatusResponse(int http_status, const std::string& reason, const std::string& message) {
  return Json({{"apiVersion", "v1"},
               {"kind", "Status"},
               {"metadata", json::object()},
               {"status", http_status < 400 ? "Success" : "Failure"},
               {"message", message},
               {"reason", reason},
               {"code", http_status}},
              http_status);
}

bool DashboardApi::IsApiPath(const std::string& path) {
  return path.rfind("/apis/", 0) == 0 || path.rfind("/api/", 0) == 0 || path == "/apis" ||
         path == "/api" || path == "/metrics" || path == "/healthz";
}

ApiResponse DashboardApi::Handle(const ApiRequest& request) {
  for (const auto& [name, value] : request.params) {
    if (value.size() > kMaxParameterBytes || name.size() > kMaxParameterBytes) {
      return StatusResponse(400, "BadRequest",
                            "parameter " + name.substr(0, 40) + " is longer than " +
                                std::to_string(kMaxParameterBytes) + " characters");
    }
  }
  std::vector<std::string> parts = Split(request.path);
  const bool read = request.method == "GET" || request.method == "HEAD";
  auto method_not_allowed = [&] {
    return StatusResponse(405, "MethodNotAllowed",
                          request.method + " is not allowed on " + request.path);
  };
  auto check_names = [&](std::initializer_list<size_t> positions) -> std::optional<ApiResponse> {
    for (size_t position : positions) {
      if (!IsValidName(parts[position])) {
        return StatusResponse(
            400, "BadRequest",
            "invalid name \"" + parts[position].substr(0, 80) +
                "\": names are DNS-1123 labels: lower-case letters, digits and '-', "
                "starting and ending with a letter or digit, at most 63");
      }
    }
    return std::nullopt;
  };
  if (request.path == "/metrics") return read ? Metrics() : method_not_allowed();
  if (request.path == "/healthz") {
    ApiResponse ok;
    ok.content_type = "text/plain; charset=utf-8";
    ok.body = "ok";
    return ok;
  }
  // /apis/GROUP/VERSION/...: each kind's resources, under its own plural.
  if (parts.size() == 3 && parts[0] == "apis" && IsJobGroupVersion(parts[1], parts[2])) {
    return read ? ResourceList(parts[1], parts[2]) : method_not_allowed();
  }
  const job::JobKind* kind = nullptr;
  if (parts.size() >= 4 && parts[0] == "apis") {
    kind = KindOfResource(parts[1], parts[2], parts.size() >= 6 ? parts[5] : parts[3]);
  }
  if (kind != nullptr) {
    if (parts.size() == 4) {
      return read ? JobsList(request, "", true, *kind) : method_not_allowed();
    }
    if (parts.size() >= 6 && parts[3] == "namespaces") {
      if (auto bad = check_names({4})) return *bad;
      const std::string& namespace_name = parts[4];
      if (parts.size() == 6)
        return read ? JobsList(request, namespace_name, false, *kind) : method_not_allowed();
      if (auto bad = check_names({6})) return *bad;
      const std::string& name = parts[6];
      if (parts.size() == 7) {
        if (read) return JobGet(request, namespace_name, name, *kind);
        if (request.method == "DELETE") return JobAction(namespace_name, name, "delete", *kind);
        return method_not_allowed();
      }
      if (parts.size() == 8) {
        const std::string& sub = parts[7];
        if (sub == "replicas")
          return read ? JobReplicas(namespace_name, name, *kind) : method_not_allowed();
        if (sub == "scalars") {
          return read ? JobScalars(request, namespace_name, name, *kind) : method_not_allowed();
        }
        if (sub == "events") {
          return read ? EventsList(request, namespace_name, false, name, kind)
                      : method_not_allowed();
        }
        if (sub == "suspend" || sub == "resume" || sub == "delete") {
          return request.method == "POST" ? JobAction(namespace_name, name, sub, *kind)
                                          : method_not_allowed();
        }
      }
    }
  }
  // /api/v1/...
  if (parts.size() >= 3 && parts[0] == "api" && parts[1] == "v1") {
    if (!read) return method_not_allowed();
    if (parts.size() == 3 && parts[2] == "pods") return PodsList(request, "", true);
    if (parts.size() == 3 && parts[2] == "events") {
      return EventsList(request, "", true, "", nullptr);
    }
    if (parts.size() >= 5 && parts[2] == "namespaces") {
      if (auto bad = check_names({3})) return *bad;
      const std::string& namespace_name = parts[3];
      if (parts.size() == 5 && parts[4] == "pods") return PodsList(request, namespace_name, false);
      if (parts.size() == 5 && parts[4] == "events") {
        return EventsList(request, namespace_name, false, "", nullptr);
      }
      if (parts.size() >= 6 && parts[4] == "pods") {
        if (auto bad = check_names({5})) return *bad;
        if (parts.size() == 6) return PodGet(namespace_name, parts[5]);
        if (parts.size() == 7 && parts[6] == "log")
          return PodLog(request, namespace_name, parts[5]);
      }
    }
  }
  return StatusResponse(
      404, "NotFound",
      "the server could not find the requested resource " + request.path.substr(0, 200));
}

ApiResponse DashboardApi::Yaml(const json& object) {
  StatusOr<std::string> yaml =
      view::RenderObject(view::OutputFormat{view::OutputFormat::Kind::kYaml, ""}, object);
  if (!yaml.ok()) return FromStatus(yaml.status());
  ApiResponse response;
  response.content_type = "application/yaml";
  response.body = *yaml;
  return response;
}

ApiResponse DashboardApi::ResourceList(const std::string& group, const std::string& version) {
  json resources = json::array();
  for (const job::JobKind* kind : job::KindRegistry::Default().kinds()) {
    const job::KindFacts& facts = kind->facts();
    if (facts.group != group || facts.version != version) continue;
    resources.push_back({{"name", facts.plural},
                         {"singularName", job::LowerCase(kind->name())},
                         {"namespaced", true},
                         {"kind", kind->name()},
                         {"verbs", {"get", "list", "delete"}}});
  }
  return Json({{"apiVersion", "v1"},
               {"kind", "APIResourceList"},
               {"groupVersion", group + "/" + version},
               {"resources", resources}});
}

StatusOr<view::JobList> DashboardApi::ListedJobs(const std::string& namespace_name, bool all,
                                                 view::JobDetail detail, bool objects,
                                                 const job::JobKind* kind) {
  view::JobQuery query;
  query.kind = kind;
  query.namespace_name = namespace_name;
  query.all_namespaces = all;
  query.detail = detail;
  query.objects = objects;
  return options_.jobs->GetJobs(query);
}

StatusOr<view::JobList> DashboardApi::OneJob(const std::string& namespace_name,
                                             const std::string& name, view::JobDetail detail,
                                             bool objects, const job::JobKind* kind) {
  view::JobQuery query;
  query.kind = kind;
  query.namespace_name = namespace_name;
  query.names = {name};
  query.detail = detail;
  query.objects = objects;
  return options_.jobs->GetJobs(query);
}

ApiResponse DashboardApi::JobsList(const ApiRequest& request, const std::string& namespace_name,
                                   bool all, const job::JobKind& kind) {
  StatusOr<view::JobList> jobs =
      ListedJobs(namespace_name, all, view::JobDetail::kStatus, true, &kind);
  if (!jobs.ok()) return FromStatus(jobs.status());
  json list = {{"apiVersion", "v1"}, {"kind", "List"}, {"items", jobs->objects}};
  return AcceptsYaml(request) ? Yaml(list) : Json(list);
}

ApiResponse DashboardApi::JobGet(const ApiRequest& request, const std::string& namespace_name,
                                 const std::string& name, const job::JobKind& kind) {
  StatusOr<view::JobList> found =
      OneJob(namespace_name, name, view::JobDetail::kStatus, true, &kind);
  if (!found.ok() && found.status().code() != Status::Code::kNotFound)
    return FromStatus(found.status());
  if (!found.ok() || found->objects.empty()) return JobNotFound(name, kind);
  return AcceptsYaml(request) ? Yaml(found->objects.front()) : Json(found->objects.front());
}

ApiResponse DashboardApi::JobReplicas(const std::string& namespace_name, const std::string& name,
                                      const job::JobKind& kind) {
  StatusOr<view::JobList> found =
      OneJob(namespace_name, name, view::JobDetail::kReplicas, false, &kind);
  if (!found.ok() && found.status().code() != Status::Code::kNotFound)
    return FromStatus(found.status());
  if (!found.ok()) return JobNotFound(name, kind);
  exec::JobKey key{namespace_name, name};
  RequestStore store(*found->store);
  std::vector<exec::ReplicaRow> rows = store.ReadReplicas(key);
  json items = json::array();
  for (const view::PodRef& pod : view::JobPods(store, key, /*with_removed=*/true)) {
    exec::ReplicaRow row;
    row.name = pod.replica;
    row.phase = "Pending";
    for (const exec::ReplicaRow& saved : rows) {
      if (saved.name == pod.replica) row = saved;
    }
    items.push_back(ReplicaObject(pod, row));
  }
  return Json({{"apiVersion", "v1"}, {"kind", "List"}, {"items", items}});
}

ApiResponse DashboardApi::JobAction(const std::string& namespace_name, const std::string& name,
                                    const std::string& action, const job::JobKind& kind) {
  exec::JobKey key{namespace_name, name};
  const std::string singular = job::LowerCase(kind.name());
  StatusOr<view::JobList> found =
      OneJob(namespace_name, name, view::JobDetail::kStatus, false, &kind);
  if (!found.ok() && found.status().code() != Status::Code::kNotFound)
    return FromStatus(found.status());
  if (!found.ok()) return JobNotFound(name, kind);
  if (action == "delete") {
    StatusOr<std::string> deleted = options_.jobs->Delete(key, &kind);
    if (!deleted.ok()) return FromStatus(deleted.status());
    ApiResponse response = StatusResponse(200, "", singular + " \"" + name + "\" deleted");
    json body = json::parse(response.body);
    body.erase("reason");
    body["details"] = {
        {"name", name}, {"group", kind.facts().group}, {"kind", kind.facts().plural}};
    response.body = body.dump();
    return response;
  }
  bool suspend = action == "suspend";
  StatusOr<job::JobStatus> current = found->store->ReadStatus(key);
  if (suspend && current.ok() && job::IsFinished(*current)) {
    return StatusResponse(409, "Conflict",
                          singular + " " + name + " has already " + job::JobState(*current) +
                              "; a finished job cannot be suspended");
  }
  StatusOr<std::string> changed = options_.jobs->SetSuspended(key, &kind, suspend);
  if (!changed.ok()) return FromStatus(changed.status());
  StatusOr<view::JobList> after =
      OneJob(namespace_name, name, view::JobDetail::kStatus, true, &kind);
  if (!after.ok()) return FromStatus(after.status());
  if (after->objects.empty()) return JobNotFound(name, kind);
  return Json(after->objects.front());
}

ApiResponse DashboardApi::PodsList(const ApiRequest& request, const std::string& namespace_name,
                                   bool all) {
  std::optional<Selector> selector;
  if (std::optional<std::string> text = Param(request, "labelSelector"); text && !text->empty()) {
    StatusOr<Selector> parsed = ParseSelector(*text, "labelSelector");
    if (!parsed.ok()) return FromStatus(parsed.status());
    selector = *parsed;
  }
  // includeRemoved=true (Cohort's own): also the replicas cleanPodPolicy removed, for totals that
  // must count every run of a job (the jobs page's restarts).
  StatusOr<bool> with_removed = BoolParam(request, "includeRemoved");
  if (!with_removed.ok()) return FromStatus(with_removed.status());
  std::optional<std::string> job_name =
      selector ? selector->RequiredValue("training.kubeflow.org/job-name") : std::nullopt;
  const bool one_job = job_name && !all;
  StatusOr<view::JobList> jobs =
      one_job ? OneJob(namespace_name, *job_name, view::JobDetail::kReplicas, false, nullptr)
              : ListedJobs(namespace_name, all, view::JobDetail::kReplicas, false, nullptr);
  if (one_job && !jobs.ok() && jobs.status().code() == Status::Code::kNotFound) {
    return Json({{"apiVersion", "v1"}, {"kind", "PodList"}, {"items", json::array()}});
  }
  if (!jobs.ok()) return FromStatus(jobs.status());
  RequestStore store(*jobs->store);
  json items = json::array();
  for (const exec::JobKey& key : jobs->keys) {
    if (job_name && key.name != *job_name) continue;
    for (const view::PodRef& pod : view::JobPods(store, key, *with_removed)) {
      json object = view::PodObject(store, pod);
      if (selector) {
        std::map<std::string, std::string> labels;
        for (const auto& [label, value] : object["metadata"]["labels"].items()) {
          labels[label] = value.get<std::string>();
        }
        if (!selector->Matches(labels)) continue;
      }
      items.push_back(std::move(object));
    }
  }
  return Json({{"apiVersion", "v1"}, {"kind", "PodList"}, {"items", items}});
}

StatusOr<view::PodRef> DashboardApi::FindPod(const std::string& namespace_name,
                                             const std::string& pod_name,
                                             std::shared_ptr<const exec::JobStateStore>* store) {
  StatusOr<view::JobList> jobs =
      ListedJobs(namespace_name, false, view::JobDetail::kReplicas, false, nullptr);
  if (!jobs.ok()) return jobs.status();
  *store = jobs->store;
  return view::FindPod(*jobs->store, namespace_name, pod_name);
}

ApiResponse DashboardApi::PodGet(const std::string& namespace_name, const std::string& pod_name) {
  std::shared_ptr<const exec::JobStateStore> store;
  StatusOr<view::PodRef> pod = FindPod(namespace_name, pod_name, &store);
  if (!pod.ok()) {
    return StatusResponse(404, "NotFound", "pods \"" + pod_name + "\" not found");
  }
  return Json(view::PodObject(*store, *pod));
}

ApiResponse DashboardApi::ClientPodLog(const std::string& namespace_name, const std::string& pod,
                                       const LogQuery& query, bool follow) {
  if (follow) {
    return StatusResponse(400, "BadRequest",
                          "a cluster pod's log is not followed here; use cohort logs -f "
                          "--kubernetes " +
                              pod);
  }
  view::LogRequest request;
  request.name = pod;
  request.previous = query.previous;
  if (query.tail_lines)
    request.tail = static_cast<int>(std::min<uint64_t>(*query.tail_lines, 1 << 30));
  std::string text;
  view::LogSink sink;
  sink.line = [&](const std::string&, std::string_view line) {
    text.append(line);
    text += '\n';
  };
  if (Status read = options_.jobs->Logs(namespace_name, request, sink); !read.ok()) {
    return FromStatus(read);
  }
  if (query.limit_bytes && text.size() > *query.limit_bytes) {
    text.resize(static_cast<size_t>(*query.limit_bytes));
  }
  ApiResponse response;
  response.content_type = "text/plain; charset=utf-8";
  response.headers.push_back({"Cache-Control", "no-store"});
  response.body = std::move(text);
  return response;
}

StatusOr<RunIndex> DashboardApi::UpdatedRunIndex(const FileReader& file) {
  std::lock_guard<std::mutex> lock(run_indexes_mutex_);
  auto it = run_indexes_.find(file.path().string());
  if (it == run_indexes_.end()) {
    if (run_indexes_.size() >= kMaxRunIndexes) run_indexes_.clear();
    it = run_indexes_.emplace(file.path().string(), RunIndex()).first;
  }
  if (Status updated = it->second.Update(file); !updated.ok()) return updated;
  return it->second;
}

ApiResponse DashboardApi::PodLog(const ApiRequest& request, const std::string& namespace_name,
                                 const std::string& pod_name) {
  std::shared_ptr<const exec::JobStateStore> store;
  StatusOr<view::PodRef> pod = FindPod(namespace_name, pod_name, &store);
  if (!pod.ok()) return StatusResponse(404, "NotFound", "pods \"" + pod_name + "\" not found");
  if (std::optional<std::string> container = Param(request, "container")) {
    StatusOr<job::Job> spec = store->ReadSpec(pod->job);
    std::string name = spec.ok() ? spec->job_kind->facts().container_name : "";
    if (*container != name) {
      return StatusResponse(400, "BadRequest",
                            "container " + container->substr(0, 80) + " is not valid for pod " +
                                pod_name + ": its one container is " + name);
    }
  }
  LogQuery query;
  StatusOr<bool> previous = BoolParam(request, "previous");
  StatusOr<bool> all_runs = BoolParam(request, "allRuns");
  StatusOr<bool> follow = BoolParam(request, "follow");
  StatusOr<std::optional<uint64_t>> tail = CountParam(request, "tailLines", uint64_t{1} << 40);
  StatusOr<std::optional<uint64_t>> limit = CountParam(request, "limitBytes", uint64_t{1} << 50);
  for (const Status& status :
       {previous.status(), all_runs.status(), follow.status(), tail.status(), limit.status()}) {
    if (!status.ok()) return FromStatus(status);
  }
  query.previous = *previous;
  query.all_runs = *all_runs;
  query.tail_lines = *tail;
  query.limit_bytes = *limit;
  if (options_.home.empty()) return ClientPodLog(namespace_name, pod_name, query, *follow);
  exec::JobStore files(options_.home);
  std::filesystem::path path = files.LogPath(pod->job, pod->replica);
  StatusOr<FileReader> opened = FileReader::Open(path);
  if (!opened.ok()) {
    if (opened.status().code() == Status::Code::kNotFound) {
      const job::JobKind* kind = KindOfJob(*store, pod->job);
      const std::string container =
          kind != nullptr ? kind->facts().container_name
                          : job::KindRegistry::Default().kinds().front()->facts().container_name;
      return StatusResponse(400, "BadRequest",
                            "container \"" + container + "\" in pod \"" + pod_name +
                                "\" is waiting to start: it has written no log yet");
    }
    return FromStatus(opened.status());
  }
  auto file = std::make_shared<FileReader>(std::move(*opened));
  StatusOr<RunIndex> runs = UpdatedRunIndex(*file);
  if (!runs.ok()) return FromStatus(runs.status());
  StatusOr<LogRange> range = SelectLogRange(*file, *runs, query);
  if (!range.ok()) return FromStatus(range.status());

  const bool events = request.accept.find("text/event-stream") != std::string::npos;
  // An EventSource that reconnects resumes where its last event ended.
  if (events && !request.last_event_id.empty()) {
    StatusOr<uint64_t> resume =
        ParseCount(request.last_event_id, "Last-Event-ID", uint64_t{1} << 50);
    if (resume.ok() && *resume <= file->Size()) range->begin = range->end = *resume;
  }
  ApiResponse response;
  response.content_type = events ? "text/event-stream" : "text/plain; charset=utf-8";
  response.headers.push_back({"Cache-Control", "no-store"});
  if (!*follow && !events) {
    LogRange whole = *range;
    response.stream = [file, whole](const ResponseWriter& write) {
      bool client_there = true;
      Status read = ForEachChunk(*file, whole, [&](std::string_view chunk) {
        client_there = write(chunk);
        return client_there;
      });
      return read.ok() && client_there;
    };
    return response;
  }
  if (*follow && open_streams_.load() >= options_.max_open_streams) {
    return StatusResponse(503, "ServiceUnavailable",
                          std::to_string(options_.max_open_streams) +
                              " logs are followed already; close some pages and try again");
  }
  exec::JobKey key = pod->job;
  const bool keep_following = *follow && !query.previous;
  LogRange first = *range;
  response.stream = [this, file, first, events, keep_following, key](const ResponseWriter& write) {
    ++open_streams_;
    struct Release {
      std::atomic<int>& count;
      ~Release() { --count; }
    } release{open_streams_};
    LineSplitter lines;
    EventStreamWriter sse(write);
    uint64_t offset = first.begin;
    auto send = [&](std::string_view bytes, uint64_t end_offset, bool flush) {
      if (!events) return write(bytes);
      lines.Add(bytes, [&](const std::string& line) { sse.Line(line); });
      if (flush) lines.Flush([&](const std::string& line) { sse.Line(line); });
      // The id is where a reconnecting stream resumes: after the last line sent.
      return sse.Send(end_offset - lines.pending_size());
    };
    // What the query selected, then what is appended while the job lives.
    bool client_there = true;
    Status read = ForEachChunk(*file, first, [&](std::string_view chunk) {
      offset += chunk.size();
      client_there = send(chunk, offset, !keep_following && offset >= first.end);
      return client_there;
    });
    if (!read.ok() || !client_there) return false;
    if (!keep_following) return !events || sse.End();
    auto deadline = std::chrono::steady_clock::now() + options_.max_follow;
    auto last_write = std::chrono::steady_clock::now();
    // Whether the job's supervisor still runs: the files' own matter, not the client's.
    exec::LocalJobs jobs(options_.home);
    while (!stopping_ && std::chrono::steady_clock::now() < deadline) {
      uint64_t size = file->Size();
      if (size < offset) return !events || sse.End();  // the log was replaced: the job was deleted
      if (size > offset) {
        StatusOr<std::string> chunk = file->ReadAt(
            offset, static_cast<size_t>(std::min<uint64_t>(size - offset, kMaxFollowBatchBytes)));
        if (!chunk.ok() || chunk->empty()) break;
        // Plain text passes on whole lines only, unless a line is too long to hold.
        size_t length = chunk->size();
        if (!events) {
          size_t newline = chunk->rfind('\n');
          if (newline == std::string::npos && length < kMaxFollowBatchBytes)
            length = 0;
          else if (newline != std::string::npos)
            length = newline + 1;
        }
        if (length > 0) {
          offset += length;
          if (!send(std::string_view(*chunk).substr(0, length), offset, false)) return false;
          last_write = std::chrono::steady_clock::now();
          continue;
        }
      }
      if (!jobs.IsLive(key)) {
        // Nothing more will be written: pass on the rest, a last line without newline included.
        StatusOr<std::string> rest = file->ReadAt(
            offset, static_cast<size_t>(std::min<uint64_t>(
                        file->Size() - std::min(file->Size(), offset), kMaxFollowBatchBytes)));
        if (rest.ok()) {
          offset += rest->size();
          if (!send(*rest, offset, true)) return false;
        }
        return !events || sse.End();
      }
      if (std::chrono::steady_clock::now() - last_write >= kHeartbeatEvery) {
        // A comment line for event streams, nothing for text: it tells whether the client is
        // still there.
        if (events && !write(":\n\n")) return false;
        last_write = std::chrono::steady_clock::now();
      }
      std::this_thread::sleep_for(options_.follow_poll);
    }
    return true;
  };
  return response;
}

// The note of a filtered scalars request that matched nothing: what the job does have, so that
// `tag=loss` on a job that writes batch_loss and epoch_loss says so.
std::string DashboardApi::NothingMatched(const exec::JobStore& store, const exec::JobKey& key,
                                         const view::ScalarQuery& filter,
                                         const std::vector<std::string>& tags) {
  view::ScalarQuery everything;
  everything.latest_only = true;
  std::vector<std::string> ignored;
  StatusOr<std::vector<view::ScalarSeries>> series =
      view::ReadJobScalars(store, key, everything, &scalar_cache_, &ignored);
  std::set<std::string> replicas, runs, known_tags;
  if (series.ok()) {
    for (const view::ScalarSeries& one : *series) {
      replicas.insert(one.replica);
      runs.insert(one.run);
      known_tags.insert(one.tag);
    }
  }
  auto joined = [](const auto& values) {
    std::string text;
    for (const std::string& value : values) text += (text.empty() ? "" : ", ") + value;
    return text.empty() ? std::string("none") : text;
  };
  std::string asked;
  if (!tags.empty()) asked += " tag=" + joined(tags);
  if (!filter.replica.empty()) asked += " replica=" + filter.replica;
  if (!filter.run.empty()) asked += " run=" + filter.run;
  return "no series matches" + asked + "; this job has tags: " + joined(known_tags) +
         "; replicas: " + joined(replicas) + "; runs: " + joined(runs);
}

ApiResponse DashboardApi::JobScalars(const ApiRequest& request, const std::string& namespace_name,
                                     const std::string& name, const job::JobKind& kind) {
  StatusOr<view::JobList> found =
      OneJob(namespace_name, name, view::JobDetail::kStatus, false, &kind);
  if (!found.ok() && found.status().code() != Status::Code::kNotFound)
    return FromStatus(found.status());
  if (!found.ok()) return JobNotFound(name, kind);
  if (options_.home.empty()) {
    // The curves are read from event files on this machine; a cluster's replicas write theirs
    // where their flags say, which the dashboard cannot read.
    return Json(
        {{"apiVersion", "v1"},
         {"kind", "List"},
         {"items", json::array()},
         {"notes",
          {"training curves are read from the replicas' summaries on this machine; a "
           "cluster's jobs have none here (point TensorBoard at their --tensorboard_dir)"}}});
  }
  exec::JobStore store(options_.home);
  exec::JobKey key{namespace_name, name};
  view::ScalarQuery query;
  query.replica = Param(request, "replica").value_or("");
  query.run = Param(request, "run").value_or("");
  // Several tags, comma-separated: read every tag and keep those.
  std::vector<std::string> tags;
  if (std::optional<std::string> tag = Param(request, "tag"); tag && !tag->empty()) {
    size_t position = 0;
    while (position <= tag->size()) {
      size_t comma = tag->find(',', position);
      if (comma == std::string::npos) comma = tag->size();
      if (comma > position) tags.push_back(tag->substr(position, comma - position));
      position = comma + 1;
    }
  }
  if (tags.size() == 1) query.tag = tags[0];
  StatusOr<std::optional<uint64_t>> after = CountParam(request, "after_step", uint64_t{1} << 62);
  StatusOr<std::optional<uint64_t>> max_points =
      CountParam(request, "max_points", kMaxPointsPerSeries);
  if (!after.ok()) return FromStatus(after.status());
  if (!max_points.ok()) return FromStatus(max_points.status());
  if (*after) query.after_step = static_cast<int64_t>(**after);
  if (*max_points) query.max_points = static_cast<size_t>(**max_points);
  std::vector<std::string> notes;
  const size_t dropped_before = scalar_cache_.dropped_bytes();
  StatusOr<std::vector<view::ScalarSeries>> series =
      view::ReadJobScalars(store, key, query, &scalar_cache_, &notes);
  if (scalar_cache_.dropped_bytes() - dropped_before >= kReturnFreedMemoryAfterBytes) {
    ReturnFreedMemory();  // files dropped from the cache (a large answer returns its own later)
  }
  if (!series.ok()) return FromStatus(series.status());
  // Written by hand: a million points as nlohmann::json values would cost far more than the text.
  std::string body = R"({"apiVersion":"v1","kind":"List","items":[)";
  bool first_series = true;
  for (const view::ScalarSeries& one : *series) {
    if (tags.size() > 1 && std::find(tags.begin(), tags.end(), one.tag) == tags.end()) continue;
    if (!first_series) body += ',';
    first_series = false;
    body += json({{"replica", one.replica},
                  {"run", one.run},
                  {"tag", one.tag},
                  {"totalPoints", one.total_points}})
                .dump();
    body.pop_back();  // the closing brace: the points follow
    body += R"(,"points":[)";
    for (size_t i = 0; i < one.points.size(); ++i) {
      if (i > 0) body += ',';
      AppendPointJson(one.points[i], &body);
    }
    body += "]}";
  }
  const bool filtered = !tags.empty() || !query.replica.empty() || !query.run.empty();
  if (first_series && filtered) notes.push_back(NothingMatched(store, key, query, tags));
  body += R"(],"notes":)" + json(notes).dump() + "}";
  ApiResponse response;
  response.body = std::move(body);
  return response;
}

ApiResponse DashboardApi::Metrics() {
  StatusOr<view::JobList> jobs = ListedJobs("", true, view::JobDetail::kReplicas, false, nullptr);
  if (!jobs.ok()) return FromStatus(jobs.status());
  ApiResponse response;
  response.content_type = "text/plain; version=0.0.4; charset=utf-8";
  view::LatestScalars no_scalars = [](const exec::JobKey&) {
    return std::vector<view::ScalarSeries>();
  };
  if (options_.home.empty()) {
    response.body = view::PrometheusMetrics(*jobs->store, no_scalars);
  } else {
    exec::JobStore files(options_.home);
    response.body =
        view::PrometheusMetrics(*jobs->store, view::LatestScalarsOf(files, &scalar_cache_));
  }
  return response;
}

ApiResponse DashboardApi::EventsList(const ApiRequest& request, const std::string& namespace_name,
                                     bool all, const std::string& job_name,
                                     const job::JobKind* kind) {
  std::optional<Selector> selector;
  if (std::optional<std::string> text = Param(request, "fieldSelector"); text && !text->empty()) {
    StatusOr<Selector> parsed = ParseSelector(*text, "fieldSelector");
    if (!parsed.ok()) return FromStatus(parsed.status());
    for (const Requirement& requirement : parsed->requirements()) {
      static const std::vector<std::string> kFields = {"involvedObject.name",
                                                       "involvedObject.kind",
                                                       "involvedObject.namespace",
                                                       "type",
                                                       "reason",
                                                       "metadata.namespace"};
      if (std::find(kFields.begin(), kFields.end(), requirement.key) == kFields.end()) {
        return StatusResponse(400, "BadRequest",
                              "field label not supported: " + requirement.key.substr(0, 80));
      }
    }
    selector = *parsed;
  }
  StatusOr<std::optional<uint64_t>> limit = CountParam(request, "limit", kMaxEvents);
  if (!limit.ok()) return FromStatus(limit.status());
  size_t keep = limit->value_or(kMaxEvents);
  std::vector<exec::JobKey> keys;
  std::shared_ptr<const exec::JobStateStore> store;
  std::optional<std::string> named = job_name.empty() ? std::nullopt : std::optional(job_name);
  if (!named && selector) named = selector->RequiredValue("involvedObject.name");
  if (named && !all) {
    StatusOr<view::JobList> found =
        OneJob(namespace_name, *named, view::JobDetail::kEvents, false, kind);
    if (found.ok()) {
      keys = found->keys;
      store = found->store;
    } else if (found.status().code() != Status::Code::kNotFound) {
      return FromStatus(found.status());
    } else if (!job_name.empty() && kind != nullptr) {
      return JobNotFound(job_name, *kind);
    }
  } else {
    StatusOr<view::JobList> jobs =
        ListedJobs(namespace_name, all, view::JobDetail::kEvents, false, kind);
    if (!jobs.ok()) return FromStatus(jobs.status());
    keys = jobs->keys;
    store = jobs->store;
  }
  // One job's last events, when only the job is selected, are read from the end of its events
  // file: a job with thousands of events costs what the page shows.
  bool only_the_job = true;
  if (selector) {
    for (const Requirement& requirement : selector->requirements()) {
      if (requirement.key.rfind("involvedObject.", 0) != 0 &&
          requirement.key != "metadata.namespace") {
        only_the_job = false;
      }
    }
  }
  json items = json::array();
  for (const exec::JobKey& key : keys) {
    const job::JobKind* of_job = KindOfJob(*store, key);
    if (of_job == nullptr) continue;
    StatusOr<std::vector<job::Event>> events =
        keys.size() == 1 && only_the_job && !options_.home.empty()
            ? LastEvents(exec::JobStore(options_.home), key, keep)
            : store->ReadEvents(key);
    if (!events.ok()) continue;
    for (size_t i = 0; i < events->size(); ++i) {
      const job::Event& event = (*events)[i];
      if (selector && !selector->Matches({{"involvedObject.name", key.name},
                                          {"involvedObject.kind", of_job->name()},
                                          {"involvedObject.namespace", key.namespace_name},
                                          {"metadata.namespace", key.namespace_name},
                                          {"type", event.type},
                                          {"reason", event.reason}})) {
        continue;
      }
      items.push_back(EventObject(key, *of_job, event, i));
    }
  }
  if (items.size() > keep) {
    items.erase(items.begin(), items.begin() + static_cast<long>(items.size() - keep));
  }
  return Json({{"apiVersion", "v1"}, {"kind", "EventList"}, {"items", items}});
}

}  // namespace cohort::ui
