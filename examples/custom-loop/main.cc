// custom-loop: a training loop of your own on Cohort's low-level API. Every worker generates the
// same tabular regression data (y = w.x + sin(x0 * x1) + noise), takes its share of each global
// batch, and averages gradients with the other workers during backward. After each epoch the chief
// alone writes a checkpoint (weights, Adam's state, epochs done); a restarted job's chief loads it
// and everyone continues from the chief's weights at the next epoch. The chief saves the trained
// model in <work_dir>/model.pt and then removes the checkpoint, so that the next job starts afresh.
//
//   custom-loop [--epochs=N] [--work_dir=DIR]
#include <cohort/cluster.h>
#include <cohort/collectives.h>
#include <cohort/data.h>
#include <cohort/status.h>
#include <cohort/strategy.h>
#include <torch/torch.h>

#include <cstdint>
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

// The chief's checkpoint: everything a restarted job needs to go on where this one stopped, in one
// file, written under another name and renamed so that a reader never sees half of it.
void SaveCheckpoint(torch::nn::Module& net, torch::optim::Optimizer& optimizer, int epochs_done,
                    const std::string& path) {
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  torch::serialize::OutputArchive archive, weights, optimizer_state;
  net.save(weights);
  optimizer.save(optimizer_state);
  archive.write("weights", weights);
  archive.write("optimizer", optimizer_state);
  archive.write("epochs_done", torch::tensor(int64_t{epochs_done}));
  archive.save_to(path + ".new");
  std::filesystem::rename(path + ".new", path);
}

// Loads what SaveCheckpoint wrote into `net` and `optimizer`; returns the epochs done.
int LoadCheckpoint(torch::nn::Module& net, torch::optim::Optimizer& optimizer,
                   const std::string& path) {
  torch::serialize::InputArchive archive, weights, optimizer_state;
  archive.load_from(path);
  archive.read("weights", weights);
  archive.read("optimizer", optimizer_state);
  net.load(weights);
  optimizer.load(optimizer_state);
  torch::Tensor epochs_done;
  archive.read("epochs_done", epochs_done);
  return static_cast<int>(epochs_done.item<int64_t>());
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
    const std::string work_dir = Flag(argc, argv, "work_dir", "/tmp/cohort-custom-loop");
    const std::string checkpoint = work_dir + "/checkpoint.pt", model = work_dir + "/model.pt";
    cohort::MultiWorkerMirrored strategy(cohort::Cluster::FromEnvironment());
    std::printf("custom-loop: %s\n", strategy.Describe().c_str());
    const cohort::TensorSource train = MakeData(8192, 1), test = MakeData(2048, 2);

    torch::nn::Sequential net(torch::nn::Linear(8, 64), torch::nn::ReLU(),
                              torch::nn::Linear(64, 64), torch::nn::ReLU(),
                              torch::nn::Linear(64, 1));
    torch::optim::Adam optimizer(net->parameters(), 3e-3);
    // The chief decides where everyone starts: epoch 0, or after the epochs its checkpoint holds.
    torch::Tensor first_epoch = torch::zeros({1}, torch::kInt64);
    if (strategy.is_chief() && std::filesystem::exists(checkpoint)) {
      first_epoch[0] = LoadCheckpoint(*net, optimizer, checkpoint);
      std::printf("custom-loop: resuming from %s after epoch %lld\n", checkpoint.c_str(),
                  static_cast<long long>(first_epoch.item<int64_t>()));
    }
    cohort::BroadcastFromChief(strategy, *net);       // everyone starts from the chief's weights,
    cohort::BroadcastFromChief(strategy, optimizer);  // Adam's moments
    cohort::Broadcast(strategy, first_epoch);         // and epoch
    cohort::GradientAllReduce all_reduce(strategy, *net);
    cohort::ShardedBatches batches(strategy, train, /*per_worker_batch=*/64, /*seed=*/7);

    for (int epoch = static_cast<int>(first_epoch.item<int64_t>()); epoch < epochs; ++epoch) {
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
        SaveCheckpoint(*net, optimizer, epoch + 1, checkpoint);  // only the chief writes
      }
    }
    if (strategy.is_chief()) {
      cohort::SaveModule(*net, model);  // atomic; torch::load reads it into the same Sequential
      std::filesystem::remove(checkpoint);
      std::printf("saved model: %s\n", model.c_str());
    }
    cohort::Barrier(strategy);  // nobody leaves before the chief's model is written
  });
}
