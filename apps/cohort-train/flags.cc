#include "flags.h"

#include <CLI/CLI.hpp>

#include "train/gradient_compression.h"
#include "train/program/flag_checks.h"
#include "train/program/process.h"

namespace cohort::train::cli {

using namespace program;

namespace {

// Whether the command line asks for --model=wide_deep, in either spelling.
bool AsksForMovedWideDeep(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == std::string("--model=") + kMovedWideDeepModel) return true;
    if (arg == "--model" && i + 1 < argc && argv[i + 1] == std::string(kMovedWideDeepModel)) {
      return true;
    }
  }
  return false;
}

}  // namespace

std::optional<int> ParseFlags(int argc, char** argv, const std::vector<std::string>& model_names,
                              Flags* flags_out) {
  CLI::App app{
      "cohort-train: train an image classifier on MNIST-format data (Fashion-MNIST by default), "
      "alone or as one worker of a MultiWorkerMirrored TFJob. TF_CONFIG says who is in the "
      "cluster and who this process is; without it, training runs in this process alone.",
      "cohort-train"};
  app.footer(
      "Distributed training: each worker trains on its shard of every global batch (global batch "
      "= per_worker_batch x workers); gradients are averaged by all-reduce while backward runs; "
      "the chief (chief:0, else worker:0) writes backups, checkpoints and the saved model, which "
      "other workers do not write; their summaries go to <dir>/workertemp_<index>, removed at "
      "the end. --checkpoint_path, --saved_model_path, --tensorboard_dir, --data_dir and "
      "--model_path "
      "also take object storage prefixes (s3://bucket/dir, gs://bucket/dir; docs/storage.md).\n"
      "Parameter-server training (a cluster with ps tasks) is the taxi example's program, "
      "taxi-train (examples/taxi).\n"
      "Environment: TF_CONFIG (cluster and task), COHORT_JOB_SECRET (authenticates peers), "
      "COHORT_JOB_NAME (optional), COHORT_SAME_HOST_PATH (--same_host_path), COHORT_ZERO_SKIPPING "
      "(--zero_skipping).\n"
      "Exit status: 0 done; 1 permanent failure (data, TF_CONFIG, files, no backup that verifies, "
      "a non-finite step, a cluster spec that differs between tasks, a wrong job secret); 2 bad "
      "flags; 3 an I/O "
      "error (a full disk: the file is named), permanent too; 138 a "
      "peer died or stopped answering: restart the worker and it resumes from --checkpoint_path.");
  Flags& flags = *flags_out;
  app.add_option("--epochs", flags.epochs, "number of epochs")
      ->capture_default_str()
      ->check(IntegerAtLeast(1));
  app.add_option("--steps_per_epoch", flags.steps_per_epoch,
                 "global steps per epoch; 0 = one pass over the training split")
      ->capture_default_str()
      ->check(IntegerAtLeast(0));
  app.add_option("--per_worker_batch", flags.per_worker_batch, "samples per worker per step")
      ->capture_default_str()
      ->check(IntegerAtLeast(1));
  app.add_option("--saved_model_path", flags.saved_model_path,
                 "directory or object storage prefix (s3://bucket/dir, gs://bucket/dir) for the "
                 "trained model (weights.pt + manifest.json; in a bucket the manifest, written "
                 "last, commits it); empty: not saved")
      ->check(FileSystemPathOrStorageUrl());
  app.add_option("--checkpoint_path", flags.checkpoint_path,
                 "BackupAndRestore directory or object storage prefix (s3://bucket/dir, "
                 "gs://bucket/dir; docs/storage.md): back up every epoch and resume from it after "
                 "a restart; deleted when training completes. Empty: no backups")
      ->check(FileSystemPathOrStorageUrl());
  app.add_option("--backup_every_steps", flags.backup_every_steps,
                 "also back up every N global steps (0: at epoch ends only)")
      ->capture_default_str()
      ->check(IntegerAtLeast(0));
  app.add_option("--backups_to_keep", flags.backups_to_keep,
                 "how many of the newest backups to keep; a restart restores the newest whose "
                 "checksums verify and says which it skipped")
      ->capture_default_str()
      ->check(IntegerAtLeast(1));
  app.add_option("--non_finite", flags.non_finite,
                 "what a step with a NaN or infinite loss or gradient norm does (it is never "
                 "applied): stop, exit 1 naming the step; rollback, go back to the newest good "
                 "backup with half the learning rate, at most --max_rollbacks times, then stop")
      ->capture_default_str()
      ->check(CLI::IsMember({"stop", "rollback"}));
  app.add_option("--max_rollbacks", flags.max_rollbacks,
                 "with --non_finite=rollback: the most rollbacks before the run stops")
      ->capture_default_str()
      ->check(IntegerAtLeast(0));
  app.add_option("--model_checkpoint_path", flags.model_checkpoint_path,
                 "ModelCheckpoint directory: keep the weights of every epoch (ckpt-<epoch>.pt)")
      ->check(FileSystemPath());
  app.add_option("--model", flags.model, "model architecture")
      ->capture_default_str()
      ->check(CLI::IsMember(model_names));
  app.add_option("--data_dir", flags.data_dir,
                 "directory or object storage prefix (s3://, gs://) with "
                 "{train,t10k}-{images-idx3,labels-idx1}-ubyte[.gz]")
      ->capture_default_str()
      ->check(FileSystemPathOrStorageUrl());
  app.add_option("--learning_rate", flags.learning_rate,
                 "learning rate (default: 0.001 for adam, 0.01 for sgd)")
      ->check(PositiveReal());
  app.add_option("--optimizer", flags.optimizer, "optimizer")
      ->capture_default_str()
      ->check(CLI::IsMember({"sgd", "adam"}));
  app.add_option("--tensorboard_dir", flags.tensorboard_dir,
                 "write TensorBoard event files to <dir>/train and <dir>/validation (default: "
                 "the directory job control names in $COHORT_SUMMARY_DIR, if any); an object "
                 "storage prefix (s3://, gs://) gets closed event files, one every "
                 "--tensorboard_upload_s and the last at the end")
      ->check(FileSystemPathOrStorageUrl());
  app.add_option("--tensorboard_upload_s", flags.tensorboard_upload_s,
                 "with --tensorboard_dir in a bucket: close the event file and upload it whole "
                 "at most every S seconds (objects cannot be appended to; TensorBoard reads the "
                 "series as one run)")
      ->capture_default_str()
      ->check(Real([](double value) { return value >= 1; }, "a number of seconds >= 1", "SECONDS"));
  app.add_option("--tensorboard_update_steps", flags.tensorboard_update_steps,
                 "also write the batch figures (batch_loss, batch_accuracy, "
                 "batch_samples_per_second, batch_step_seconds, batch_allreduce_wait_seconds) "
                 "every N global steps (0: not by steps)")
      ->capture_default_str()
      ->check(IntegerAtLeast(0));
  app.add_option("--tensorboard_update_s", flags.tensorboard_update_s,
                 "write the batch figures at most every S seconds within an epoch, flushed at "
                 "once so that the dashboard's curves grow (0: not by time)")
      ->capture_default_str()
      ->check(Real([](double value) { return value >= 0; }, "a number of seconds >= 0", "SECONDS"));
  app.add_option("--progress_every_s", flags.progress_every_s,
                 "when the output is not a terminal (a replica's log), print a progress line "
                 "(step, loss, samples/s, step time, all-reduce wait, ETA) every S seconds "
                 "within an epoch (0: one line per epoch only)")
      ->capture_default_str()
      ->check(Real([](double value) { return value >= 0; }, "a number of seconds >= 0", "SECONDS"));
  app.add_option("--seed", flags.seed, "seed for weights and the data order")
      ->capture_default_str();
  app.add_option("--threads", flags.threads,
                 "libtorch and OpenBLAS threads (0: hardware threads / workers on this host)")
      ->capture_default_str()
      ->check(IntegerAtLeast(0));
  app.add_option("--gradient_bucket_mb", flags.gradient_bucket_mb,
                 "gradient all-reduce bucket size in MiB")
      ->capture_default_str()
      ->check(PositiveReal());
  app.add_option("--startup_timeout_s", flags.startup_timeout_s,
                 "how long to wait for every worker to join")
      ->capture_default_str()
      ->check(PositiveReal());
  app.add_option("--peer_timeout_s", flags.peer_timeout_s,
                 "MultiWorkerMirrored: how long a silent worker is given before it counts as dead "
                 "and the others exit to be restarted (at least 3 s)")
      ->capture_default_str()
      ->check(AtLeastThreeSeconds());
  app.add_option("--same_host_path", flags.same_host_path,
                 "MultiWorkerMirrored: on, workers on one host move large collectives through "
                 "each other's memory (when the kernel allows); off, everything goes over TCP, "
                 "as between hosts")
      ->capture_default_str()
      ->envname("COHORT_SAME_HOST_PATH")
      ->check(CLI::IsMember({"on", "off"}));
  app.add_option("--zero_skipping", flags.zero_skipping,
                 "MultiWorkerMirrored: on, all-reduce messages to workers on other hosts leave out "
                 "the exact zeros of gradients that are at least one eighth zeros (lossless: the "
                 "same results bit for bit); the same on every worker")
      ->capture_default_str()
      ->envname("COHORT_ZERO_SKIPPING")
      ->check(CLI::IsMember({"on", "off"}));
  app.add_option("--gradient_compression", flags.gradient_compression,
                 "MultiWorkerMirrored: none, bf16 or fp16; with bf16 or fp16 each gradient bucket "
                 "is rounded to 16 bits before the all-reduce and widened back after it (half the "
                 "bytes on the wire, 16-bit precision in the averaged gradient; fp16 overflows "
                 "past 65504)")
      ->capture_default_str()
      ->check(CLI::Validator(
          [](std::string& value) -> std::string {
            if (ParseGradientCompression(value).ok()) return std::string();
            return "expected none, bf16 or fp16, got \"" + value.substr(0, 64) + "\"";
          },
          "none|bf16|fp16", "GradientCompression"));
  app.add_option("--synchronization", flags.synchronization,
                 "MultiWorkerMirrored: how the workers keep their models together. allreduce: "
                 "every step, the exact average of the gradients; powersgd: every step, a "
                 "low-rank average of each weight matrix's gradient with error feedback "
                 "(--powersgd_rank, --powersgd_start_step, --powersgd_warm_start; biases and other "
                 "vectors exact), (rows + cols) x rank floats instead of rows x cols; local_sgd: "
                 "each worker steps alone and every --local_sgd_steps steps (and at each epoch's "
                 "end) the workers average their parameters' change and apply it with an outer "
                 "Nesterov SGD step (--outer_learning_rate, --outer_momentum), as DiLoCo does. "
                 "powersgd and local_sgd need --gradient_compression=none")
      ->capture_default_str()
      ->check(CLI::IsMember({"allreduce", "powersgd", "local_sgd"}));
  app.add_option("--powersgd_rank", flags.powersgd_rank,
                 "powersgd: the rank of each gradient matrix's approximation (1 to 64)")
      ->capture_default_str()
      ->check(CLI::Range(1, 64));
  app.add_option("--powersgd_start_step", flags.powersgd_start_step,
                 "powersgd: global steps averaged uncompressed before compression starts")
      ->capture_default_str()
      ->check(IntegerAtLeast(0));
  app.add_option("--powersgd_warm_start", flags.powersgd_warm_start,
                 "powersgd: on, each step starts its power iteration from the last step's Q; "
                 "off, from a fresh random Q")
      ->capture_default_str()
      ->check(CLI::IsMember({"on", "off"}));
  app.add_option("--local_sgd_steps", flags.local_sgd_steps,
                 "local_sgd: H, the local steps between synchronizations (1: every step)")
      ->capture_default_str()
      ->check(IntegerAtLeast(1));
  app.add_option("--outer_learning_rate", flags.outer_learning_rate,
                 "local_sgd: the outer step's learning rate on the averaged parameter change "
                 "(DiLoCo's 0.7; 1 with --outer_momentum=0 is plain parameter averaging)")
      ->capture_default_str()
      ->check(Real([](double value) { return value > 0 && value <= 10; }, "a number in (0, 10]",
                   "RATE"));
  app.add_option("--outer_momentum", flags.outer_momentum,
                 "local_sgd: the outer step's Nesterov momentum, in [0, 1)")
      ->capture_default_str()
      ->check(Real([](double value) { return value >= 0 && value < 1; }, "a number in [0, 1)",
                   "MOMENTUM"));
  app.add_flag("--report_gradient_zeros", flags.report_gradient_zeros,
               "print, at each epoch's end, the fraction of exact zeros in the gradients the "
               "optimizer applied (all values and the largest parameter's; alone, the worker's "
               "own gradient: what --zero_skipping leaves out)");
  app.add_flag("--evaluate", flags.evaluate,
               "evaluate the saved model at --model_path on the test split instead of training");
  app.add_option("--model_path", flags.model_path,
                 "saved model directory or object storage prefix (s3://, gs://) for --evaluate")
      ->check(FileSystemPathOrStorageUrl());

  // Before parsing, so that the taxi model's own flags are not refused as unknown first.
  if (AsksForMovedWideDeep(argc, argv)) {
    PrintError(std::string("--model=") + kMovedWideDeepModel + ": " + kMovedToTaxiTrain);
    return kExitUsage;
  }
  if (std::optional<int> exit_code = ParseCommandLine(&app, argc, argv)) return exit_code;
  if (std::optional<int> exit_code = CheckEvaluateFlags(flags.evaluate, flags.model_path)) {
    return exit_code;
  }
  flags.data_dir_given = app.count("--data_dir") > 0;
  return std::nullopt;
}

}  // namespace cohort::train::cli
