#include "cohort/cluster.h"

#include <algorithm>
#include <cstdlib>

#include "cluster/tf_config.h"
#include "public_api/internal.h"

namespace cohort {
namespace {

Task PublicTask(const cluster::TfConfig& config, const cluster::TaskId& id) {
  Task task{id.type, id.index, ""};
  if (!config.sparse && !config.cluster.jobs.empty() && !id.type.empty()) {
    auto job = config.cluster.jobs.find(id.type);
    if (job != config.cluster.jobs.end() && id.index >= 0 &&
        id.index < static_cast<int>(job->second.size())) {
      task.address = job->second[id.index];
    }
  }
  return task;
}

}  // namespace

std::string Task::ToString() const { return type + ":" + std::to_string(index); }

Cluster Cluster::FromEnvironment() {
  const char* text = std::getenv("TF_CONFIG");
  // Set but empty is an error, as in TensorFlow; TfConfigFromEnvironment says so.
  if (text != nullptr && *text == '\0') ValueOrThrow(cluster::TfConfigFromEnvironment());
  return FromTfConfig(text == nullptr ? "" : text);
}

Cluster Cluster::FromTfConfig(const std::string& json) {
  Cluster result;
  result.tf_config_ = json;
  cluster::TfConfig config;
  if (!json.empty()) config = ValueOrThrow(cluster::ParseTfConfig(json));
  if (config.cluster.jobs.empty() && !config.sparse) {
    // A process alone: worker 0 of a one-worker cluster, as TensorFlow reads a missing TF_CONFIG.
    result.task_ =
        Task{config.task.type.empty() ? "worker" : config.task.type, config.task.index, ""};
    result.chief_ = result.task_;
    result.tasks_ = {result.task_};
    return result;
  }
  result.task_ = PublicTask(config, config.task);
  result.is_chief_ = cluster::IsChief(config);
  if (config.sparse) {
    // Each task knows only itself and the parameter servers.
    result.rank_ = -1;
    result.world_size_ = 0;
    result.tasks_.push_back(result.task_);
    for (size_t i = 0; i < config.sparse_ps.size(); ++i) {
      result.tasks_.push_back(Task{"ps", static_cast<int>(i), config.sparse_ps[i]});
    }
    return result;
  }
  result.chief_ = PublicTask(config, cluster::ChiefTask(config.cluster));
  result.world_size_ = cluster::NumWorkers(config.cluster);
  const std::optional<int> rank = cluster::WorkerRank(config.cluster, config.task);
  result.rank_ = rank.has_value() ? *rank : -1;
  const std::vector<cluster::TaskId> workers = cluster::WorkerTasks(config.cluster);
  for (const cluster::TaskId& id : workers) result.tasks_.push_back(PublicTask(config, id));
  for (const auto& [type, endpoints] : config.cluster.jobs) {
    for (size_t i = 0; i < endpoints.size(); ++i) {
      const cluster::TaskId id{type, static_cast<int>(i)};
      if (std::find(workers.begin(), workers.end(), id) == workers.end()) {
        result.tasks_.push_back(PublicTask(config, id));
      }
    }
  }
  if (result.task_.type == "evaluator" && result.task_.address.empty()) {
    result.tasks_.push_back(result.task_);  // an evaluator outside the training cluster
  }
  return result;
}

std::vector<Task> Cluster::peers() const {
  std::vector<Task> others;
  for (const Task& task : tasks_) {
    if (task.type != task_.type || task.index != task_.index) others.push_back(task);
  }
  return others;
}

int Cluster::NumTasks(const std::string& type) const {
  return static_cast<int>(std::count_if(tasks_.begin(), tasks_.end(),
                                        [&](const Task& task) { return task.type == type; }));
}

std::string TaskAtRank(const Cluster& cluster, int rank) {
  if (rank >= 0 && rank < static_cast<int>(cluster.tasks().size())) {
    return cluster.tasks()[rank].ToString();
  }
  return "rank " + std::to_string(rank);
}

}  // namespace cohort
