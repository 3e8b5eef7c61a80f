// `cohort operator`'s flags and environment, and its clean stop.
#include "kube/operator/operator_command.h"

#include <gtest/gtest.h>

#include <map>
#include <thread>

#include "fake_api.h"
#include "job/pytorchjob.h"
#include "job/tfjob.h"
#include "operator_fixture.h"
#include "testing/wait.h"

namespace cohort::kube::testing {
namespace {

using namespace std::chrono_literals;

std::function<std::string(const std::string&)> Environment(
    std::map<std::string, std::string> variables) {
  return [variables](const std::string& name) {
    auto found = variables.find(name);
    return found == variables.end() ? std::string() : found->second;
  };
}

TEST(OperatorCommandTest, TakesTheIdentityAndLeaseNamespaceFromThePod) {
  OperatorFlags flags;
  flags.leader_elect = true;
  flags.workers = 4;
  flags.cluster_domain = "cluster.local";
  StatusOr<OperatorOptions> options = MakeOperatorOptions(
      flags, Environment({{"POD_NAME", "cohort-operator-5d9f"}, {"POD_NAMESPACE", "cohort"}}));
  ASSERT_TRUE(options.ok()) << options.status().ToString();
  EXPECT_EQ(options->identity.rfind("cohort-operator-5d9f_", 0), 0u) << options->identity;
  ASSERT_TRUE(options->leader_election);
  EXPECT_EQ(options->leader_election->lease_namespace, "cohort");
  EXPECT_EQ(options->leader_election->lease_name, "cohort-operator");
  EXPECT_EQ(options->leader_election->identity, options->identity);
  EXPECT_EQ(options->workers, 4);
  EXPECT_EQ(options->objects.cluster_domain, "cluster.local");
  EXPECT_TRUE(options->namespace_name.empty());

  flags.leader_elect = false;
  options = MakeOperatorOptions(flags, Environment({}));
  ASSERT_TRUE(options.ok());
  EXPECT_FALSE(options->leader_election);
}

TEST(OperatorCommandTest, RefusesBadFlagsNamingThem) {
  auto message = [](OperatorFlags flags) {
    StatusOr<OperatorOptions> options = MakeOperatorOptions(flags, Environment({}));
    return options.ok() ? std::string("ok") : options.status().message();
  };
  OperatorFlags flags;
  flags.workers = 0;
  EXPECT_EQ(message(flags), "--workers 0: must be from 1 to 64");
  flags = {};
  flags.namespace_name = "Bad_Namespace";
  EXPECT_NE(message(flags).find("--namespace \"Bad_Namespace\""), std::string::npos);
  flags = {};
  flags.cluster_domain = "-cluster";
  EXPECT_NE(message(flags).find("--cluster-domain"), std::string::npos);
  flags = {};
  flags.leader_elect = true;
  flags.lease_name = "Lease!";
  EXPECT_NE(message(flags).find("--lease-name"), std::string::npos);
  flags = {};
  flags.resync_period_seconds = -1;
  EXPECT_EQ(message(flags), "--resync-period -1: must be from 0 (off) to 604800 seconds");
}

TEST(OperatorCommandTest, EnableSchemeNamesTheKindsRunAndEveryKindRunsWithoutIt) {
  OperatorFlags flags;
  StatusOr<OperatorOptions> options = MakeOperatorOptions(flags, Environment({}));
  ASSERT_TRUE(options.ok());
  EXPECT_EQ(options->kinds,
            (std::vector<const job::JobKind*>{&job::TFJobKind(), &job::PyTorchJobKind()}));
  // Kubeflow's spelling, any case, the plural too; a kind named twice runs once.
  flags.enabled_kinds = {"pytorchjob"};
  options = MakeOperatorOptions(flags, Environment({}));
  ASSERT_TRUE(options.ok());
  EXPECT_EQ(options->kinds, std::vector<const job::JobKind*>{&job::PyTorchJobKind()});
  flags.enabled_kinds = {"PyTorchJobs", "TFJob", "tfjobs"};
  options = MakeOperatorOptions(flags, Environment({}));
  ASSERT_TRUE(options.ok());
  EXPECT_EQ(options->kinds,
            (std::vector<const job::JobKind*>{&job::PyTorchJobKind(), &job::TFJobKind()}));
  flags.enabled_kinds = {"tfjob", "mpijob"};
  options = MakeOperatorOptions(flags, Environment({}));
  ASSERT_FALSE(options.ok());
  EXPECT_EQ(options.status().message(),
            "--enable-scheme \"mpijob\": not a job kind Cohort runs (tfjob, pytorchjob)");
}

TEST(OperatorCommandTest, TheResyncPeriodIsOffUnlessGiven) {
  OperatorFlags flags;
  StatusOr<OperatorOptions> options = MakeOperatorOptions(flags, Environment({}));
  ASSERT_TRUE(options.ok());
  EXPECT_EQ(options->resync_period.count(), 0);
  flags.resync_period_seconds = 30;
  options = MakeOperatorOptions(flags, Environment({}));
  ASSERT_TRUE(options.ok());
  EXPECT_EQ(options->resync_period, std::chrono::milliseconds(30000));
}

TEST(OperatorCommandTest, AStopRequestStopsTheOperatorAndReleasesTheLease) {
  FakeApi api;
  OperatorFlags flags;
  flags.leader_elect = true;
  StatusOr<OperatorOptions> options = MakeOperatorOptions(flags, Environment({}));
  ASSERT_TRUE(options.ok());
  options->informer.watch_timeout = 1s;
  options->queue_poll = 20ms;
  options->log = nullptr;
  Operator op(api, TestBuilders(), *options);
  std::atomic<int> stop{0};
  std::thread runner([&] { RunOperatorUntil(op, stop, 10ms); });
  EXPECT_TRUE(cohort::testing::WaitUntil([&] { return op.Acting(); }, 20s));
  stop = 1;
  runner.join();
  EXPECT_FALSE(op.Acting());
  std::optional<nlohmann::json> lease = api.Object("leases", "default", "cohort-operator");
  ASSERT_TRUE(lease);
  EXPECT_EQ((*lease)["spec"]["holderIdentity"], "");
}

}  // namespace
}  // namespace cohort::kube::testing
