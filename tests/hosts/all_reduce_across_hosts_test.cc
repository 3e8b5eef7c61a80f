// All-reduce across emulated hosts (tests/testing/emulated_cluster.h): ranks on separate hosts
// learn the topology from their handshakes, pick the hierarchical all-reduce when hosts run
// several ranks each, and every rank gets the exact result for every type and operator.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "testing/emulated_cluster.h"
#include "testing/host.h"

namespace cohort::testing {
namespace {

using namespace std::chrono_literals;

const std::string kWorker = COHORT_ALL_REDUCE_WORKER;

class AllReduceAcrossHostsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string missing = MissingForEmulatedHosts();
    if (missing.empty()) return;
    COHORT_SKIP_OR_FAIL_IN_CI("emulated hosts need what this machine lacks: " + missing);
  }

  // Runs `ranks_per_host` workers on each of `hosts` hosts (ranks numbered host by host) and
  // returns their outputs, by rank, after checking that every one succeeded.
  std::vector<std::string> RunGroup(int hosts, int ranks_per_host) {
    EmulatedClusterOptions options;
    options.hosts = hosts;
    options.rate_bits_per_second = 1'000'000'000;
    auto cluster = EmulatedCluster::Create(options);
    EXPECT_TRUE(cluster.ok()) << cluster.status().ToString();
    if (!cluster.ok()) return {};
    std::string endpoints;
    for (int host = 0; host < hosts; ++host) {
      for (int local = 0; local < ranks_per_host; ++local) {
        if (!endpoints.empty()) endpoints += ",";
        endpoints += (*cluster)->HostName(host) + ":" + std::to_string(29500 + local);
      }
    }
    std::vector<std::unique_ptr<HostProcess>> workers;
    for (int rank = 0; rank < hosts * ranks_per_host; ++rank) {
      auto worker = (*cluster)->Start(rank / ranks_per_host,
                                      kWorker + " " + std::to_string(rank) + " " + endpoints);
      EXPECT_TRUE(worker.ok()) << worker.status().ToString();
      if (!worker.ok()) return {};
      workers.push_back(std::move(worker).value());
    }
    std::vector<std::string> outputs;
    for (size_t rank = 0; rank < workers.size(); ++rank) {
      const int exit_code = workers[rank]->Wait(240s);
      outputs.push_back(workers[rank]->Output());
      EXPECT_EQ(exit_code, 0) << "rank " << rank << " (exit " << exit_code
                              << "; -1: still running after 240 s):\n"
                              << outputs.back();
    }
    return outputs;
  }
};

TEST_F(AllReduceAcrossHostsTest, TwoHostsTwoRanksEachReduceHierarchically) {
  const std::vector<std::string> outputs = RunGroup(2, 2);
  ASSERT_EQ(outputs.size(), 4u);
  for (size_t rank = 0; rank < outputs.size(); ++rank) {
    EXPECT_NE(outputs[rank].find("topology: 2 hosts x 2 ranks; all-reduce: hierarchical"),
              std::string::npos)
        << "rank " << rank << ":\n"
        << outputs[rank];
    EXPECT_NE(outputs[rank].find("all-reduce: checked 144 operations"), std::string::npos)
        << "rank " << rank << ":\n"
        << outputs[rank];
  }
}

TEST_F(AllReduceAcrossHostsTest, OneRankPerHostUsesTheRing) {
  const std::vector<std::string> outputs = RunGroup(2, 1);
  ASSERT_EQ(outputs.size(), 2u);
  for (size_t rank = 0; rank < outputs.size(); ++rank) {
    EXPECT_NE(outputs[rank].find("topology: 2 hosts x 1 rank; all-reduce: ring"), std::string::npos)
        << "rank " << rank << ":\n"
        << outputs[rank];
    EXPECT_NE(outputs[rank].find("all-reduce: checked 144 operations"), std::string::npos)
        << "rank " << rank << ":\n"
        << outputs[rank];
  }
}

}  // namespace
}  // namespace cohort::testing
