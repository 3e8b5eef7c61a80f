// cohort-train: trains an image classifier on MNIST-format data, alone or as one worker of a
// MultiWorkerMirrored job, driven by TF_CONFIG exactly like a TensorFlow Keras program.
// Parameter-server training (a cluster with ps tasks) is the taxi example's program, taxi-train
// (examples/taxi), built on the same library.
//
// The same binary is every replica of a TFJob: TF_CONFIG (and COHORT_JOB_SECRET) say who is in the
// cluster and who this process is; without TF_CONFIG it trains alone. The command line is parsed
// in flags.cc, training and evaluation run in image_training.cc, exit codes and failing are
// train/program/process.h's (shared with taxi-train).
#include <cstdio>
#include <optional>

#include "cluster/tf_config.h"
#include "flags.h"
#include "image_training.h"
#include "train/model_manifest.h"
#include "train/models.h"
#include "train/program/process.h"

namespace cohort::train::cli {

using namespace program;

namespace {

int Evaluate(const Flags& flags) {
  SetUpCompute(ComputeThreads(flags.threads, cluster::TfConfig{}));
  auto manifest = ReadManifest(flags.model_path);
  if (!manifest.ok()) Fail(manifest.status());
  if (manifest->model == kMovedWideDeepModel) {
    Fail(Status::InvalidArgument(flags.model_path + " holds a " + kMovedWideDeepModel +
                                 " model: " + kMovedToTaxiTrain));
  }
  // The data the model was trained on, unless --data_dir says otherwise.
  const std::string data_dir = flags.data_dir_given || manifest->training.data_dir.empty()
                                   ? flags.data_dir
                                   : manifest->training.data_dir;
  EvaluateImageModel(flags.model_path, data_dir);
  std::fflush(stdout);
  return kExitOk;
}

int Train(const Flags& flags) {
  auto config = cluster::TfConfigFromEnvironment();
  if (!config.ok()) Fail(config.status());
  if (config->cluster.NumTasks("ps") > 0 || config->task.type == "ps") {
    Fail(Status::InvalidArgument(
        "TF_CONFIG's cluster has ps tasks, so this is parameter-server training, which is the "
        "taxi example's program, taxi-train (examples/taxi); --model=" +
        flags.model + " trains with MultiWorkerMirrored, in a cluster without ps tasks"));
  }
  const int threads = ComputeThreads(flags.threads, *config);
  const BlasLibrary blas = SetUpCompute(threads);
  return TrainImageClassifier(flags, *config, threads, blas);
}

int Main(int argc, char** argv) {
  SetProgram({"cohort-train", "the latest backup or checkpoint"});
  Flags flags;
  if (std::optional<int> exit_code = ParseFlags(argc, argv, ModelNames(), &flags)) {
    return *exit_code;
  }
  return flags.evaluate ? Evaluate(flags) : Train(flags);
}

}  // namespace
}  // namespace cohort::train::cli

int main(int argc, char** argv) { return cohort::train::cli::Main(argc, argv); }
