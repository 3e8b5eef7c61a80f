// ModelManifest: the JSON file that describes a saved model (manifest.json).
//
// A saved model directory holds the weights in libtorch's format and this manifest, which says
// how to rebuild and use them:
//   {
//     "format": "cohort-saved-model", "format_version": 2,
//     "model": "cnn", "weights": "weights.pt",
//     "files": [{"file": "weights.pt", "size": 1234567, "sha256": "9f86d0..."}],
//     "input_shape": [1, 28, 28],            // channels, rows, cols; pixels scaled to [0, 1]
//     "classes": ["T-shirt/top", ...],       // class names by label
//     "metrics": {"test_accuracy": 0.8912, "test_loss": 0.3011},
//     "training": {"epochs": 3, "steps_per_epoch": 312, "per_worker_batch": 64,
//                  "num_workers": 3, "global_batch": 192, "global_steps": 936,
//                  "optimizer": "adam", "learning_rate": 0.001, "seed": 42,
//                  "data_dir": "/usr/share/datasets/fashion-mnist"},
//     "created_at": "2024-05-01T12:00:00Z"
//   }
//
// "files" lists every file of the model with its size and SHA-256 (base/checksum.h, the same
// shape as a checkpoint's manifest), recorded by WriteManifest from the files on disk; a reader
// verifies a file against it before loading it (SavedModel::Load), so flipped bytes are named
// ("checksum mismatch: expected ..., found ...") and never loaded. Version 1 manifests, written
// before checksums, are refused with a message saying so: their weights cannot be verified.
// Metrics must be finite numbers (a NaN would be written as null, which no reader takes), and
// WriteManifest refuses a manifest whose metrics are not.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "base/checksum.h"
#include "base/status.h"

namespace cohort::train {

inline constexpr char kManifestFile[] = "manifest.json";

struct TrainingConfig {
  int epochs = 0;
  int64_t steps_per_epoch = 0;
  int64_t per_worker_batch = 0;
  int num_workers = 1;
  int64_t global_batch = 0;
  int64_t global_steps = 0;
  std::string optimizer;
  double learning_rate = 0;
  uint64_t seed = 0;
  std::string data_dir;

  bool operator==(const TrainingConfig&) const = default;
};

struct ModelManifest {
  std::string model;
  std::string weights = "weights.pt";  // relative to the manifest's directory
  // Every file of the model (the weights first) with its checksum; WriteManifest fills it in when
  // it is empty.
  std::vector<FileChecksum> files;
  std::vector<int64_t> input_shape;  // image models: {channels, rows, cols}; others: their own
  std::vector<std::string> classes;
  std::map<std::string, double> metrics;
  TrainingConfig training;
  std::string created_at;

  bool operator==(const ModelManifest&) const = default;
};

std::string ManifestToJson(const ModelManifest& manifest);

// Parses manifest JSON; errors name `origin` (usually the file) and the field.
StatusOr<ModelManifest> ParseManifest(const std::string& json, const std::string& origin);

// <dir>/manifest.json, written atomically / read back. Write it after the files it lists: with
// `files` empty, it records <dir>/<weights> as it is on disk. InvalidArgument, and nothing
// written, when a metric is not a finite number.
Status WriteManifest(const std::string& dir, const ModelManifest& manifest);
StatusOr<ModelManifest> ReadManifest(const std::string& dir);

// The bytes of the model's weights file, verified against the manifest's record of it (read from
// `dir`); the error names the file, the expected and the found checksum.
StatusOr<std::string> ReadVerifiedWeights(const std::string& dir, const ModelManifest& manifest);

}  // namespace cohort::train
