// cohort/cluster.h: TF_CONFIG read as TensorFlow reads it; none means a process alone.
#include "cohort/cluster.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include "cohort/status.h"

namespace cohort {
namespace {

TEST(Cluster, WithoutTfConfigTrainsAlone) {
  const char* saved = std::getenv("TF_CONFIG");
  const std::string kept = saved ? saved : "";
  unsetenv("TF_CONFIG");
  const Cluster cluster = Cluster::FromEnvironment();
  if (saved) setenv("TF_CONFIG", kept.c_str(), 1);
  EXPECT_TRUE(cluster.alone());
  EXPECT_TRUE(cluster.is_chief());
  EXPECT_EQ(cluster.rank(), 0);
  EXPECT_EQ(cluster.world_size(), 1);
  EXPECT_EQ(cluster.task().ToString(), "worker:0");
  EXPECT_TRUE(cluster.peers().empty());
  EXPECT_EQ(cluster.tasks().size(), 1u);
}

TEST(Cluster, ReadsRolesRanksChiefAndPeers) {
  const Cluster cluster = Cluster::FromTfConfig(
      R"({"cluster":{"chief":["c:2222"],"worker":["w0:2222","w1:2222"],"evaluator":["e:2222"]},)"
      R"("task":{"type":"worker","index":1},"environment":"cloud"})");
  EXPECT_FALSE(cluster.alone());
  EXPECT_FALSE(cluster.is_chief());
  EXPECT_EQ(cluster.task().ToString(), "worker:1");
  EXPECT_EQ(cluster.task().address, "w1:2222");
  EXPECT_EQ(cluster.rank(), 2);  // chief first, then workers by index
  EXPECT_EQ(cluster.world_size(), 3);
  EXPECT_EQ(cluster.chief().ToString(), "chief:0");
  EXPECT_EQ(cluster.chief().address, "c:2222");
  ASSERT_EQ(cluster.tasks().size(), 4u);
  EXPECT_EQ(cluster.tasks()[0].ToString(), "chief:0");
  EXPECT_EQ(cluster.tasks()[1].ToString(), "worker:0");
  EXPECT_EQ(cluster.tasks()[3].ToString(), "evaluator:0");
  EXPECT_EQ(cluster.peers().size(), 3u);
  EXPECT_EQ(cluster.NumTasks("worker"), 2);
}

TEST(Cluster, WorkerZeroLeadsWithoutAChief) {
  const Cluster cluster = Cluster::FromTfConfig(
      R"({"cluster":{"worker":["a:1","b:2"]},"task":{"type":"worker","index":0}})");
  EXPECT_TRUE(cluster.is_chief());
  EXPECT_EQ(cluster.rank(), 0);
  EXPECT_EQ(cluster.chief().ToString(), "worker:0");
}

TEST(Cluster, AParameterServerHasNoRank) {
  const Cluster cluster = Cluster::FromTfConfig(
      R"({"cluster":{"chief":["c:1"],"ps":["p:1"],"worker":["w:1"]},"task":{"type":"ps","index":0}})");
  EXPECT_EQ(cluster.rank(), -1);
  EXPECT_EQ(cluster.world_size(), 2);
  EXPECT_EQ(cluster.NumTasks("ps"), 1);
}

TEST(Cluster, MalformedTfConfigNamesThePath) {
  try {
    Cluster::FromTfConfig(
        R"({"cluster":{"worker":["a:1","b:2"]},"task":{"type":"worker","index":3}})");
    FAIL() << "no error";
  } catch (const Error& error) {
    EXPECT_EQ(error.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(std::string(error.what()).find("task.index"), std::string::npos) << error.what();
  }
}

TEST(Cluster, EmptyTfConfigVariableIsAnError) {
  const char* saved = std::getenv("TF_CONFIG");
  const std::string kept = saved ? saved : "";
  setenv("TF_CONFIG", "", 1);
  EXPECT_THROW(Cluster::FromEnvironment(), Error);
  if (saved) {
    setenv("TF_CONFIG", kept.c_str(), 1);
  } else {
    unsetenv("TF_CONFIG");
  }
}

}  // namespace
}  // namespace cohort
