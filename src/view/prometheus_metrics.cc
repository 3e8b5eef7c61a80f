#include "view/prometheus_metrics.h"

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cmath>
#include <map>
#include <optional>
#include <utility>

#include "job/common_types.h"
#include "job/job_kind.h"
#include "job/reconciler.h"

namespace cohort::view {
namespace {

using Labels = std::vector<std::pair<std::string, std::string>>;

// The text of a sample value: the shortest form that reads back as the same double.
std::string FormatValue(double value) {
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "+Inf" : "-Inf";
  char text[64];
  const auto [end, error] = std::to_chars(text, text + sizeof(text), value);
  return error == std::errc() ? std::string(text, end) : "NaN";
}

// One metric family: its HELP and TYPE lines, then its samples.
class Family {
 public:
  Family(std::string name, std::string type, std::string help)
      : name_(std::move(name)), type_(std::move(type)), help_(std::move(help)) {}

  void Add(const Labels& labels, double value) {
    std::string line = name_;
    if (!labels.empty()) {
      line += '{';
      for (size_t i = 0; i < labels.size(); ++i) {
        if (i > 0) line += ',';
        line += labels[i].first + "=\"" + EscapeLabelValue(labels[i].second) + '"';
      }
      line += '}';
    }
    samples_.push_back(line + ' ' + FormatValue(value) + '\n');
  }

  void AppendTo(std::string* out) const {
    if (samples_.empty()) return;
    *out += "# HELP " + name_ + ' ' + help_ + '\n';
    *out += "# TYPE " + name_ + ' ' + type_ + '\n';
    for (const std::string& sample : samples_) *out += sample;
  }

