// The fit loop with the slow-link synchronizations (trainer.h: PowerSGD and local SGD), two
// workers as threads of this process (thread_group.h): both end with the same weights, bit for
// bit, and learn the synthetic task.
#include <gtest/gtest.h>

#include <cstring>

#include "thread_group.h"
#include "train/test_support.h"
#include "train/trainer.h"

namespace cohort::train {
namespace {

struct TwoWorkerRun {
  std::vector<std::vector<float>> weights;  // by rank, after training
  std::vector<double> accuracy;             // by rank
};

TwoWorkerRun TrainTwoWorkers(const TrainerOptions& options, const std::string& model) {
  testing::UseOneComputeThread();
  testing::SmallData data;
  testing::ThreadGroup group(2);
  std::vector<std::unique_ptr<Trainer>> trainers;
  for (int rank = 0; rank < 2; ++rank) {
    auto trainer = Trainer::Create(
        options, ImageClassifier::Factory(model, data.train, data.test, {"0", "1", "2", "3"}),
        &data.train_source, &data.test_source, group.strategy(rank));
    EXPECT_TRUE(trainer.ok()) << trainer.status().ToString();
    if (!trainer.ok()) return {};
    trainers.push_back(std::move(trainer).value());
  }
  TwoWorkerRun run;
  run.weights.resize(2);
  run.accuracy.resize(2);
  std::vector<Status> results(2);
  group.Run([&](int rank) {
    results[rank] = trainers[rank]->Fit({});
    if (!results[rank].ok()) return;
    auto evaluation = trainers[rank]->Evaluate();
    if (!evaluation.ok()) {
      results[rank] = evaluation.status();
      return;
    }
    run.accuracy[rank] = evaluation->metrics["accuracy"];
    run.weights[rank] = trainers[rank]->ParameterVector();
  });
  for (const Status& status : results) EXPECT_TRUE(status.ok()) << status.ToString();
  return run;
}

TEST(SlowLinkTrainer, PowerSgdWorkersEndIdenticalAndLearn) {
  for (const std::string model : {"cnn", "bn_cnn"}) {
    TrainerOptions options = testing::SmallRun();
    options.synchronization = Synchronization::kPowerSgd;
    options.power_sgd = {.rank = 2, .start_step = 3};
    const TwoWorkerRun run = TrainTwoWorkers(options, model);
    ASSERT_EQ(run.weights.size(), 2u);
    ASSERT_EQ(run.weights[0].size(), run.weights[1].size());
    EXPECT_EQ(std::memcmp(run.weights[0].data(), run.weights[1].data(),
                          run.weights[0].size() * sizeof(float)),
              0)
        << model;
    EXPECT_GE(run.accuracy[0], 0.9) << model;
    EXPECT_EQ(run.accuracy[0], run.accuracy[1]) << model;
  }
}

TEST(SlowLinkTrainer, LocalSgdWorkersEndIdenticalAndLearn) {
  for (const std::string model : {"cnn", "bn_cnn"}) {
    TrainerOptions options = testing::SmallRun();
    options.synchronization = Synchronization::kLocalSgd;
    // 6 steps per epoch: synchronizations after steps 4 and 6 (the epoch's end) of each epoch.
    options.local_sgd = {.sync_every_steps = 4, .outer_learning_rate = 0.7, .outer_momentum = 0.9};
    options.average_buffers_before_evaluation = true;
    const TwoWorkerRun run = TrainTwoWorkers(options, model);
    ASSERT_EQ(run.weights.size(), 2u);
    EXPECT_EQ(std::memcmp(run.weights[0].data(), run.weights[1].data(),
                          run.weights[0].size() * sizeof(float)),
              0)
        << model;
    EXPECT_GE(run.accuracy[0], 0.9) << model;
  }
}

TEST(SlowLinkTrainer, RefusesSixteenBitCompressionWithPowerSgdOrLocalSgd) {
  testing::UseOneComputeThread();
  testing::SmallData data;
  for (const Synchronization synchronization :
       {Synchronization::kPowerSgd, Synchronization::kLocalSgd}) {
    TrainerOptions options = testing::SmallRun();
    options.synchronization = synchronization;
    options.gradient_compression = GradientCompression::kBFloat16;
    SingleProcessStrategy alone;
    auto trainer =
        Trainer::Create(options, data.Cnn(), &data.train_source, &data.test_source, &alone);
    ASSERT_FALSE(trainer.ok());
    EXPECT_NE(trainer.status().message().find("use gradient compression none"), std::string::npos)
        << trainer.status().ToString();
  }
}

TEST(SlowLinkTrainer, ParsesSynchronizationNames) {
  EXPECT_EQ(*ParseSynchronization("allreduce"), Synchronization::kAllReduce);
  EXPECT_EQ(*ParseSynchronization("powersgd"), Synchronization::kPowerSgd);
  EXPECT_EQ(*ParseSynchronization("local_sgd"), Synchronization::kLocalSgd);
  const auto bad = ParseSynchronization("diloco");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("\"diloco\""), std::string::npos);
}

}  // namespace
}  // namespace cohort::train
