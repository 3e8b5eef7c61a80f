#include "collective/topology.h"

#include <gtest/gtest.h>

namespace cohort::collective {
namespace {

TEST(TopologyTest, NumbersHostsByTheirLowestRank) {
  Topology topology = Topology::FromHostLabels({7, 3, 7, 3, 1});
  EXPECT_EQ(topology.ranks(), 5);
  EXPECT_EQ(topology.hosts(), 3);
  EXPECT_EQ(topology.host_of_rank(), (std::vector<int>{0, 1, 0, 1, 2}));
  EXPECT_EQ(topology.RanksOn(0), (std::vector<int>{0, 2}));
  EXPECT_EQ(topology.RanksOn(1), (std::vector<int>{1, 3}));
  EXPECT_EQ(topology.RanksOn(2), (std::vector<int>{4}));
  EXPECT_EQ(topology.RingOrder(), (std::vector<int>{0, 2, 1, 3, 4}));
  EXPECT_FALSE(topology.IsUniformWithSeveralRanksPerHost());
  EXPECT_EQ(topology.Describe(), "3 hosts (2, 2, 1 ranks)");
}

TEST(TopologyTest, UniformWithSeveralRanksPerHost) {
  EXPECT_TRUE(Topology::FromHostLabels({0, 0, 1, 1}).IsUniformWithSeveralRanksPerHost());
  EXPECT_TRUE(Topology::FromHostLabels({0, 1, 0, 1}).IsUniformWithSeveralRanksPerHost());
  EXPECT_EQ(Topology::FromHostLabels({0, 0, 1, 1}).Describe(), "2 hosts x 2 ranks");
  EXPECT_FALSE(Topology::FromHostLabels({0, 1}).IsUniformWithSeveralRanksPerHost());
  EXPECT_FALSE(Topology::FromHostLabels({0, 0, 0}).IsUniformWithSeveralRanksPerHost());
  EXPECT_FALSE(Topology::FromHostLabels({0, 0, 1}).IsUniformWithSeveralRanksPerHost());
  EXPECT_FALSE(Topology::Flat(4).IsUniformWithSeveralRanksPerHost());
  EXPECT_EQ(Topology::Flat(1).Describe(), "1 host x 1 rank");
  EXPECT_EQ(Topology::Flat(0).hosts(), 0);
}

TEST(TopologyTest, UnknownHostIdentitiesAreHostsOfTheirOwn) {
  Topology topology = Topology::FromHostIdentities({"boot-a/pid", "", "boot-a/pid", "", "b"});
  EXPECT_EQ(topology.host_of_rank(), (std::vector<int>{0, 1, 0, 2, 3}));
  EXPECT_EQ(topology.hosts(), 4);
}

}  // namespace
}  // namespace cohort::collective
