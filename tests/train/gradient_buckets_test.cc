#include "train/gradient_buckets.h"

#include <gtest/gtest.h>
#include <torch/nn/functional/loss.h>

#include <cmath>

#include "collective/data_type.h"
#include "test_support.h"
#include "train/gradient_compression.h"
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
  // The same in 16 bits, as the collective sums them: widen, add, round to the type.
  StatusOr<std::unique_ptr<PendingSum>> StartSum16(uint16_t* data, size_t count,
                                                   collective::DataType type) override {
    sizes16.push_back(count);
    types16.push_back(type);
    const bool bf16 = type == collective::DataType::kBFloat16;
    for (size_t i = 0; i < count; ++i) {
      const float value =
          bf16 ? collective::BFloat16ToFloat(data[i]) : collective::Float16ToFloat(data[i]);
      data[i] =
          bf16 ? collective::FloatToBFloat16(2 * value) : collective::FloatToFloat16(2 * value);
    }
    return SingleProcessStrategy::StartSum16(data, count, type);
  }
  std::vector<size_t> sizes;
  std::vector<size_t> sizes16;
  std::vector<collective::DataType> types16;
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

// With compression the buckets are summed as 16-bit copies, and the averaged gradients equal the
// plain ones within the type's precision: relative 2^-8 for bfloat16 and 2^-11 for float16 (half
// a unit in the last place, for rounding once; the doubling is exact), plus float16's smallest
// subnormal step for tiny values. They differ from the float32 ones, so the rounding happened.
void ExpectCompressedGradientsMatch(GradientCompression compression, collective::DataType type,
                                    double relative, double absolute) {
  testing::UseOneComputeThread();
  auto model = MakeModel("cnn", {12, 12, 4});
  ASSERT_TRUE(model.ok());
  MirrorStrategy strategy;
  GradientBuckets buckets((*model)->parameters(), &strategy, 4096, compression);
  buckets.BeginStep();
  Loss(*model).backward();
  ASSERT_TRUE(buckets.FinishStep(std::chrono::seconds(5)).ok());
  EXPECT_TRUE(strategy.sizes.empty()) << "a float32 sum was started";
  EXPECT_EQ(strategy.sizes16, (std::vector<size_t>{4 + 512 + 128 + 409600, 32 + 288}));
  EXPECT_EQ(strategy.types16, (std::vector<collective::DataType>{type, type}));

  std::vector<torch::Tensor> averaged;
  for (auto& parameter : (*model)->parameters()) averaged.push_back(parameter.grad().clone());
  for (auto& parameter : (*model)->parameters()) parameter.mutable_grad().reset();
  Loss(*model).backward();
  auto parameters = (*model)->parameters();
  int64_t differing = 0, total = 0;
  for (size_t i = 0; i < parameters.size(); ++i) {
    const torch::Tensor exact = parameters[i].grad();
    const torch::Tensor error = (averaged[i] - exact).abs();
    const torch::Tensor bound = exact.abs() * relative + absolute;
    EXPECT_TRUE(error.le(bound).all().item<bool>())
        << "parameter " << i << ": largest error " << error.max().item<float>();
    differing += averaged[i].ne(exact).sum().item<int64_t>();
    total += exact.numel();
  }
  EXPECT_GT(differing, total / 10)
      << "of " << total << " gradients, " << differing << " differ from float32's";
}

TEST(GradientBuckets, Bf16CompressionSumsInBFloat16WithinItsPrecision) {
  ExpectCompressedGradientsMatch(GradientCompression::kBFloat16, collective::DataType::kBFloat16,
                                 std::ldexp(1.0, -8), 0);
}

TEST(GradientBuckets, Fp16CompressionSumsInFloat16WithinItsPrecision) {
  ExpectCompressedGradientsMatch(GradientCompression::kFloat16, collective::DataType::kFloat16,
                                 std::ldexp(1.0, -11), std::ldexp(1.0, -24));
}

TEST(GradientCompression, ParsesTheFlagsSpellingsAndRefusesOthers) {
  EXPECT_EQ(*ParseGradientCompression("none"), GradientCompression::kNone);
  EXPECT_EQ(*ParseGradientCompression("bf16"), GradientCompression::kBFloat16);
  EXPECT_EQ(*ParseGradientCompression("fp16"), GradientCompression::kFloat16);
  for (GradientCompression compression :
       {GradientCompression::kNone, GradientCompression::kBFloat16,
        GradientCompression::kFloat16}) {
    EXPECT_EQ(*ParseGradientCompression(Name(compression)), compression);
  }
  EXPECT_FALSE(WireType(GradientCompression::kNone).has_value());
  EXPECT_EQ(WireType(GradientCompression::kFloat16), collective::DataType::kFloat16);
  for (const char* bad : {"", "BF16", "float16", "int8"}) {
    auto parsed = ParseGradientCompression(bad);
    ASSERT_FALSE(parsed.ok()) << bad;
    EXPECT_EQ(parsed.status().code(), Status::Code::kInvalidArgument);
    EXPECT_EQ(
        parsed.status().message(),
        std::string("gradient compression: expected none, bf16 or fp16, got \"") + bad + "\"");
  }
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

// Pretends to be one of three workers whose peers hold 1 and 2 where this one holds x: StartSum
// adds 3. Its StartAverage is Strategy's, which divides the sum once it completes.
class ThreeWorkerSumStrategy : public SingleProcessStrategy {
 public:
  int num_workers() const override { return 3; }
  StatusOr<std::unique_ptr<PendingSum>> StartSum(float* data, size_t count) override {
    for (size_t i = 0; i < count; ++i) data[i] += 3;
    return SingleProcessStrategy::StartSum(data, count);
  }
};

TEST(Strategy, StartAverageDividesTheSumByTheWorkersOnceItCompletes) {
  ThreeWorkerSumStrategy strategy;
  std::vector<float> values = {0, 3, -3, 1.5};
  auto pending = strategy.StartAverage(values.data(), values.size());
  ASSERT_TRUE(pending.ok()) << pending.status().ToString();
  ASSERT_TRUE((*pending)->Wait(std::chrono::seconds(1)).ok());
  EXPECT_EQ(values, (std::vector<float>{1, 2, 0, 1.5f}));
}

TEST(Strategy, StartAveragePassesOnAFailureToStart) {
  FailingStrategy strategy;
  std::vector<float> values = {1, 2};
  auto pending = strategy.StartAverage(values.data(), values.size());
  EXPECT_EQ(pending.status().code(), Status::Code::kUnavailable);
  EXPECT_EQ(values, (std::vector<float>{1, 2}));
}

}  // namespace
}  // namespace cohort::train
