// CheckpointEvaluator: the evaluator side-car of a parameter-server job (TensorFlow's
// "evaluator" task, which Estimators ran beside the training cluster).
//
// It trains nothing and talks to no server: it watches the checkpoint directory, and whenever a
// newer whole checkpoint appears (one whose manifest the chief has written, ps/checkpoint.h) it
// reads every shard from disk, evaluates the model (model_evaluation.h) on the eval split, prints
// "eval at global step N: auc 0.9012 loss 0.3120" (every figure of the evaluation) and records
//   - a TensorBoard scalar per figure at the checkpoint's global step, in <tensorboard_dir>/eval;
//   - <checkpoint_dir>/eval/metrics.json: the latest figures, the number of examples, the
//     checkpoint's manifest and every evaluation so far (global_step and the figures).
// When several checkpoints arrived during one evaluation, only the newest is evaluated, as
// TensorFlow's evaluator does: it follows training rather than queueing behind it.
//
// It exits after evaluating the final checkpoint (the step the chief of this run writes into
// kFinalCheckpointFile), and fails, saying what it waited for, when no new checkpoint arrives
// within `idle_timeout`. Asked to stop (`stop_requested`: the job has ended and its replicas get
// SIGTERM), it finishes the evaluation under way and evaluates the newest whole checkpoint if it
// has not yet, then returns: the chief may end the job before the evaluator has read its last
// checkpoint, and that checkpoint is the one whose figures matter.
#pragma once

#include <chrono>
#include <functional>
#include <string>

#include "base/status.h"
#include "train/parameter_server/model_evaluation.h"
#include "train/parameter_server/parameter_server_model.h"

namespace cohort::train {

struct CheckpointEvaluatorOptions {
  std::string checkpoint_dir;
  std::string tensorboard_dir;  // empty: no event files
  std::chrono::milliseconds poll_interval{500};
  std::chrono::milliseconds idle_timeout{std::chrono::minutes(30)};
  int64_t eval_batch = 4096;
  std::string run_identity;              // RunIdentity of this run's job secret
  std::function<bool()> stop_requested;  // optional
  std::function<void(const std::string&)> print;
};

// Evaluates checkpoints until the final one (or until asked to stop); returns the last evaluation.
// Asked to stop before any checkpoint was whole, it returns FailedPrecondition.
StatusOr<Evaluation> RunCheckpointEvaluator(const CheckpointEvaluatorOptions& options,
                                            const ParameterServerModel& model,
                                            const ExampleSource& eval);

}  // namespace cohort::train
