// cohort/parameter_server.h: parameter-server training of any torch::nn::Module, TensorFlow's
// ParameterServerStrategy.
//
// The module's variables live on the cluster's ps tasks, each holding a shard of them; the chief
// and the workers each train on their own share of the data, pulling the values a step needs
// before it and pushing its gradients after it. The optimizer runs on the servers, where the
// variables are. Every task of the TFJob (chief, workers, ps, evaluator) runs the same program,
// and Fit does what the task's role asks:
//
//   cohort::Cluster cluster = cohort::Cluster::FromEnvironment();
//   cohort::ParameterServer strategy(cluster);            // async; options.sync for sync
//   Net net;                                              // may hold torch::nn::Embedding
//   torch::optim::Adagrad optimizer(net->parameters(), 0.05);
//   cohort::FitOptions options;                           // fit.h
//   options.callbacks = {cohort::BackupAndRestore("/tmp/job/backup")};
//   options.saved_model_dir = "/tmp/job/model";
//   cohort::Fit(strategy, net, optimizer, train, test, cohort::CrossEntropyLoss(), options);
//
// What Fit does, by role:
//   ps         serves its shard of the variables until the chief ends the job (and `linger`
//              more, for the workers' last steps), then returns a
//              FitResult with `served` set and no figures (as a TensorFlow ps task's
//              server.join(), except that it returns, so the program ends normally). A ps task
//              restarted after a failure restores its shard from the newest checkpoint in
//              BackupAndRestore's directory.
//   chief      creates the variables on the servers with its module's values, then trains like a
//              worker; checkpoints the servers (every shard, written by its server) at every
//              epoch end, or every `save_every_steps` of BackupAndRestore, into <backup_dir>/ps;
//              at the end evaluates the final model on the validation source, pulls it into its
//              module, saves it into saved_model_dir (weights.pt: torch::load it into the module;
//              manifest.json) and ends the job: every ps task returns.
//   worker     waits until the chief has created the variables (startup_timeout), then loops:
//              pull the dense variables and the embedding rows its batch uses, forward and
//              backward, push the gradients (async: applied on arrival; sync: averaged over the
//              training tasks, one step at a time), until the job's global step reaches epochs x
//              the training source's size / per_worker_batch (sync: / training tasks). Example i
//              of the training source belongs to training task i mod tasks. A worker restarted
//              after a failure continues from where the job is.
//   evaluator  trains nothing: follows the chief's checkpoints in <backup_dir>/ps, evaluates each
//              new one on the validation source (printing "eval at global step N: loss ..."; the
//              figures also go to <backup_dir>/ps/eval/metrics.json and, with a TensorBoard
//              callback, to <log_dir>/eval), and returns the final checkpoint's figures. It takes
//              SIGTERM (the job has ended) as "evaluate the newest checkpoint and return". It
//              needs a BackupAndRestore callback (the checkpoints it follows).
//
// Sparse embeddings: every torch::nn::Embedding of the module (named by its parameter,
// "wide.weight") is a table on the servers, row i on ps i mod ps tasks, and a step pulls and
// pushes only the rows its batch looks up, as Keras does with IndexedSlices. Fit finds those rows
// by running the step's forward and backward once more with the embeddings only (libtorch has no
// forward hooks). A table's rows start uniform in [-embedding_init_scale, embedding_init_scale]
// (Keras' default embedding initializer), drawn by the servers, not the module's initial values:
// the servers create a row when it is first used. Every other parameter is a dense variable,
// pulled whole every step and sharded over the servers by rows when large.
//
// The optimizer: Fit reads the kind and settings of the torch::optim optimizer it is given and
// the servers apply the same update: SGD (no momentum, dampening, nesterov or weight decay),
// Adagrad (no lr_decay or weight decay) and Adam (no amsgrad or weight decay); anything else is a
// kInvalidArgument naming it. The optimizer object itself never steps (so its state is empty);
// its learning rate is read once. ParameterServerOptions::optimizer_for gives parts of the module
// another update, FTRL among them (the linear part of a wide & deep model), and binary_auc adds
// the AUC to a binary classifier's evaluations.
//
// Callbacks: BackupAndRestore as above (its directory must be given to every task: ps tasks
// restore from it, the evaluator follows it); ModelCheckpoint writes <dir>/ckpt-<epoch>.pt (the
// chief pulls the whole model at each epoch end, every embedding row, which the servers then
// hold; save_best_only is refused: no per-epoch validation runs); TensorBoard writes the training
// loss and metrics every update_every_steps (100 when 0) into <log_dir>/train; Progress prints the
// chief's and workers' step lines. FitOptions' steps_per_epoch must be 0 (an epoch is one pass over
// the data).
//
// Failures: a ps that stops answering is retried for `retry_timeout`, then Fit throws a
// retryable cohort::Error naming it (cohort::Main returns 138: the task is restarted and
// continues where the job is).
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "cohort/cluster.h"
#include "cohort/fit.h"

