// The collectives over a second transport: InProcessConnectionSet (threads of this process,
// messages through memory queues). The algorithms are the ones TCP runs, unchanged; only the
// connection set differs. Flat ring, hierarchical all-reduce (host labels) and zero skipping
// (every rank a host of its own) all go through the seam alone.
#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <thread>
#include <vector>

#include "collective/communicator.h"
#include "in_process_connection_set.h"

namespace cohort::collective {
namespace {

using namespace std::chrono_literals;

// Runs body(communicator) on `ranks` threads, each with its own Communicator over one in-process
// group, and returns each rank's result.
std::vector<Status> RunThreads(int ranks, const CommunicatorOptions& options,
                               const std::function<Status(Communicator&)>& body) {
  auto group = std::make_shared<InProcessGroup>(ranks);
  std::vector<Status> results(ranks);
  std::vector<std::thread> threads;
  for (int rank = 0; rank < ranks; ++rank) {
    threads.emplace_back([&, rank] {
      auto communicator =
          Communicator::Create(std::make_shared<InProcessConnectionSet>(group, rank), options);
      if (!communicator.ok()) {
        results[rank] = communicator.status();
        return;
      }
      results[rank] = body(**communicator);
    });
  }
  for (std::thread& thread : threads) thread.join();
  return results;
}

Status Expect(bool condition, const std::string& what) {
  return condition ? Status::OK() : Status::Internal(what);
}

// Every operation of the Communicator, checked against its exact result.
Status EveryOperation(Communicator& communicator) {
  const int rank = communicator.rank();
  const int size = communicator.size();
  // Several segments per block; about half zeros, as gradients behind a ReLU.
  const size_t count = 10007;
  std::vector<int32_t> integers(count);
  std::vector<float> floats(count);
  for (size_t i = 0; i < count; ++i) {
    integers[i] = static_cast<int32_t>(i % 97) * (rank + 1);
    floats[i] = i % 2 == 0 ? 0.0f : static_cast<float>(i % 13 + rank);
  }
  COHORT_RETURN_IF_ERROR(
      communicator.AllReduce(integers.data(), count, DataType::kInt32, ReduceOp::kSum));
  auto pending =
      communicator.StartAllReduce(floats.data(), count, DataType::kFloat32, ReduceOp::kMax);
  COHORT_RETURN_IF_ERROR(pending->Wait(60s));
  const int32_t rank_factor = size * (size + 1) / 2;
  for (size_t i = 0; i < count; ++i) {
    COHORT_RETURN_IF_ERROR(Expect(integers[i] == static_cast<int32_t>(i % 97) * rank_factor,
                                  "sum of element " + std::to_string(i)));
    const float expected = i % 2 == 0 ? 0.0f : static_cast<float>(i % 13 + size - 1);
    COHORT_RETURN_IF_ERROR(Expect(floats[i] == expected, "max of element " + std::to_string(i)));
  }

  std::vector<int64_t> broadcast(3001, rank);
  COHORT_RETURN_IF_ERROR(
      communicator.Broadcast(broadcast.data(), broadcast.size(), DataType::kInt64, size - 1));
  for (int64_t value : broadcast) {
    COHORT_RETURN_IF_ERROR(Expect(value == size - 1, "broadcast from the last rank"));
  }

  const size_t block = 777;
  std::vector<int32_t> mine(block, rank * 10);
  std::vector<int32_t> gathered(block * size, -1);
  COHORT_RETURN_IF_ERROR(
      communicator.AllGather(mine.data(), gathered.data(), block, DataType::kInt32));
  for (size_t i = 0; i < gathered.size(); ++i) {
    COHORT_RETURN_IF_ERROR(
        Expect(gathered[i] == static_cast<int32_t>(i / block) * 10, "gathered element"));
  }
  return communicator.Barrier();
}

CommunicatorOptions SmallSegments() {
  CommunicatorOptions options;
  options.ring.segment_bytes = 1024;
  options.operation_timeout = 60s;
  return options;
}

TEST(InProcessTransportTest, EveryOperationOverAFlatRing) {
  for (Status status : RunThreads(3, SmallSegments(), EveryOperation)) {
    EXPECT_TRUE(status.ok()) << status.ToString();
  }
}

TEST(InProcessTransportTest, HierarchicalAllReduceAcrossLabelledHosts) {
  CommunicatorOptions options = SmallSegments();
  options.host_labels = {0, 0, 1, 1};
  for (Status status : RunThreads(4, options, [](Communicator& communicator) -> Status {
         COHORT_RETURN_IF_ERROR(Expect(communicator.uses_hierarchical_all_reduce(),
                                       "2 hosts x 2 ranks reduce hierarchically"));
         return EveryOperation(communicator);
       })) {
    EXPECT_TRUE(status.ok()) << status.ToString();
  }
}

TEST(InProcessTransportTest, ZeroSkippingBetweenHostsSendsFewerBytes) {
  // Every rank a host of its own: the ring encodes what it sends right, and the float buffer is
  // half zeros, so the float all-reduce carries clearly less than its plain bytes.
  CommunicatorOptions options = SmallSegments();
  options.host_labels = {0, 1, 2};
  std::vector<Status> results = RunThreads(3, options, [](Communicator& communicator) -> Status {
    const size_t count = 30000;
    std::vector<float> data(count);
    for (size_t i = 0; i < count; ++i) data[i] = i % 2 == 0 ? 0.0f : 1.0f;
    const uint64_t before = communicator.connections().DataBytesSent();
    COHORT_RETURN_IF_ERROR(
        communicator.AllReduce(data.data(), count, DataType::kFloat32, ReduceOp::kSum));
    const uint64_t sent = communicator.connections().DataBytesSent() - before;
    for (size_t i = 0; i < count; ++i) {
      COHORT_RETURN_IF_ERROR(Expect(data[i] == (i % 2 == 0 ? 0.0f : 3.0f), "sum"));
    }
    // Plain: 2(n-1)/n of the buffer.
    const uint64_t plain = 2 * 2 * count * sizeof(float) / 3;
    return Expect(sent < plain * 3 / 4,
                  "sent " + std::to_string(sent) + " of " + std::to_string(plain) + " plain bytes");
  });
  for (Status status : results) EXPECT_TRUE(status.ok()) << status.ToString();
}

TEST(InProcessTransportTest, DifferentCountsFailInsteadOfHanging) {
  CommunicatorOptions options = SmallSegments();
  options.operation_timeout = 20s;
  std::vector<Status> results = RunThreads(3, options, [](Communicator& communicator) {
    std::vector<int64_t> data(communicator.rank() == 1 ? 5000 : 4000, 1);
    return communicator.AllReduce(data.data(), data.size(), DataType::kInt64, ReduceOp::kSum);
  });
  // Every rank that fails (a rank still finishing the Communicator's first operation may fail in
  // it) reports the same first failure, which names the peer, at once rather than at the deadline.
  int failed = 0;
  bool named_the_operation = false;
  for (const Status& status : results) {
    if (status.ok()) continue;
    ++failed;
    EXPECT_EQ(status.code(), Status::Code::kFailedPrecondition) << status.ToString();
    EXPECT_NE(status.message().find("thread:"), std::string::npos) << status.ToString();
    named_the_operation |= status.message().find("all-reduce #2") != std::string::npos;
  }
  EXPECT_TRUE(named_the_operation);
  EXPECT_GT(failed, 0);
}

}  // namespace
}  // namespace cohort::collective
