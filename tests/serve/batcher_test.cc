#include "serve/batcher.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "testing/wait.h"

namespace cohort::serve {
namespace {

using namespace std::chrono_literals;

// A model that answers each instance with its first number doubled, records its batch sizes
// and, while `hold` is set, waits in Predict (so that requests pile up behind it).
class DoublingModel : public Servable {
 public:
  std::string framework() const override { return "TEST"; }
  nlohmann::json Signature() const override { return {}; }
  StatusOr<DecodedInstance> DecodeInstance(const nlohmann::json&, size_t) const override {
    return DecodedInstance{};
  }
  StatusOr<std::vector<nlohmann::json>> Predict(const std::vector<float>& values, int64_t count,
                                                const std::vector<int64_t>& shape) override {
    {
      std::unique_lock lock(mutex);
      ++entered;
      released.wait(lock, [&] { return !hold; });
      batches.push_back(count);
    }
    const size_t size = shape.empty() ? 1 : static_cast<size_t>(shape[0]);
    std::vector<nlohmann::json> predictions;
    for (int64_t i = 0; i < count; ++i) predictions.push_back(values[i * size] * 2);
    return predictions;
  }
  void Release() {
    {
      std::lock_guard lock(mutex);
      hold = false;
    }
    released.notify_all();
  }

  std::mutex mutex;
  std::condition_variable released;
  bool hold = false;
  int entered = 0;
  std::vector<int64_t> batches;
};

PredictionRequest Request(float value, int64_t count = 1, int64_t width = 1) {
  PredictionRequest request;
  request.shape = {width};
  request.count = count;
  request.values.assign(static_cast<size_t>(count * width), value);
  return request;
}

TEST(DynamicBatcher, QueuedRequestsShareForwardPassesWithinTheMaximumBatch) {
  auto model = std::make_shared<DoublingModel>();
  model->hold = true;
  DynamicBatcher batcher(model, {.max_batch = 8, .max_wait = 50ms, .threads = 1});
  std::vector<std::shared_ptr<PendingPrediction>> pending;
  pending.push_back(*batcher.Submit(Request(0)));
  // The first request is in the model; the next 20 wait behind it.
  ASSERT_TRUE(cohort::testing::WaitUntil(
      [&] {
        std::lock_guard lock(model->mutex);
        return model->entered == 1;
      },
      10s));
  for (int i = 1; i <= 20; ++i) pending.push_back(*batcher.Submit(Request(static_cast<float>(i))));
  model->Release();
  for (int i = 0; i <= 20; ++i) {
    StatusOr<std::vector<nlohmann::json>> answer = pending[static_cast<size_t>(i)]->Wait(10s);
    ASSERT_TRUE(answer.ok()) << answer.status().ToString();
    EXPECT_EQ(*answer, std::vector<nlohmann::json>{2.0 * i}) << "request " << i;
  }
  std::lock_guard lock(model->mutex);
  EXPECT_EQ(model->batches, (std::vector<int64_t>{1, 8, 8, 4}));
}

TEST(DynamicBatcher, DifferentShapesAndLargeRequestsGoAlone) {
  auto model = std::make_shared<DoublingModel>();
  model->hold = true;
  DynamicBatcher batcher(model, {.max_batch = 4, .max_wait = 50ms, .threads = 1});
  auto first = *batcher.Submit(Request(1));
  ASSERT_TRUE(cohort::testing::WaitUntil(
      [&] {
        std::lock_guard lock(model->mutex);
        return model->entered == 1;
      },
      10s));
  auto wide = *batcher.Submit(Request(2, 1, 3));    // another shape
  auto large = *batcher.Submit(Request(3, 6, 3));   // over max_batch: alone
  auto narrow = *batcher.Submit(Request(4, 2, 1));  // the first's shape again
  model->Release();
  EXPECT_EQ(*first->Wait(10s), std::vector<nlohmann::json>{2.0});
  EXPECT_EQ(*wide->Wait(10s), std::vector<nlohmann::json>{4.0});
  EXPECT_EQ(large->Wait(10s)->size(), 6u);
  EXPECT_EQ(*narrow->Wait(10s), (std::vector<nlohmann::json>{8.0, 8.0}));
  std::lock_guard lock(model->mutex);
  EXPECT_EQ(model->batches, (std::vector<int64_t>{1, 1, 6, 2}));
}

TEST(DynamicBatcher, AFullQueueRefusesAndTheDestructorAnswersEveryQueuedRequest) {
  auto model = std::make_shared<DoublingModel>();
  model->hold = true;
  std::vector<std::shared_ptr<PendingPrediction>> pending;
  {
    DynamicBatcher batcher(
        model, {.max_batch = 2, .max_wait = 0ms, .threads = 1, .max_queued_instances = 5});
    pending.push_back(*batcher.Submit(Request(0)));
    ASSERT_TRUE(cohort::testing::WaitUntil(
        [&] {
          std::lock_guard lock(model->mutex);
          return model->entered == 1;
        },
        10s));
    for (int i = 1; i <= 5; ++i) pending.push_back(*batcher.Submit(Request(static_cast<float>(i))));
    StatusOr<std::shared_ptr<PendingPrediction>> refused = batcher.Submit(Request(6));
    ASSERT_FALSE(refused.ok());
    EXPECT_EQ(refused.status().code(), Status::Code::kUnavailable);
    EXPECT_NE(refused.status().message().find("5 instances waiting, at most 5"), std::string::npos);
    EXPECT_FALSE(batcher.Submit(Request(1, 0)).ok());
    std::thread release([&] { model->Release(); });
    release.join();
  }  // the destructor returns once every queued request has its answer
  for (int i = 0; i <= 5; ++i) {
    StatusOr<std::vector<nlohmann::json>> answer = pending[static_cast<size_t>(i)]->Wait(0ms);
    ASSERT_TRUE(answer.ok()) << "request " << i << ": " << answer.status().ToString();
    EXPECT_EQ(*answer, std::vector<nlohmann::json>{2.0 * i});
  }
}

TEST(DynamicBatcher, ConcurrentClientsAreBatchedAndEachGetsItsOwnAnswer) {
  auto model = std::make_shared<DoublingModel>();
  DynamicBatcher batcher(model, {.max_batch = 16, .max_wait = 5ms, .threads = 2});
  std::atomic<int> wrong = 0;
  std::vector<std::thread> clients;
  for (int c = 0; c < 32; ++c) {
    clients.emplace_back([&, c] {
      for (int r = 0; r < 50; ++r) {
        const float value = static_cast<float>(c * 1000 + r);
        StatusOr<std::shared_ptr<PendingPrediction>> pending = batcher.Submit(Request(value));
        if (!pending.ok()) {
          ++wrong;
          continue;
        }
        StatusOr<std::vector<nlohmann::json>> answer = (*pending)->Wait(30s);
        if (!answer.ok() || *answer != std::vector<nlohmann::json>{2.0 * value}) ++wrong;
      }
    });
  }
  for (std::thread& client : clients) client.join();
  EXPECT_EQ(wrong, 0);
  std::lock_guard lock(model->mutex);
  int64_t instances = 0, largest = 0;
  for (int64_t size : model->batches) {
    instances += size;
    largest = std::max(largest, size);
  }
  EXPECT_EQ(instances, 32 * 50);
  EXPECT_LE(largest, 16);
  EXPECT_LT(model->batches.size(), size_t{32 * 50}) << "no two requests ever shared a batch";
}

}  // namespace
}  // namespace cohort::serve