namespace cohort {

namespace internal {
class ParameterServerAccess;
}

// An update the parameter servers apply, for ParameterServerOptions::optimizer_for; the formulas
// are TensorFlow's kernels with Keras' defaults (SGD, Adagrad, Adam and FTRL, which libtorch does
// not have and the linear part of a wide & deep model wants).
struct ServerOptimizer {
  enum class Kind { kSgd, kAdagrad, kAdam, kFtrl };
  Kind kind = Kind::kSgd;
  double learning_rate = 0.01;
  double epsilon = 1e-7;                   // Adagrad, Adam
  double initial_accumulator_value = 0.1;  // Adagrad, FTRL
  double beta1 = 0.9;                      // Adam
  double beta2 = 0.999;                    // Adam
  double learning_rate_power = -0.5;       // FTRL
  double l1 = 0;                           // FTRL
  double l2 = 0;                           // FTRL
};

struct ParameterServerOptions {
  // Sync training: each step averages one gradient from every training task.
  bool sync = false;
  // Sync: how long a ps waits, from the first gradient of a step, for the missing ones before it
  // applies what arrived.
  std::chrono::milliseconds sync_timeout = std::chrono::seconds(30);
  // Async: keeps each worker at most this many steps ahead of the slowest (-1: unbounded).
  int64_t max_staleness = -1;
  // How long a worker waits for the chief to create the variables.
  std::chrono::milliseconds startup_timeout = std::chrono::minutes(5);
  // How long an unreachable ps is retried before the call fails, naming it.
  std::chrono::milliseconds retry_timeout = std::chrono::minutes(1);
  // How long a request waits for a ps's answer (sync: must exceed sync_timeout).
  std::chrono::milliseconds request_timeout = std::chrono::minutes(2);
  // How long a ps serves before giving up on the chief ending the job.
  std::chrono::milliseconds serve_timeout = std::chrono::hours(24);
  // How long a ps goes on answering after the chief ended the job, so that a worker in the middle
  // of its last step pulls the final global step and ends cleanly instead of finding no server.
  std::chrono::milliseconds linger = std::chrono::seconds(3);
  // How long the evaluator waits for a new checkpoint.
  std::chrono::milliseconds evaluator_timeout = std::chrono::minutes(30);
  // Parameters whose name begins with a key ("wide." for the parameters of a submodule "wide")
  // are updated with that optimizer instead of the one Fit is given; the longest key that
  // matches wins. A key that matches no parameter is a kInvalidArgument naming it.
  std::map<std::string, ServerOptimizer> optimizer_for;
  // A binary classifier: the module's output is the positive class's logit ([N] or [N, 1]) and
  // the targets are 0 or 1; evaluations then add "auc", the area under the ROC curve over the
  // whole validation source (which a per-batch Metric cannot compute).
  bool binary_auc = false;
  // Embedding rows start uniform in [-embedding_init_scale, embedding_init_scale].
  float embedding_init_scale = 0.05f;
  // Whether to set libtorch's compute threads to this task's share of the host's cores, as
  // StrategyOptions (strategy.h) does; 0: that share.
  bool set_compute_threads = true;
  int compute_threads = 0;
};

class ParameterServer {
 public:
  // Checks the cluster; connects to nothing yet (Fit does). Throws cohort::Error
  // (kInvalidArgument) when TF_CONFIG's cluster has no ps tasks (train alone or with
  // MultiWorkerMirrored) or no chief, master or worker, or for options out of range.
  explicit ParameterServer(const Cluster& cluster, const ParameterServerOptions& options = {});
  ~ParameterServer();
  ParameterServer(const ParameterServer&) = delete;
  ParameterServer& operator=(const ParameterServer&) = delete;

  const Cluster& cluster() const { return cluster_; }
  const ParameterServerOptions& options() const { return options_; }
  // Whether this task serves variables (a ps task).
  bool is_ps() const { return cluster_.task().type == "ps"; }
  // Whether this task evaluates checkpoints (an evaluator task).
  bool is_evaluator() const { return cluster_.task().type == "evaluator"; }
  bool is_chief() const { return cluster_.is_chief() && !is_evaluator(); }
  // The number of ps tasks.
  int num_ps() const { return cluster_.NumTasks("ps"); }
  // The number of training tasks (chief, master and workers).
  int num_workers() const;
  // One line for a program's log: "worker:1 of a parameter-server job (2 ps, 3 training tasks;
  // async)".
  std::string Describe() const;

 private:
  Cluster cluster_;
  ParameterServerOptions options_;
};

// Fit (fit.h) with parameter servers: what it does depends on this task's role (above). On the
// chief and the workers it trains `model` with the servers applying `optimizer`'s update; the
// chief's module holds the final values when it returns (the workers' hold the last values they
// pulled). The FitResult's figures are the chief's final evaluation and the evaluator's last one;
// a worker's has only global_steps. already_complete: this task trained no step (the servers had
// restored the last step from BackupAndRestore's directory). Collective: every task of the job
// calls it with the same options. Throws cohort::Error: a module without parameters, an unsupported
// optimizer or option (named), a training source with fewer samples per task than one batch, a ps
// that stays unreachable (retryable), an embedding lookup out of range (naming the step), a file
// that cannot be written.
FitResult Fit(ParameterServer& strategy, const Model& model, torch::optim::Optimizer& optimizer,
              const BatchSource& train, const BatchSource& validation, const LossFunction& loss,
              const FitOptions& options);

}  // namespace cohort
