// Shared set-up for the tests that train: one compute thread (deterministic and fair to the other
// tests running in parallel), small synthetic splits and small runs.
#pragma once

#include <gtest/gtest.h>

#include <memory>

#include "testing/synthetic_data.h"
#include "train/compute_threads.h"
#include "train/data/image_batch_source.h"
#include "train/image_classifier.h"
#include "train/trainer.h"

namespace cohort::train::testing {

// libtorch allows setting the inter-op thread count once per process.
inline void UseOneComputeThread() {
  static const bool done = [] {
    Status status = SetComputeThreads(1);
    EXPECT_TRUE(status.ok()) << status.ToString();
    return true;
  }();
  (void)done;
}

inline TrainerOptions SmallRun() {
  TrainerOptions options;
  options.epochs = 3;
  options.steps_per_epoch = 6;
  options.per_worker_batch = 8;
  options.optimizer = "adam";
  options.learning_rate = 0.01;
  options.seed = 5;
  options.eval_batch = 32;
  return options;
}

// Synthetic image splits and the "cnn" image classifier over them.
struct SmallData {
  ImageDataset train = MakeSyntheticDataset(200, 1);
  ImageDataset test = MakeSyntheticDataset(64, 2);
  ImageBatchSource train_source{&train};
  ImageBatchSource test_source{&test};

  ModelFactory Cnn() const {
    return ImageClassifier::Factory("cnn", train, test, {"0", "1", "2", "3"});
  }
};

inline std::unique_ptr<Trainer> MakeTrainer(const TrainerOptions& options, const SmallData& data,
                                            Strategy* strategy) {
  UseOneComputeThread();
  auto trainer =
      Trainer::Create(options, data.Cnn(), &data.train_source, &data.test_source, strategy);
  EXPECT_TRUE(trainer.ok()) << trainer.status().ToString();
  return trainer.ok() ? std::move(trainer).value() : nullptr;
}

}  // namespace cohort::train::testing
