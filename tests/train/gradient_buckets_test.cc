#include "train/gradient_buckets.h"

#include <gtest/gtest.h>
#include <torch/nn/functional/loss.h>

#include "test_support.h"
#include "train/models.h"

namespace cohort::train {
namespace {

// Pretends to be one of two workers whose peer computed the same gradients: every sum doubles
// the data, so the averaged gradient must equal the local one. Records the order of the sums.
class MirrorStrategy : public SingleProcessStrategy {
 public:
  int num_workers() const override { return 2; }
  StatusOr<std::unique_ptr<PendingSum>> StartSum(float* data, size_t count) override {
    sizes.push_back(count);
    for (size_t i = 0; i < count; ++i) data[i] *= 2;
    return SingleProcessStrategy::StartSum(data, count);
  }
  std::vector<size_t> sizes;
};

class FailingStrategy : public SingleProcessStrategy {
 public:
  int num_workers() const override { return 2; }
  StatusOr<std::unique_ptr<PendingSum>> StartSum(float*, size_t) override {
    return Status::Unavailable("worker:1 (localhost:1) closed the connection");
  }
};

torch::Tensor Loss(torch::nn::Sequential& model) {
  torch::manual_seed(3);
  torch::Tensor images = torch::rand({4, 1, 12, 12});
  torch::Tensor labels = torch::tensor({0, 1, 2, 3}, torch::kInt64);
  return torch::nn::functional::cross_entropy(model->forward(images), labels);
}

TEST(GradientBuckets, PacksParametersInReverseOrderUpToTheBucketSize) {
  testing::UseOneComputeThread();
  auto model = MakeModel("cnn", {12, 12, 4});
  ASSERT_TRUE(model.ok());
  // Parameters: 0 conv.w (288), 1 conv.b (32), 2 fc1.w (409600), 3 fc1.b (128), 4 fc2.w (512),
  // 5 fc2.b (4). A bucket closes once it holds more than 4 KiB.
  MirrorStrategy strategy;
  GradientBuckets buckets((*model)->parameters(), &strategy, 4096);
  EXPECT_EQ(buckets.Layout(), (std::vector<std::vector<size_t>>{{5, 4, 3, 2}, {1, 0}}));

  buckets.BeginStep();
  Loss(*model).backward();
  // Both sums were started by the autograd hooks while backward ran, before FinishStep, in bucket
  // order, the last layers' first.
  EXPECT_EQ(strategy.sizes, (std::vector<size_t>{4 + 512 + 128 + 409600, 32 + 288}));
  ASSERT_TRUE(buckets.FinishStep(std::chrono::seconds(5)).ok());
  EXPECT_EQ(strategy.sizes.size(), 2u);

  // The averaged gradients are the plain ones.
  std::vector<torch::Tensor> averaged;
  for (auto& parameter : (*model)->parameters()) averaged.push_back(parameter.grad().clone());
  for (auto& parameter : (*model)->parameters()) parameter.mutable_grad().reset();
  Loss(*model).backward();  // outside a step: the hooks stand aside
  auto parameters = (*model)->parameters();
  for (size_t i = 0; i < parameters.size(); ++i) {
    EXPECT_TRUE(torch::allclose(averaged[i], parameters[i].grad())) << "parameter " << i;
  }
  EXPECT_EQ(strategy.sizes.size(), 2u);
}

TEST(GradientBuckets, OneBucketWhenTheSizeIsHuge) {
  testing::UseOneComputeThread();
  auto model = MakeModel("deep_cnn", {12, 12, 4});
  ASSERT_TRUE(model.ok());
  MirrorStrategy strategy;
  GradientBuckets buckets((*model)->parameters(), &strategy, size_t{1} << 40);
  EXPECT_EQ(buckets.num_buckets(), 1u);
}

TEST(GradientBuckets, AFailedSumFailsTheStep) {
  testing::UseOneComputeThread();
  auto model = MakeModel("cnn", {12, 12, 4});
  ASSERT_TRUE(model.ok());
  FailingStrategy strategy;
  GradientBuckets buckets((*model)->parameters(), &strategy, 4096);
  buckets.BeginStep();
  Loss(*model).backward();
  Status status = buckets.FinishStep(std::chrono::seconds(5));
  EXPECT_EQ(status.code(), Status::Code::kUnavailable);
  EXPECT_NE(status.message().find("worker:1"), std::string::npos);
}

}  // namespace
}  // namespace cohort::train
