// cohort/strategy.h: alone, a strategy connects to nothing; with peers, every worker joins one
// group; a parameter-server cluster is refused with the reason.
#include "cohort/strategy.h"

#include <gtest/gtest.h>

#include "api_test_support.h"
#include "cohort/status.h"

namespace cohort {
namespace {

using api_testing::Report;
using api_testing::TestStrategyOptions;
using api_testing::Workers;

TEST(Strategy, AloneNeedsNoPeers) {
  MultiWorkerMirrored strategy(Cluster::FromTfConfig(""), TestStrategyOptions());
  EXPECT_EQ(strategy.world_size(), 1);
  EXPECT_EQ(strategy.rank(), 0);
  EXPECT_TRUE(strategy.is_chief());
  EXPECT_EQ(strategy.Describe(), "single process");
}

TEST(Strategy, WorkersJoinOneGroup) {
  const auto outcomes = Workers(3, [](const Cluster& cluster) {
    MultiWorkerMirrored strategy(cluster, TestStrategyOptions());
    Report(strategy.Describe());
    return strategy.world_size() == 3 && strategy.rank() == cluster.rank() ? 0 : 1;
  });
  for (int rank = 0; rank < 3; ++rank) {
    EXPECT_EQ(outcomes[rank].exit_code, 0) << outcomes[rank].report;
    EXPECT_NE(outcomes[rank].report.find("worker " + std::to_string(rank) + " of 3"),
              std::string::npos)
        << outcomes[rank].report;
  }
}

TEST(Strategy, ParameterServerClusterIsRefused) {
  try {
    MultiWorkerMirrored strategy(
        Cluster::FromTfConfig(R"({"cluster":{"chief":["127.0.0.1:1"],"ps":["127.0.0.1:2"]},)"
                              R"("task":{"type":"chief","index":0}})"),
        TestStrategyOptions());
    FAIL() << "no error";
  } catch (const Error& error) {
    EXPECT_EQ(error.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(std::string(error.what()).find("parameter-server"), std::string::npos)
        << error.what();
  }
}

TEST(Strategy, AMissingPeerEndsTheWaitWithARetryableError) {
  // Worker 1 never comes: worker 0 gives up after the startup timeout.
  const std::vector<int> ports = api_testing::FreePorts(2);
  StrategyOptions options = TestStrategyOptions();
  options.startup_timeout = std::chrono::seconds(2);
  try {
    MultiWorkerMirrored strategy(Cluster::FromTfConfig(api_testing::WorkerTfConfig(ports, 0)),
                                 options);
    FAIL() << "no error";
  } catch (const Error& error) {
    EXPECT_TRUE(error.retryable()) << error.what();
  }
}

}  // namespace
}  // namespace cohort
