// custom-loop: a training loop of your own on Cohort's low-level API. Every worker generates the
// same tabular regression data (y = w.x + sin(x0 * x1) + noise), takes its share of each global
// batch, and averages gradients with the other workers during backward; the chief starts everyone
// from its weights (its checkpoint, if a restarted run left one) and alone writes checkpoints.
//
//   custom-loop [--epochs=N] [--work_dir=DIR]
#include <cohort/cluster.h>
#include <cohort/collectives.h>
#include <cohort/data.h>
#include <cohort/status.h>
#include <cohort/strategy.h>
#include <torch/torch.h>

#include <cstdio>
#include <filesystem>
#include <string>

// The data set, the same on every worker: 8 features, one target.
cohort::TensorSource MakeData(int64_t samples, uint64_t seed) {
  torch::manual_seed(seed);
  const torch::Tensor x = torch::randn({samples, 8});
  const torch::Tensor w = torch::linspace(-1, 1, 8).unsqueeze(1);
  const torch::Tensor y = x.matmul(w) + torch::sin(x.select(1, 0) * x.select(1, 1)).unsqueeze(1) +
                          0.05 * torch::randn({samples, 1});
  return cohort::TensorSource(x, y);
}

std::string Flag(int argc, char** argv, const std::string& name, const std::string& fallback) {
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg.rfind("--" + name + "=", 0) == 0) return arg.substr(name.size() + 3);
  }
  return fallback;
}

int main(int argc, char** argv) {
  return cohort::Main([&] {
    const int epochs = std::stoi(Flag(argc, argv, "epochs", "20"));
    const std::string checkpoint =
        Flag(argc, argv, "work_dir", "/tmp/cohort-custom-loop") + "/model.pt";
    cohort::MultiWorkerMirrored strategy(cohort::Cluster::FromEnvironment());
    std::printf("custom-loop: %s\n", strategy.Describe().c_str());
    const cohort::TensorSource train = MakeData(8192, 1), test = MakeData(2048, 2);

    torch::nn::Sequential net(torch::nn::Linear(8, 64), torch::nn::ReLU(),
                              torch::nn::Linear(64, 64), torch::nn::ReLU(),
                              torch::nn::Linear(64, 1));
    torch::optim::Adam optimizer(net->parameters(), 3e-3);
    if (strategy.is_chief() && std::filesystem::exists(checkpoint)) {
      cohort::LoadModule(*net, checkpoint);
      std::printf("custom-loop: resuming from %s\n", checkpoint.c_str());
    }
    cohort::BroadcastFromChief(strategy, *net);  // everyone starts from the chief's weights
    cohort::GradientAllReduce all_reduce(strategy, *net);
    cohort::ShardedBatches batches(strategy, train, /*per_worker_batch=*/64, /*seed=*/7);

    for (int epoch = 0; epoch < epochs; ++epoch) {
      net->train();
      torch::Tensor loss_sum = torch::zeros({1}, torch::kFloat64);
      for (int64_t step = 0; step < batches.steps_per_epoch(); ++step) {
        const cohort::Batch batch = batches.Get(epoch, step);
        all_reduce.BeginStep();
        torch::Tensor loss = torch::mse_loss(net->forward(batch.inputs), batch.targets);
        loss.backward();
        all_reduce.FinishStep();  // every gradient is now the mean over the workers
        optimizer.step();
        loss_sum += loss.item<double>();
      }
      cohort::AllReduce(strategy, loss_sum, cohort::ReduceOp::kAverage);
      net->eval();
      torch::NoGradGuard no_grad;
      const double test_loss =
          torch::mse_loss(net->forward(test.inputs()), test.targets()).item<double>();
      if (strategy.is_chief()) {
        std::printf("epoch %d/%d: train loss %.4f, test loss %.4f\n", epoch + 1, epochs,
                    loss_sum.item<double>() / batches.steps_per_epoch(), test_loss);
        cohort::SaveModule(*net, checkpoint);  // only the chief writes
      }
    }
    cohort::Barrier(strategy);  // nobody leaves before the chief's checkpoint is written
    if (strategy.is_chief()) std::printf("saved model: %s\n", checkpoint.c_str());
  });
}
