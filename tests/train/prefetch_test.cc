#include <gtest/gtest.h>

#include <thread>

#include "testing/synthetic_data.h"
#include "train/data/batch_prefetcher.h"
#include "train/data/bounded_queue.h"
#include "train/data/image_batch_source.h"

namespace cohort::train {
namespace {

using std::chrono::milliseconds;

TEST(BoundedQueue, EveryWaitTimesOut) {
  BoundedQueue<int> queue(1);
  EXPECT_FALSE(queue.Pop(milliseconds(10)).has_value());
  int first = 1, second = 2;
  EXPECT_EQ(queue.Push(std::move(first), milliseconds(10)), BoundedQueue<int>::PushResult::kPushed);
  EXPECT_EQ(queue.Push(std::move(second), milliseconds(10)),
            BoundedQueue<int>::PushResult::kTimedOut);
  EXPECT_EQ(second, 2) << "a timed-out push leaves the item with the caller";
  EXPECT_EQ(queue.Pop(milliseconds(10)), 1);
}

TEST(BoundedQueue, CloseWakesWaitersAndKeepsQueuedItems) {
  BoundedQueue<int> queue(2);
  int item = 7;
  queue.Push(std::move(item), milliseconds(10));
  std::thread closer([&] {
    std::this_thread::sleep_for(milliseconds(20));
    queue.Close();
  });
  EXPECT_EQ(queue.Pop(milliseconds(1000)), 7);
  EXPECT_FALSE(queue.Pop(milliseconds(5000)).has_value());  // returns at Close, not at 5 s
  closer.join();
  int late = 8;
  EXPECT_EQ(queue.Push(std::move(late), milliseconds(10)), BoundedQueue<int>::PushResult::kClosed);
}

TEST(BatchPrefetcher, DeliversTheSamplersBatchesInStepOrder) {
  const ImageDataset dataset = testing::MakeSyntheticDataset(50, 3, 4);
  const ImageBatchSource source(&dataset);
  ShardSampler reference(dataset.size(), 2, 1, 5, 4, 11);
  BatchPrefetcher prefetcher(source, ShardSampler(dataset.size(), 2, 1, 5, 4, 11), 3, 9, 2);
  for (int64_t step = 3; step < 9; ++step) {
    auto batch = prefetcher.Next(milliseconds(5000));
    ASSERT_TRUE(batch.ok()) << batch.status().ToString();
    EXPECT_EQ(batch->step, step);
    const auto indices = reference.BatchIndices(step);
    const int64_t count = static_cast<int64_t>(indices.size());
    ASSERT_EQ(batch->size(), count);
    ASSERT_EQ(batch->inputs.sizes(), (std::vector<int64_t>{count, 1, 4, 4}));
    const float* images = batch->inputs.data_ptr<float>();
    const int64_t* labels = batch->targets.data_ptr<int64_t>();
    for (int64_t i = 0; i < count; ++i) {
      EXPECT_EQ(labels[i], dataset.labels[indices[i]]);
      EXPECT_FLOAT_EQ(images[i * 16], dataset.pixels[indices[i] * 16] / 255.0f);
    }
  }
  auto past_end = prefetcher.Next(milliseconds(10));
  EXPECT_EQ(past_end.status().code(), Status::Code::kFailedPrecondition);
}

TEST(BatchPrefetcher, StopsCleanlyWithBatchesLeft) {
  const ImageDataset dataset = testing::MakeSyntheticDataset(50, 3, 4);
  const ImageBatchSource source(&dataset);
  BatchPrefetcher prefetcher(source, ShardSampler(dataset.size(), 1, 0, 5, 4, 1), 0, 1000, 2);
  ASSERT_TRUE(prefetcher.Next(milliseconds(5000)).ok());
  // The destructor closes the queue and joins the producer, which is blocked on a full queue.
}

}  // namespace
}  // namespace cohort::train
