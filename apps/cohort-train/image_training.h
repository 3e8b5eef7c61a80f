// cohort-train's image half: trains an image classifier on MNIST-format data, alone or as one
// worker of a MultiWorkerMirrored job, and evaluates a saved one.
//
// Training reads both splits of --data_dir, connects to the other workers TF_CONFIG names, fits
// the --model classifier with the callbacks the flags ask for (BackupAndRestore, ModelCheckpoint,
// TensorBoard, progress), evaluates it on the test split and saves it. Its output lines:
//   cohort-train: <who>; model <m>; global batch <g> (<b> x <n>); <e> epochs of <s> steps; ...
//     (<who> of a worker of several ends "; collectives over <path>": TCP, or same-host memory)
//   <progress lines>
//   test accuracy 0.XXXX
//   saved model: <dir> (evaluate: ...)          (chief, with --saved_model_path)
//   TensorBoard logs: <dir> (tensorboard ...)   (chief, with --tensorboard_dir)
// Failures end the process through Fail (train/program/process.h).
#pragma once

#include <string>

#include "cluster/tf_config.h"
#include "flags.h"
#include "train/compute_threads.h"

namespace cohort::train::cli {

// Trains as this process's TF_CONFIG task (`config`), with `threads` compute threads on `blas`
// (for the first output line). Returns kExitOk.
int TrainImageClassifier(const Flags& flags, const cluster::TfConfig& config, int threads,
                         const BlasLibrary& blas);

// Evaluates the image classifier saved at `model_path` on the test split of `data_dir` and prints
// "model <path> (<name>) on <dir>: <n> test samples", "test loss ..." and "test accuracy ...".
void EvaluateImageModel(const std::string& model_path, const std::string& data_dir);

}  // namespace cohort::train::cli
