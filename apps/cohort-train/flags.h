// cohort-train's command line: every flag, its help text and its checks, apart from running.
//
//   Flags flags;
//   if (std::optional<int> exit_code = ParseFlags(argc, argv, model_names, &flags)) {
//     return *exit_code;   // --help was printed (0), or a bad flag was named (2)
//   }
//
// The classic lab manifest's flags (--epochs --steps_per_epoch --per_worker_batch
// --saved_model_path --checkpoint_path) are accepted unchanged.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "train/data/image_dataset.h"

namespace cohort::train::cli {

// The wide & deep taxi model and parameter-server training were cohort-train's until they moved
// to the taxi example's own program; asking cohort-train for them says where they went.
inline constexpr char kMovedWideDeepModel[] = "wide_deep";
inline constexpr char kMovedToTaxiTrain[] =
    "the wide & deep taxi model and parameter-server training moved to the taxi example's own "
    "program, taxi-train (examples/taxi; built as build/examples/taxi/taxi-train), which takes "
    "the same flags";

struct Flags {
  int epochs = 3;
  int64_t steps_per_epoch = 0;
  int64_t per_worker_batch = 64;
  std::string saved_model_path;
  std::string checkpoint_path;
  int64_t backup_every_steps = 0;
  int backups_to_keep = 2;
  std::string non_finite = "stop";  // "stop" or "rollback" (TrainerOptions::NonFinitePolicy)
  int max_rollbacks = 3;
  std::string model_checkpoint_path;
  std::string model = "cnn";
  std::string data_dir = kDefaultDataDir;
  double learning_rate = 0;  // 0: the optimizer's default
  std::string optimizer = "adam";
  std::string tensorboard_dir;
  int64_t tensorboard_update_steps = 0;
  double tensorboard_update_s = 2;  // batch figures at most this often within an epoch (0: never)
  double tensorboard_upload_s =
      30;                        // --tensorboard_dir in a bucket: a closed event file this often
  double progress_every_s = 10;  // progress lines in a log (not a terminal) (0: none)
  uint64_t seed = 42;
  int threads = 0;  // 0: automatic
  double gradient_bucket_mb = 4;
  double startup_timeout_s = 300;
  double peer_timeout_s = 30;
  std::string same_host_path = "on";          // "on" or "off"
  std::string zero_skipping = "on";           // "on" or "off"
  std::string gradient_compression = "none";  // "none", "bf16" or "fp16" (gradient_compression.h)
  std::string synchronization = "allreduce";  // "allreduce", "powersgd" or "local_sgd" (trainer.h)
  int powersgd_rank = 2;
  int64_t powersgd_start_step = 10;
  std::string powersgd_warm_start = "on";  // "on" or "off"
  int64_t local_sgd_steps = 8;
  double outer_learning_rate = 0.7;
  double outer_momentum = 0.9;
  bool report_gradient_zeros = false;
  bool evaluate = false;
  std::string model_path;
  bool data_dir_given = false;  // --data_dir was on the command line (else the default above)
};

// Parses the command line into `flags`. Returns an exit code when the program should stop here:
// kExitOk after printing --help, kExitUsage after naming a bad flag, a bad value (with what was
// expected), --evaluate and --model_path given one without the other, or --model=wide_deep (the
// taxi model, which moved to taxi-train: the message says so). `model_names` are the values
// --model accepts.
std::optional<int> ParseFlags(int argc, char** argv, const std::vector<std::string>& model_names,
                              Flags* flags);

}  // namespace cohort::train::cli
