// The `checkpoint` file: which checkpoint in a directory is the newest.
//
// It is TensorFlow's CheckpointState in text-proto form, so TF-style pollers (a sidecar evaluator
// calling tf.train.latest_checkpoint) find Cohort's checkpoints too:
//   model_checkpoint_path: "ckpt-3"
//   all_model_checkpoint_paths: "ckpt-2"
//   all_model_checkpoint_paths: "ckpt-3"
// Paths are relative to the directory. The file is replaced atomically, after the checkpoint it
// names has been written, so it never names a file that is not complete.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "base/status.h"

namespace cohort::train {

inline constexpr char kCheckpointStateFile[] = "checkpoint";

// Writes <dir>/checkpoint naming `all` (oldest first), the last of which is the newest.
Status WriteCheckpointState(const std::string& dir, const std::vector<std::string>& all);

// The newest checkpoint's name from <dir>/checkpoint; nullopt when there is no such file.
// InvalidArgument when the file exists but names nothing.
StatusOr<std::optional<std::string>> ReadLatestCheckpoint(const std::string& dir);

// Every checkpoint <dir>/checkpoint lists (all_model_checkpoint_paths), oldest first; empty when
// there is no such file.
StatusOr<std::vector<std::string>> ReadCheckpointState(const std::string& dir);

}  // namespace cohort::train
