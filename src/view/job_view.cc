#include "view/job_view.h"

#include <algorithm>
#include <iomanip>
#include <map>
#include <sstream>

#include "job/job_kind.h"
#include "job/reconciler.h"
#include "job/spec_writer.h"
#include "job/status_json.h"
#include "view/table.h"

namespace cohort::view {
namespace {

// "Clean Pod Policy" from "cleanPodPolicy", as kubectl describe prints field names.
std::string TitleCase(const std::string& field) {
  std::string title;
  for (size_t i = 0; i < field.size(); ++i) {
    char c = field[i];
    if (i == 0) {
      title += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    } else if (std::isupper(static_cast<unsigned char>(c)) &&
               !std::isupper(static_cast<unsigned char>(field[i - 1]))) {
      title += ' ';
      title += c;
    } else {
      title += c;
    }
  }
  return title;
}

// A JSON value in kubectl describe's indented "Key:  value" form.
void DescribeValue(std::ostringstream& out, const nlohmann::json& value, int depth) {
  std::string indent(static_cast<size_t>(depth) * 2, ' ');
  if (value.is_object()) {
    for (const auto& [key, item] : value.items()) {
      if (item.is_object() || (item.is_array() && !item.empty() && !item[0].is_primitive())) {
        out << indent << TitleCase(key) << ":\n";
        DescribeValue(out, item, depth + 1);
      } else {
        out << indent << TitleCase(key) << ":  ";
        if (item.is_array()) {
          std::string joined;
          for (const auto& element : item) {
            joined += (joined.empty() ? "" : " ") +
                      (element.is_string() ? element.get<std::string>() : element.dump());
          }
          out << joined << "\n";
        } else {
          out << (item.is_string() ? item.get<std::string>() : item.dump()) << "\n";
        }
      }
    }
  } else if (value.is_array()) {
    for (const auto& element : value) {
      if (element.is_primitive()) {
        out << indent << (element.is_string() ? element.get<std::string>() : element.dump())
            << "\n";
      } else {
        DescribeValue(out, element, depth);
        out << "\n";
      }
    }
  }
}

int CountRestarts(const std::vector<exec::ReplicaRow>& replicas) {
  int restarts = 0;
  for (const exec::ReplicaRow& replica : replicas) restarts += replica.restarts;
  return restarts;
}

}  // namespace

StatusOr<nlohmann::json> JobObject(const exec::JobStateStore& store, const exec::JobKey& key) {
  StatusOr<nlohmann::json> object = store.ReadSpecObject(key);
  if (!object.ok()) return object.status();
  StatusOr<job::JobStatus> status = store.ReadStatus(key);
  if (!status.ok()) return status.status();
  (*object)["status"] = job::JobStatusToJson(*status);
  return object;
}

nlohmann::json JobObjects(const exec::JobStateStore& store, const std::vector<exec::JobKey>& keys,
                          bool list) {
  nlohmann::json items = nlohmann::json::array();
  for (const exec::JobKey& key : keys) {
    StatusOr<nlohmann::json> object = JobObject(store, key);
    if (object.ok()) items.push_back(*object);
  }
  if (list) return {{"apiVersion", "v1"}, {"kind", "List"}, {"items", items}};
  return items.empty() ? nlohmann::json::object() : items[0];
}

std::string JobTable(const exec::JobStateStore& store, const std::vector<exec::JobKey>& keys,
                     bool wide, bool show_namespace, Time now) {
  std::vector<Row> rows;
  Row header = {"NAME", "STATE", "AGE"};
  if (show_namespace) header.insert(header.begin(), "NAMESPACE");
  // MESSAGE, last because it is long: the latest condition's message, which says why the job is
  // in its STATE (why it failed, above all), as `kubectl get -o wide` adds the telling columns.
  if (wide) {
    header.insert(header.end(),
                  {"ACTIVE", "SUCCEEDED", "FAILED", "RESTARTS", "REPLICAS", "MESSAGE"});
  }
  rows.push_back(header);
  for (const exec::JobKey& key : keys) {
    // A job whose files do not read back is listed as Broken, with why in MESSAGE, among the
    // others (exec::JobStateStore::Health).
    const Status health = store.Health(key);
    StatusOr<job::JobStatus> status = store.ReadStatus(key);
    Row row = {key.name,
               !health.ok()  ? "Broken"
               : status.ok() ? job::JobState(*status)
                             : "Unknown",
               Age(store.CreationTime(key), now)};
    if (show_namespace) row.insert(row.begin(), key.namespace_name);
    if (wide) {
      int active = 0, succeeded = 0, failed = 0;
      std::string replicas;
      if (status.ok()) {
        for (const auto& [type, counts] : status->replica_statuses) {
          active += counts.active;
          succeeded += counts.succeeded;
          failed += counts.failed;
        }
      }
      if (StatusOr<job::Job> spec = store.ReadSpec(key); spec.ok()) {
        for (const auto& [type, replica_spec] : spec->replica_specs) {
          replicas +=
              (replicas.empty() ? "" : ",") + type + "=" + std::to_string(replica_spec.replicas);
        }
      }
      std::string message = "<none>";
      if (!health.ok()) {
        message = health.message();
      } else if (status.ok() && !status->conditions.empty() &&
                 !status->conditions.back().message.empty()) {
        message = status->conditions.back().message;
      }
      row.insert(row.end(),
                 {std::to_string(active), std::to_string(succeeded), std::to_string(failed),
                  std::to_string(CountRestarts(store.ReadReplicas(key))), replicas, message});
    }
    rows.push_back(row);
  }
  return FormatTable(rows);
}

StatusOr<std::string> DescribeJob(const exec::JobStateStore& store, const exec::JobKey& key,
                                  Time now) {
  COHORT_RETURN_IF_ERROR(store.Health(key));
  StatusOr<nlohmann::json> object = JobObject(store, key);
  if (!object.ok()) return object.status();
  StatusOr<job::JobStatus> status = store.ReadStatus(key);
  if (!status.ok()) return status.status();
  const nlohmann::json& metadata = (*object)["metadata"];
  std::ostringstream out;
  out << "Name:         " << key.name << "\n";
  out << "Namespace:    " << key.namespace_name << "\n";
  out << "Labels:       "
      << (metadata.value("labels", nlohmann::json::object()).empty() ? "<none>"
                                                                     : metadata["labels"].dump())
      << "\n";
  out << "Annotations:  "
      << (metadata.value("annotations", nlohmann::json::object()).empty()
              ? "<none>"
              : metadata["annotations"].dump())
      << "\n";
  out << "API Version:  " << object->value("apiVersion", "") << "\n";
  out << "Kind:         " << object->value("kind", "") << "\n";
  out << "Metadata:\n  Creation Timestamp:  " << metadata.value("creationTimestamp", "") << "\n";
  out << "Spec:\n";
  DescribeValue(out, (*object)["spec"], 1);

  out << "Status:\n";
  if (status->completion_time)
    out << "  Completion Time:  " << FormatTime(*status->completion_time) << "\n";
  out << "  Conditions:\n";
  std::vector<Row> conditions = {{"Type", "Status", "Reason", "Last Transition Time", "Message"}};
  for (const job::JobCondition& condition : status->conditions) {
    conditions.push_back({condition.type, condition.status, condition.reason,
                          FormatTime(condition.last_transition_time), condition.message});
  }
  out << FormatTable(conditions, "    ");
  out << "  Replica Statuses:\n";
  for (const auto& [type, counts] : status->replica_statuses) {
    out << "    " << type << ":\n";
    if (counts.active) out << "      Active:     " << counts.active << "\n";
    if (counts.succeeded) out << "      Succeeded:  " << counts.succeeded << "\n";
    if (counts.failed) out << "      Failed:     " << counts.failed << "\n";
  }
  if (status->start_time) out << "  Start Time:  " << FormatTime(*status->start_time) << "\n";

  std::vector<exec::ReplicaRow> replicas = store.ReadReplicas(key);
  out << "Replicas:\n";
  if (replicas.empty()) {
    out << "  <none>\n";
  } else {
    std::vector<Row> rows = {{"NAME", "PHASE", "RESTARTS", "EXIT CODE", "PORT", "PID", "LOG"}};
    for (const exec::ReplicaRow& replica : replicas) {
      rows.push_back({replica.name, replica.phase, std::to_string(replica.restarts),
                      replica.exit_code ? std::to_string(*replica.exit_code) : "",
                      std::to_string(replica.port),
                      replica.pid > 0 ? std::to_string(replica.pid) : "",
                      store.LogLocation(key, replica.name)});
    }
    out << FormatTable(rows, "  ");
    // Why the replicas that failed ended, in their own words, kept with the job.
    bool header_written = false;
    for (const exec::ReplicaRow& replica : replicas) {
      if (!replica.exit_code || *replica.exit_code == 0 || replica.last_log_lines.empty()) continue;
      if (!header_written) out << "Last Log Lines:\n";
      header_written = true;
      out << "  " << replica.name << " (exit code " << *replica.exit_code;
      if (replica.finished_at) out << " at " << FormatTime(*replica.finished_at);
      out << "):\n";
      for (const std::string& line : replica.last_log_lines) out << "    " << line << "\n";
    }
  }

  out << "Events:\n";
  StatusOr<std::vector<job::Event>> events = store.ReadEvents(key);
  if (!events.ok() || events->empty()) {
    out << "  <none>\n";
    return out.str();
  }
  // Identical events (type, reason, message) are folded into one line, as kubectl does.
  struct Folded {
    job::Event event;
    Time first;
    int count = 0;
  };
  std::vector<Folded> folded;
  std::map<std::string, size_t> index;
  for (const job::Event& event : *events) {
    std::string identity = event.type + "\n" + event.reason + "\n" + event.message;
    auto [it, inserted] = index.emplace(identity, folded.size());
    if (inserted) folded.push_back({event, event.time, 0});
    Folded& entry = folded[it->second];
    entry.event.time = event.time;
    entry.count += 1;
  }
  // The event source, as kubectl prints it: the kind's controller.
  StatusOr<job::Job> spec = store.ReadSpec(key);
  const job::JobKind& kind =
      spec.ok() ? *spec->job_kind : *job::KindRegistry::Default().kinds().front();
  std::vector<Row> rows = {{"Type", "Reason", "Age", "From", "Message"},
                           {"----", "------", "----", "----", "-------"}};
  for (const Folded& entry : folded) {
    std::string age = Age(entry.event.time, now);
    if (entry.count > 1)
      age += " (x" + std::to_string(entry.count) + " over " + Age(entry.first, now) + ")";
    rows.push_back({entry.event.type, entry.event.reason, age, kind.facts().controller_name,
                    entry.event.message});
  }
  out << FormatTable(rows, "  ");
  return out.str();
}

}  // namespace cohort::view
