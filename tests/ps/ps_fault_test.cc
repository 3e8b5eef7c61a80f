// Faults with real processes: a parameter server killed with SIGKILL comes back from the latest
// checkpoint and training completes; one that stays down fails the worker with a message naming
// it, within the retry bound; a killed worker rejoins without disturbing the others.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>

#include "ps/checkpoint.h"
#include "testing/ps_cluster.h"
#include "testing/scratch_directory.h"
#include "training_worker.h"

namespace cohort::ps {
namespace {

using namespace std::chrono_literals;
using testing::Child;
using testing::ChildOutcome;
using testing::ConnectAndCreate;
using testing::Describe;
using testing::PsCluster;
using testing::Report;
using testing::ServeUntilShutdown;

int ChiefChecksAndShutsDown(const PsCluster& cluster) {
  auto client = ConnectAndCreate(testing::TrainingOptions(cluster, {"chief", 0}));
  if (!client.ok()) return 1;
  Status model = testing::CheckModel(**client);
  Report("model: " + model.ToString());
  return model.ok() && (*client)->ShutdownServers().ok() ? 0 : 1;
}

TEST(ParameterServerFaults, KilledServerRestartsFromTheLatestCheckpoint) {
  cohort::testing::ScratchDirectory scratch("cohort-ps-fault");
  const std::string directory = scratch.path().string();
  PsCluster cluster(2, 1);
  std::vector<Child> servers;
  for (int index = 0; index < 2; ++index) {
    ParameterServerOptions options = cluster.ServerOptions(index);
    options.checkpoint_dir = directory;
    servers.push_back(
        cluster.Spawn([options] { return ServeUntilShutdown(options); }, options.listening_fd));
  }
  cluster.CloseHandedOver({0, 1});
  Child worker = cluster.Spawn([&cluster, directory] {
    auto client = ConnectAndCreate(testing::TrainingOptions(cluster, {"worker", 0}));
    if (!client.ok()) return 1;
    testing::TrainWorker(**client, 0, 40);
    auto manifest = (*client)->SaveCheckpoint(directory, 40);
    if (!manifest.ok()) {
      Report("save failed: " + manifest.status().ToString());
      return 2;
    }
    Report("checkpoint saved");
    return testing::TrainWorker(**client, 0, 150, 10ms);
  });
  ASSERT_TRUE(worker.WaitForReport("checkpoint saved", 60s)) << worker.Report();
  servers[1].Kill();
  // The replacement starts once the worker has found ps:1 gone.
  const std::string ps1 = "ps:1 (" + cluster.spec().Endpoint({"ps", 1}) + ") unreachable";
  ASSERT_TRUE(worker.WaitForReport(ps1, 30s)) << worker.Report();
  ParameterServerOptions restarted = cluster.ServerOptions(1);  // binds its endpoint's port
  restarted.checkpoint_dir = directory;
  Child replacement = cluster.Spawn([restarted] { return ServeUntilShutdown(restarted); });
  ChildOutcome trained = worker.Await(120s);
  EXPECT_EQ(trained.exit_code, 0) << Describe(trained);
  EXPECT_NE(trained.report.find("reconnected to ps:1"), std::string::npos) << trained.report;
  Child chief = cluster.Spawn([&cluster] { return ChiefChecksAndShutsDown(cluster); });
  ChildOutcome checked = chief.Await(60s);
  EXPECT_EQ(checked.exit_code, 0) << Describe(checked);
  ChildOutcome back = replacement.Await(30s);
  EXPECT_EQ(back.exit_code, 0) << Describe(back);
  EXPECT_NE(back.report.find("serving; restored step 40"), std::string::npos) << back.report;
  EXPECT_EQ(servers[0].Await(30s).exit_code, 0);
}

TEST(ParameterServerFaults, ServerThatStaysDownFailsTheWorkerNamingIt) {
  PsCluster cluster(1, 1);
  ParameterServerOptions server_options = cluster.ServerOptions(0);
  Child server = cluster.Spawn([server_options] { return ServeUntilShutdown(server_options); },
                               server_options.listening_fd);
  cluster.CloseHandedOver({0});
  Child worker = cluster.Spawn([&cluster] {
    auto options = testing::TrainingOptions(cluster, {"worker", 0});
    options.connection.retry_timeout = 1s;
    auto client = ConnectAndCreate(options);
    if (!client.ok()) return 1;
    Report("ready");
    std::vector<float> w(testing::kDimensions);
    while (true) {
      Status pulled = (*client)->Pull({{"w", w.data()}});
      if (!pulled.ok()) {
        Report("pull: " + pulled.ToString());
        return pulled.code() == Status::Code::kUnavailable ? 0 : 2;
      }
      std::this_thread::sleep_for(20ms);
    }
  });
  ASSERT_TRUE(worker.WaitForReport("ready", 30s)) << worker.Report();
  server.Kill();
  const auto killed = std::chrono::steady_clock::now();
  ChildOutcome outcome = worker.Await(30s);
  const auto took = std::chrono::steady_clock::now() - killed;
  EXPECT_EQ(outcome.exit_code, 0) << Describe(outcome);
  EXPECT_LT(took, 10s);
  EXPECT_NE(outcome.report.find("ps:0 (" + cluster.spec().Endpoint({"ps", 0}) +
                                ") unreachable for 1 s, giving up"),
            std::string::npos)
      << outcome.report;
}

TEST(ParameterServerFaults, KilledWorkerRejoinsWithoutDisturbingTheOthers) {
  PsCluster cluster(1, 2);
  ParameterServerOptions server_options = cluster.ServerOptions(0);
  Child server = cluster.Spawn([server_options] { return ServeUntilShutdown(server_options); },
                               server_options.listening_fd);
  cluster.CloseHandedOver({0});
  auto train = [&cluster](int index, int steps, bool check_not_reset) {
    auto client = ConnectAndCreate(testing::TrainingOptions(cluster, {"worker", index}));
    if (!client.ok()) return 1;
    if (check_not_reset) {
      // The model the others trained is still there: this worker's create changed nothing.
      std::vector<float> w(testing::kDimensions);
      if (!(*client)->Pull({{"w", w.data()}}).ok()) return 2;
      bool trained = false;
      for (float value : w) trained = trained || value != 0.0f;
      Report(trained ? "rejoined a trained model" : "model was reset");
      if (!trained) return 3;
    }
    return testing::TrainWorker(**client, index, steps, 5ms);
  };
  Child worker0 = cluster.Spawn([&] { return train(0, 200, false); });
  Child doomed = cluster.Spawn([&] { return train(1, 100000, false); });
  ASSERT_TRUE(doomed.WaitForReport("step 20", 60s)) << doomed.Report();
  doomed.Kill();
  ASSERT_TRUE(worker0.Report().find("loss") == std::string::npos) << "worker:0 finished too soon";
  Child rejoined = cluster.Spawn([&] { return train(1, 100, true); });
  ChildOutcome outcome0 = worker0.Await(120s);
  ChildOutcome outcome1 = rejoined.Await(120s);
  EXPECT_EQ(outcome0.exit_code, 0) << Describe(outcome0);
  EXPECT_EQ(outcome1.exit_code, 0) << Describe(outcome1);
  EXPECT_NE(outcome1.report.find("rejoined a trained model"), std::string::npos);
  // worker:0 never saw an error.
  EXPECT_EQ(outcome0.report.find("failed"), std::string::npos) << outcome0.report;
  Child chief = cluster.Spawn([&cluster] { return ChiefChecksAndShutsDown(cluster); });
  EXPECT_EQ(chief.Await(60s).exit_code, 0);
  EXPECT_EQ(server.Await(30s).exit_code, 0);
}

}  // namespace
}  // namespace cohort::ps
