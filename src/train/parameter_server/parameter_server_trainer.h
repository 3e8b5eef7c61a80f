// ParameterServerTrainer: a worker or the chief of a parameter-server job (TensorFlow's
// ParameterServerStrategy, as TF1 Estimators ran it on AI Platform) training any
// ParameterServerModel (parameter_server_model.h) on the examples of an ExampleSource.
//
// Every training task (the chief and each worker) loops on its own shard of the training split
// (example i belongs to task i mod tasks):
//   1. wait for the dense parameters, pulled in the background during the previous step;
//   2. stop once global_step (a variable on the servers) reaches the job's total;
//   3. encode its next batch, pull only the table rows the batch uses (the model's Lookups);
//   4. start pulling the next step's dense parameters (async mode: the pull overlaps the
//      computation, so a step reads values at most one push old, as TensorFlow's workers do);
//   5. the model's step (forward and backward); push dense gradients, per-row sparse gradients and
//      one increment of global_step; FinishStep (sync step or bounded staleness).
// Before the loop the chief (cluster::ChiefTask) creates the variables and tables with their
// initial values, and every other training task waits, for at most `model_ready_timeout`, until
// the chief's variables exist on every server (ParameterServerClient::WaitForVariables), so the
// model starts from the chief's values whatever the workers' seeds. A worker that is killed and
// restarted finds the model ready and continues from about where the job is: its position in its
// shard is global_step / tasks.
//
// The chief also: saves a checkpoint every `checkpoint_every_steps` global steps and at the end
// (each server writes its shard, then the manifest, ps/checkpoint.h), writes the training loss and
// the step's metrics to TensorBoard (<tensorboard_dir>/train), evaluates the final model on the
// eval split (model_evaluation.h), saves it (a checkpoint in the saved-model directory plus
// manifest.json with the figures as eval_<name>), marks the final checkpoint for the evaluator
// side-car, and tells the servers the job is over.
//
// Its own lines begin with `program_name` ("taxi-train: chief:0 starts at global step 0 of 2343
// (...)"); every `log_every_steps` local steps it prints "step N (global G/T): loss L, S steps/s",
// with ", <metric> V" for each metric the model's step names.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>

#include "base/status.h"
#include "cluster/tf_config.h"
#include "net/auth.h"
#include "train/parameter_server/model_evaluation.h"
#include "train/parameter_server/parameter_server_model.h"
#include "train/parameter_server/parameter_sources.h"
#include "train/run_identity.h"

namespace cohort::train {

// Written by the chief into the checkpoint directory after the final checkpoint's manifest: the
// global step of the last checkpoint there will be, and the run that wrote it. The evaluator exits
// once it has evaluated that step.
inline constexpr char kFinalCheckpointFile[] = "final_checkpoint";

// The step in `checkpoint_dir`'s kFinalCheckpointFile if run `run_identity` (run_identity.h: "" in
// open mode, where any marker counts) wrote it, else -1.
int64_t FinalCheckpointStep(const std::string& checkpoint_dir, const std::string& run_identity);

struct ParameterServerTrainingOptions {
  cluster::TfConfig config;
  std::string job_name;
  net::JobSecret secret;
  std::string program_name;               // begins the trainer's own lines (none when empty)
  std::string example_noun = "examples";  // what its lines call the examples ("trips")
  int epochs = 3;
  int64_t per_worker_batch = 256;
  bool sync = false;
  int64_t max_staleness = -1;          // async only; -1 unbounded
  int64_t checkpoint_every_steps = 0;  // 0: only at the end
  std::string checkpoint_dir;          // empty: no checkpoints
  std::string saved_model_dir;         // empty: not saved
  std::string tensorboard_dir;         // empty: no summaries
  std::string data_dir;                // recorded in the saved model
  int64_t eval_batch = 4096;
  std::chrono::milliseconds retry_timeout{60000};
  // How long a request to a ps waits for its answer; then the connection counts as failed and
  // retry_timeout begins. A ps behind a network partition sends nothing, not even a reset, so
  // this bounds how long a task waits before it notices. In sync mode a push is answered when its
  // step completes, so it must exceed the servers' sync timeout.
  std::chrono::milliseconds request_timeout{120000};
  // How long a worker waits for the chief to initialise the model.
  std::chrono::milliseconds model_ready_timeout{300000};
  int64_t log_every_steps = 100;
  std::function<void(const std::string&)> print;
  // Chief, optional: called with the servers' values once the job's global step has passed the
  // end of each epoch (1-based), the last one after the final checkpoint. A restarted chief does
  // not repeat the epochs that ended before it started.
  std::function<Status(ParameterSource& values, int epoch)> on_epoch_end;
  // Chief, optional: called with the servers' values and the final evaluation before the chief
  // ends the job (the servers stop serving right after).
  std::function<Status(ParameterSource& values, const Evaluation& evaluation)> before_shutdown;
};

struct ParameterServerTrainingResult {
  int64_t global_step = 0;
  int64_t local_steps = 0;
  bool is_chief = false;
  Evaluation evaluation;  // chief only
};

// Trains `model` as this task (a chief, master or worker of options.config) until the job's global
// step reaches epochs x training examples / per_worker_batch (sync: / training tasks). `eval` is
// used by the chief only.
StatusOr<ParameterServerTrainingResult> TrainWithParameterServers(
    const ParameterServerTrainingOptions& options, const ParameterServerModel& model,
    const ExampleSource& train, const ExampleSource& eval);

}  // namespace cohort::train
