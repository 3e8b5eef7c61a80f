// cohort/cluster.h: who is in the training cluster and who this process is, from TF_CONFIG.
//
// Every replica of a TFJob gets the environment variable TF_CONFIG (written by `cohort run` or by
// the Kubernetes operator, exactly as Kubeflow's does); Cluster reads it as TensorFlow does:
//
//   cohort::Cluster cluster = cohort::Cluster::FromEnvironment();
//   std::printf("I am %s, rank %d of %d; the chief is %s\n", cluster.task().ToString().c_str(),
//               cluster.rank(), cluster.world_size(), cluster.chief().ToString().c_str());
//   if (cluster.is_chief()) { ... write what only one task writes ... }
//
// Without TF_CONFIG the process is a cluster of one worker that trains alone (rank 0, world size
// 1, chief), as a TensorFlow program does: the same program runs on a laptop and as a TFJob.
//
// The training tasks (chief or master, then workers) are ranked chief first, then workers by
// index; ps and evaluator tasks have no rank (-1). A malformed TF_CONFIG throws cohort::Error
// naming the JSON path at fault ("TF_CONFIG: task.index 3 is out of range: cluster.worker has 2
// tasks").
#pragma once

#include <string>
#include <vector>

namespace cohort {

// One task of the cluster: its type ("chief", "worker", "ps", "evaluator", "master"), its index
// within the type and its address ("host:port"; empty for a process alone).
struct Task {
  std::string type;
  int index = 0;
  std::string address;

  // "worker:1"
  std::string ToString() const;
};

class Cluster {
 public:
  // TF_CONFIG from the environment; a one-worker cluster when it is not set. Throws
  // cohort::Error (kInvalidArgument) when it is set but malformed or empty.
  static Cluster FromEnvironment();
  // The same from TF_CONFIG's JSON text ("" or "{}" is a process alone).
  static Cluster FromTfConfig(const std::string& json);

  // This process's task ("worker:0" alone).
  const Task& task() const { return task_; }
  // Position among the training tasks, the chief 0; -1 for a ps or evaluator task.
  int rank() const { return rank_; }
  // The number of training tasks (chief, master and workers): 1 alone.
  int world_size() const { return world_size_; }
  // Whether this task leads: writes checkpoints, summaries and the saved model.
  bool is_chief() const { return is_chief_; }
  // Whether this process trains alone (no TF_CONFIG, or a cluster of one training task).
  bool alone() const { return world_size_ == 1 && rank_ == 0; }
  // The task that leads the cluster (chief, else master, else worker 0).
  const Task& chief() const { return chief_; }
  // Every task of the cluster, this one included, training tasks in rank order first, then the
  // others (ps, evaluator) by type and index. Just this task alone.
  const std::vector<Task>& tasks() const { return tasks_; }
  // The tasks other than this one.
  std::vector<Task> peers() const;
  // The number of tasks of `type` ("ps").
  int NumTasks(const std::string& type) const;
  // The TF_CONFIG text this was read from ("" alone).
  const std::string& tf_config() const { return tf_config_; }

 private:
  Cluster() = default;

  Task task_;
  Task chief_;
  int rank_ = 0;
  int world_size_ = 1;
  bool is_chief_ = true;
  std::vector<Task> tasks_;
  std::string tf_config_;
};

}  // namespace cohort
