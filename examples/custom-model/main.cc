// custom-model: a model of your own, trained by Cohort's public API. A small residual CNN with
// batch norm learns Fashion-MNIST, alone (no TF_CONFIG) or as one worker of a TFJob
// (tfjob.yaml: 3 workers), backed up every 100 steps so that a killed worker costs little.
//
//   custom-model [--epochs=N] [--steps_per_epoch=N] [--data_dir=DIR] [--work_dir=DIR]
#include <cohort/callbacks.h>
#include <cohort/cluster.h>
#include <cohort/data.h>
#include <cohort/fit.h>
#include <cohort/status.h>
#include <cohort/strategy.h>
#include <torch/torch.h>

#include <cstdio>
#include <string>

using namespace torch::nn;

Conv2d Conv3x3(int64_t in, int64_t out, int64_t stride) {
  return Conv2d(Conv2dOptions(in, out, 3).stride(stride).padding(1).bias(false));
}

// Two 3x3 convolutions with batch norm, added to the block's input.
struct ResidualBlockImpl : Module {
  explicit ResidualBlockImpl(int64_t channels)
      : conv1(register_module("conv1", Conv3x3(channels, channels, 1))),
        norm1(register_module("norm1", BatchNorm2d(channels))),
        conv2(register_module("conv2", Conv3x3(channels, channels, 1))),
        norm2(register_module("norm2", BatchNorm2d(channels))) {}
  torch::Tensor forward(torch::Tensor x) {
    return torch::relu(x + norm2(conv2(torch::relu(norm1(conv1(x))))));
  }
  Conv2d conv1;
  BatchNorm2d norm1;
  Conv2d conv2;
  BatchNorm2d norm2;
};
TORCH_MODULE(ResidualBlock);

Sequential ResNet() {
  return Sequential(Conv3x3(1, 24, 1), BatchNorm2d(24), ReLU(), MaxPool2d(2),        // 24 x 14 x 14
                    ResidualBlock(24), Conv3x3(24, 48, 2), BatchNorm2d(48), ReLU(),  // 48 x 7 x 7
                    ResidualBlock(48), Flatten(), Dropout(0.3), Linear(48 * 7 * 7, 10));
}

// "--name=value" from the command line, or `fallback`.
std::string Flag(int argc, char** argv, const std::string& name, const std::string& fallback) {
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg.rfind("--" + name + "=", 0) == 0) return arg.substr(name.size() + 3);
  }
  return fallback;
}

// Refuses any other argument (--help, a misspelt flag), which Flag would silently ignore.
void CheckFlags(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const std::string name = arg.substr(0, arg.find('=') + 1);
    if (name != "--epochs=" && name != "--steps_per_epoch=" && name != "--data_dir=" &&
        name != "--work_dir=") {
      throw cohort::Error(
          cohort::ErrorCode::kInvalidArgument,
          "unknown argument " + std::string(argv[i]) + "; usage: custom-model " +
              "[--epochs=N] [--steps_per_epoch=N] [--data_dir=DIR] [--work_dir=DIR]");
    }
  }
}

int main(int argc, char** argv) {
  return cohort::Main([&] {
    CheckFlags(argc, argv);
    const std::string data_dir = Flag(argc, argv, "data_dir", "/usr/share/datasets/fashion-mnist");
    const std::string work_dir = Flag(argc, argv, "work_dir", "/tmp/cohort-custom-model");
    cohort::MultiWorkerMirrored strategy(cohort::Cluster::FromEnvironment());
    std::printf("custom-model: %s\n", strategy.Describe().c_str());
    const cohort::TensorSource train = cohort::LoadMnist(data_dir, "train");
    const cohort::TensorSource test = cohort::LoadMnist(data_dir, "test");

    Sequential net = ResNet();
    torch::optim::Adam optimizer(net->parameters(), 1e-3);
    cohort::FitOptions options;
    options.epochs = std::stoi(Flag(argc, argv, "epochs", "6"));
    options.steps_per_epoch = std::stoll(Flag(argc, argv, "steps_per_epoch", "0"));  // 0: all data
    options.per_worker_batch = 64;
    options.metrics = {cohort::Accuracy()};
    options.model_name = "fashion-resnet";
    options.optimizer_name = "adam";
    options.saved_model_dir = work_dir + "/model";
    options.callbacks = {cohort::BackupAndRestore(work_dir + "/backup", /*save_every_steps=*/100),
                         cohort::TensorBoard(work_dir + "/logs", /*update_every_steps=*/20),
                         cohort::Progress()};
    const cohort::FitResult result =
        cohort::Fit(strategy, net, optimizer, train, test, cohort::CrossEntropyLoss(), options);
    std::printf("test accuracy %.4f\n", result.metrics.at("accuracy"));
    if (strategy.is_chief()) std::printf("saved model: %s\n", options.saved_model_dir.c_str());
  });
}
