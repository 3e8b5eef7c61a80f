#include "view/ai_platform_view.h"

#include <algorithm>
#include <ctime>

#include "job/ai_platform_job.h"
#include "job/reconciler.h"
#include "view/table.h"

namespace cohort::view {
namespace {

// The image of a replica spec's main container ("" when it has none).
std::string ImageOf(const job::ReplicaSpec& spec) {
  return spec.template_spec.containers.empty() ? "" : spec.template_spec.containers.front().image;
}

nlohmann::json TrainingInput(const job::Job& job) {
  nlohmann::json input = {{"scaleTier", "CUSTOM"}};
  for (const auto& [type, spec] : job.replica_specs) {
    std::string role = job::LowerCase(type);
    std::string image = ImageOf(spec);
    if (role == "master" || role == "chief") {
      input["masterConfig"] = {{"imageUri", image}};
    } else if (role == "worker") {
      input["workerCount"] = std::to_string(spec.replicas);
      input["workerConfig"] = {{"imageUri", image}};
    } else if (role == "ps") {
      input["parameterServerCount"] = std::to_string(spec.replicas);
      input["parameterServerConfig"] = {{"imageUri", image}};
    } else if (role == "evaluator") {
      input["evaluatorCount"] = std::to_string(spec.replicas);
      input["evaluatorConfig"] = {{"imageUri", image}};
    }
  }
  return input;
}

// The replica whose exit failed the job: of those that failed with a non-zero code and were not
// restarted, the first to exit. Null when none did (a job stopped by its deadline, say).
const exec::ReplicaRow* FirstFailedReplica(const std::vector<exec::ReplicaRow>& rows) {
  const exec::ReplicaRow* first = nullptr;
  for (const exec::ReplicaRow& row : rows) {
    if (row.phase != job::ToString(job::ReplicaPhase::kFailed)) continue;
    if (!row.exit_code || *row.exit_code == 0) continue;
    if (first == nullptr ||
        (row.finished_at && (!first->finished_at || *row.finished_at < *first->finished_at))) {
      first = &row;
    }
  }
  return first;
}

}  // namespace

std::string AiPlatformErrorMessage(const std::vector<exec::ReplicaRow>& replicas,
                                   const std::string& job_id, const std::string& fallback) {
  const exec::ReplicaRow* failed = FirstFailedReplica(replicas);
  if (failed == nullptr) return fallback;
  std::string replica = failed->name;
  size_t dash = replica.rfind('-');
  if (dash != std::string::npos) replica[dash] = ' ';
  std::string message = "The replica " + replica + " exited with a non-zero status of " +
                        std::to_string(*failed->exit_code) + ".";
  if (!failed->last_log_lines.empty()) {
    message += " Its last log line: \"" + failed->last_log_lines.back() + "\".";
  }
  return message + " Its logs: cohort ai-platform jobs stream-logs " + job_id;
}

std::string AiPlatformJobId(const exec::JobStateStore& store, const exec::JobKey& key) {
  StatusOr<job::Job> spec = store.ReadSpec(key);
  return spec.ok() ? job::AiPlatformJobId(*spec) : key.name;
}

std::string AiPlatformState(const job::JobStatus& status) {
  std::string state = job::JobState(status);
  if (state == job::kConditionSucceeded) return "SUCCEEDED";
  if (state == job::kConditionFailed) return "FAILED";
  if (state == job::kConditionSuspended) return "CANCELLED";
  if (state == job::kConditionRunning || state == job::kConditionRestarting) return "RUNNING";
  return "QUEUED";
}

std::string AiPlatformCreated(Time time) {
  std::time_t seconds = Clock::to_time_t(time);
  std::tm local{};
  localtime_r(&seconds, &local);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%S", &local);
  return text;
}

std::string AiPlatformJobTable(const exec::JobStateStore& store,
                               const std::vector<exec::JobKey>& keys) {
  std::vector<exec::JobKey> newest_first = keys;
  std::stable_sort(newest_first.begin(), newest_first.end(),
                   [&](const exec::JobKey& a, const exec::JobKey& b) {
                     return store.CreationTime(a) > store.CreationTime(b);
                   });
  std::vector<Row> rows = {{"JOB_ID", "STATUS", "CREATED"}};
  for (const exec::JobKey& key : newest_first) {
    StatusOr<job::JobStatus> status = store.ReadStatus(key);
    rows.push_back({AiPlatformJobId(store, key),
                    status.ok() ? AiPlatformState(*status) : "STATE_UNSPECIFIED",
                    AiPlatformCreated(store.CreationTime(key))});
  }
  return FormatTable(rows, "", 2);
}

StatusOr<nlohmann::json> AiPlatformJobObject(const exec::JobStateStore& store,
                                             const exec::JobKey& key) {
  StatusOr<job::Job> spec = store.ReadSpec(key);
  if (!spec.ok()) return spec.status();
  StatusOr<job::JobStatus> status = store.ReadStatus(key);
  if (!status.ok()) return status.status();
  const std::string job_id = job::AiPlatformJobId(*spec);
  nlohmann::json object = {{"jobId", job_id},
                           {"state", AiPlatformState(*status)},
                           {"createTime", FormatTime(store.CreationTime(key))},
                           {"trainingInput", TrainingInput(*spec)}};
  if (status->start_time) object["startTime"] = FormatTime(*status->start_time);
  if (status->completion_time) object["endTime"] = FormatTime(*status->completion_time);
  if (job::IsFailed(*status) && !status->conditions.empty()) {
    object["errorMessage"] =
        AiPlatformErrorMessage(store.ReadReplicas(key), job_id, status->conditions.back().message);
  }
  return object;
}

}  // namespace cohort::view