 private:
  std::string name_, type_, help_;
  std::vector<std::string> samples_;
};

double UnixSeconds(Time time) {
  return std::chrono::duration<double>(time.time_since_epoch()).count();
}

// The states a job's last condition can name, as `cohort get` prints them.
const std::vector<std::string>& KnownStates() {
  static const std::vector<std::string> states = {
      job::kConditionCreated,   job::kConditionRunning,   job::kConditionRestarting,
      job::kConditionSuspended, job::kConditionSucceeded, job::kConditionFailed};
  return states;
}

// "worker-1" -> {"worker", "1"}.
std::pair<std::string, std::string> SplitReplicaName(const std::string& replica) {
  const size_t dash = replica.rfind('-');
  if (dash == std::string::npos) return {replica, ""};
  return {replica.substr(0, dash), replica.substr(dash + 1)};
}

// A replica's latest figures, gathered from its series.
struct Figures {
  std::optional<double> global_step, loss, samples_per_second, step_seconds, allreduce_wait,
      last_update;
};

// The value of the first of `tags` found, preferring the "train" run.
std::optional<double> FirstOf(const std::vector<const ScalarSeries*>& series,
                              const std::vector<std::string>& tags) {
  for (const bool train_only : {true, false}) {
    for (const std::string& tag : tags) {
      for (const ScalarSeries* one : series) {
        if (one->tag != tag || one->points.empty() || (train_only && one->run != "train")) {
          continue;
        }
        return one->points.back().value;
      }
    }
  }
  return std::nullopt;
}

std::map<std::string, Figures> FiguresByReplica(const std::vector<ScalarSeries>& all) {
  std::map<std::string, std::vector<const ScalarSeries*>> by_replica;
  for (const ScalarSeries& series : all) by_replica[series.replica].push_back(&series);
  std::map<std::string, Figures> figures;
  for (const auto& [replica, series] : by_replica) {
    Figures& f = figures[replica];
    for (const ScalarSeries* one : series) {
      if (one->points.empty()) continue;
      const ScalarPoint& last = one->points.back();
      f.global_step = std::max(f.global_step.value_or(0), static_cast<double>(last.step));
      f.last_update = std::max(f.last_update.value_or(0), last.wall_time);
    }
    f.loss = FirstOf(series, {"batch_loss", "loss", "epoch_loss"});
    f.samples_per_second =
        FirstOf(series, {"batch_samples_per_second", "epoch_samples_per_second"});
    f.step_seconds = FirstOf(series, {"batch_step_seconds"});
    f.allreduce_wait = FirstOf(series, {"batch_allreduce_wait_seconds"});
  }
  return figures;
}

}  // namespace

std::string EscapeLabelValue(const std::string& value) {
  std::string escaped;
  escaped.reserve(value.size());
  for (char c : value) {
    if (c == '\\') {
      escaped += "\\\\";
    } else if (c == '"') {
      escaped += "\\\"";
    } else if (c == '\n') {
      escaped += "\\n";
    } else {
      escaped += c;
    }
  }
  return escaped;
}

std::string PrometheusMetrics(const exec::JobStateStore& store, const LatestScalars& latest_scalars,
                              Time now) {
  Family jobs("cohort_jobs", "gauge", "Number of jobs in each state.");
  Family job_state("cohort_job_state", "gauge",
                   "1 for the state the job is in (its last condition), 0 for the others.");
  Family start_time("cohort_job_start_time_seconds", "gauge",
                    "When the job started (status.startTime), in Unix seconds.");
  Family completion_time("cohort_job_completion_time_seconds", "gauge",
                         "When the job finished (status.completionTime), in Unix seconds.");
  Family duration("cohort_job_duration_seconds", "gauge",
                  "How long the job has run: from its start to its completion, or to now.");
  Family replicas("cohort_job_replicas", "gauge",
                  "Replicas of each type that are active, succeeded or failed (status).");
  Family restarts("cohort_replica_restarts_total", "counter",
                  "Restarts of each replica since the job was created.");
  Family global_step("cohort_training_global_step", "gauge",
                     "The latest global step a replica logged (TensorBoard scalars).");
  Family loss("cohort_training_loss", "gauge", "The latest training loss a replica logged.");
  Family samples_per_second("cohort_training_samples_per_second", "gauge",
                            "The latest training throughput, in samples per second (all workers).");
  Family step_seconds("cohort_training_step_seconds", "gauge",
                      "The latest wall time of one training step, in seconds.");
  Family allreduce_wait("cohort_training_allreduce_wait_seconds", "gauge",
                        "The latest time a step waited for its gradient all-reduce after the "
                        "backward pass, in seconds.");
  Family last_update("cohort_training_last_update_seconds", "gauge",
                     "The wall time of a replica's latest training figure, in Unix seconds.");

  // {namespace, framework} -> state -> count
  std::map<std::pair<std::string, std::string>, std::map<std::string, int>> counts;
  for (const exec::JobKey& key : store.ListJobs()) {
    StatusOr<job::Job> spec = store.ReadSpec(key);
    StatusOr<job::JobStatus> status = store.ReadStatus(key);
    const std::string framework =
        spec.ok() && spec->job_kind != nullptr ? spec->job_kind->facts().container_name : "";
    std::string state = status.ok() ? job::JobState(*status) : "";
    if (state.empty()) state = "Unknown";
    std::map<std::string, int>& namespace_counts = counts[{key.namespace_name, framework}];
    for (const std::string& known : KnownStates()) namespace_counts[known] += 0;
    ++namespace_counts[state];

    const Labels job_labels = {{"namespace", key.namespace_name}, {"job_name", key.name}};
    for (const std::string& known : KnownStates()) {
      Labels labels = job_labels;
      labels.emplace_back("framework", framework);
      labels.emplace_back("state", known);
      job_state.Add(labels, known == state ? 1 : 0);
    }
    if (status.ok()) {
      if (status->start_time) {
        start_time.Add(job_labels, UnixSeconds(*status->start_time));
        const Time end = status->completion_time.value_or(now);
        duration.Add(job_labels,
                     std::max(0.0, UnixSeconds(end) - UnixSeconds(*status->start_time)));
      }
      if (status->completion_time) {
        completion_time.Add(job_labels, UnixSeconds(*status->completion_time));
      }
      for (const auto& [type, counts_of_type] : status->replica_statuses) {
        const std::pair<const char*, int32_t> by_status[] = {
            {"active", counts_of_type.active},
            {"succeeded", counts_of_type.succeeded},
            {"failed", counts_of_type.failed}};
        for (const auto& [name, count] : by_status) {
          Labels labels = job_labels;
          labels.emplace_back("replica_type", job::LowerCase(type));
          labels.emplace_back("status", name);
          replicas.Add(labels, count);
        }
      }
    }
    for (const exec::ReplicaRow& row : store.ReadReplicas(key)) {
      const auto [type, index] = SplitReplicaName(row.name);
      restarts.Add({{"namespace", key.namespace_name},
                    {"pod", key.name + "-" + row.name},
                    {"container", framework},
                    {"job_name", key.name},
                    {"replica_type", type},
                    {"replica_index", index}},
                   row.restarts);
    }

    const bool finished = status.ok() && job::IsFinished(*status);
    if (finished || !latest_scalars) continue;
    for (const auto& [replica, figures] : FiguresByReplica(latest_scalars(key))) {
      const auto [type, index] = SplitReplicaName(replica);
      const Labels labels = {{"namespace", key.namespace_name},
                             {"job_name", key.name},
                             {"pod", key.name + "-" + replica},
                             {"replica_type", type},
                             {"replica_index", index}};
      const std::pair<Family*, std::optional<double>> values[] = {
          {&global_step, figures.global_step},
          {&loss, figures.loss},
          {&samples_per_second, figures.samples_per_second},
          {&step_seconds, figures.step_seconds},
          {&allreduce_wait, figures.allreduce_wait},
          {&last_update, figures.last_update}};
      for (const auto& [family, value] : values) {
        if (value) family->Add(labels, *value);
      }
    }
  }
  for (const auto& [where, states] : counts) {
    for (const auto& [state, count] : states) {
      jobs.Add({{"job_namespace", where.first}, {"framework", where.second}, {"state", state}},
               count);
    }
  }

  std::string text;
  for (const Family* family :
       {&jobs, &job_state, &start_time, &completion_time, &duration, &replicas, &restarts,
        &global_step, &loss, &samples_per_second, &step_seconds, &allreduce_wait, &last_update}) {
    family->AppendTo(&text);
  }
  return text;
}

LatestScalars LatestScalarsOf(const exec::JobStore& store, ScalarCache* cache) {
  return [&store, cache](const exec::JobKey& key) {
    ScalarQuery query;
    query.latest_only = true;
    StatusOr<std::vector<ScalarSeries>> series = ReadJobScalars(store, key, query, cache);
    return series.ok() ? std::move(series).value() : std::vector<ScalarSeries>();
  };
}

}  // namespace cohort::view
