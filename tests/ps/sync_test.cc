// SyncAggregator and StepClock with threads standing in for workers.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "ps/step_clock.h"
#include "ps/sync_aggregator.h"
#include "testing/wait.h"

namespace cohort::ps {
namespace {

using namespace std::chrono_literals;
const cluster::TaskId kWorker0{"worker", 0}, kWorker1{"worker", 1};

TEST(SyncAggregator, AppliesTheAverageOncePerStep) {
  SyncAggregator aggregator({{kWorker0, kWorker1}, 10s, nullptr});
  int applies = 0;
  float applied = 0;
  auto apply = [&](const float* average) {
    ++applies;
    applied = average[0];
    return Status::OK();
  };
  StatusOr<PushOutcome> first = Status::Internal("not run");
  std::thread worker0([&] {
    float gradient = 1;
    first = aggregator.ContributeDense("v", kWorker0, 0, &gradient, 1, apply);
  });
  float gradient = 3;
  auto second = aggregator.ContributeDense("v", kWorker1, 0, &gradient, 1, apply);
  worker0.join();
  ASSERT_TRUE(first.ok() && second.ok());
  EXPECT_EQ(applies, 1);
  EXPECT_EQ(applied, 2.0f);
  EXPECT_FALSE(first->dropped);
  EXPECT_EQ(second->step, 1);
  // Pushing step 0 again is stale: dropped, told to move to step 1.
  auto stale = aggregator.ContributeDense("v", kWorker0, 0, &gradient, 1, apply);
  ASSERT_TRUE(stale.ok());
  EXPECT_TRUE(stale->dropped);
  EXPECT_EQ(stale->step, 1);
}

TEST(SyncAggregator, AppliesWhatArrivedAfterTheTimeoutAndNamesTheMissing) {
  std::vector<std::string> log;
  SyncAggregator aggregator(
      {{kWorker0, kWorker1}, 200ms, [&](const std::string& line) { log.push_back(line); }});
  int64_t ids[2] = {4, 4};
  float gradient[2] = {1, 2};
  std::vector<int64_t> applied_ids;
  float applied = 0;
  auto started = std::chrono::steady_clock::now();
  auto outcome =
      aggregator.ContributeRows("table", kWorker0, 5, ids, 2, 1, gradient,
                                [&](const int64_t* unique, size_t count, const float* average) {
                                  applied_ids.assign(unique, unique + count);
                                  applied = average[0];
                                  return Status::OK();
                                });
  EXPECT_GE(std::chrono::steady_clock::now() - started, 200ms);
  ASSERT_TRUE(outcome.ok());
  EXPECT_FALSE(outcome->dropped);
  EXPECT_EQ(applied_ids, std::vector<int64_t>{4});
  EXPECT_EQ(applied, 3.0f);
  ASSERT_EQ(log.size(), 1u);
  EXPECT_NE(log[0].find("missing: worker:1"), std::string::npos) << log[0];
}

// A worker pushing twice for one step is refused. Two threads push for worker:0 at once: whichever
// comes second fails at once, while the first waits for worker:1, which pushes only then.
TEST(SyncAggregator, RefusesASecondPushForTheSameStep) {
  SyncAggregator aggregator({{kWorker0, kWorker1}, 20s, nullptr});
  auto apply = [](const float*) { return Status::OK(); };
  std::atomic<int> returned{0};
  StatusOr<PushOutcome> pushes[2] = {Status::Internal("not run"), Status::Internal("not run")};
  std::vector<std::thread> workers;
  for (int i = 0; i < 2; ++i) {
    workers.emplace_back([&, i] {
      float gradient = 1;
      pushes[i] = aggregator.ContributeDense("v", kWorker0, 0, &gradient, 1, apply);
      ++returned;
    });
  }
  ASSERT_TRUE(cohort::testing::WaitUntil([&] { return returned == 1; }, 20s));
  float gradient = 3;
  EXPECT_TRUE(aggregator.ContributeDense("v", kWorker1, 0, &gradient, 1, apply).ok());
  for (std::thread& worker : workers) worker.join();
  const bool first_refused = pushes[0].status().code() == Status::Code::kFailedPrecondition;
  const bool second_refused = pushes[1].status().code() == Status::Code::kFailedPrecondition;
  EXPECT_NE(first_refused, second_refused)
      << "exactly one push is refused: " << pushes[0].status().ToString() << " / "
      << pushes[1].status().ToString();
  EXPECT_TRUE(first_refused ? pushes[1].ok() : pushes[0].ok());
}

TEST(StepClock, HoldsTheFastWorkerWithinItsLead) {
  StepClock clock;
  ASSERT_TRUE(clock.Advance(kWorker1, 1, 2, net::Deadline::After(1s)).ok());
  ASSERT_TRUE(clock.Advance(kWorker0, 3, 2, net::Deadline::After(1s)).ok());
  auto blocked = clock.Advance(kWorker0, 4, 2, net::Deadline::After(100ms));
  ASSERT_EQ(blocked.status().code(), Status::Code::kDeadlineExceeded);
  EXPECT_NE(blocked.status().message().find("ahead of worker:1 (1 steps)"), std::string::npos);
  StatusOr<int64_t> released = Status::Internal("not run");
  std::thread fast([&] { released = clock.Advance(kWorker0, 4, 2, net::Deadline::After(20s)); });
  // The slow worker advances only once the fast one is held.
  ASSERT_TRUE(cohort::testing::WaitUntil([&] { return clock.waiting() == 1; }, 20s));
  ASSERT_TRUE(clock.Advance(kWorker1, 2, 2, net::Deadline::After(1s)).ok());
  fast.join();
  ASSERT_TRUE(released.ok());
  EXPECT_EQ(*released, 2);
  // A dead worker does not hold anybody back, and a newcomer starts level with the slowest.
  clock.Forget(kWorker1);
  EXPECT_TRUE(clock.Advance(kWorker0, 10, 2, net::Deadline::After(100ms)).ok());
  auto newcomer = clock.Advance({"worker", 2}, 0, 2, net::Deadline::After(100ms));
  ASSERT_TRUE(newcomer.ok());
  EXPECT_EQ(*newcomer, 10);
}

}  // namespace
}  // namespace cohort::ps
