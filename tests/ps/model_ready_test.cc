// The chief initialises the model, the workers wait for it (TensorFlow's "Waiting for model to be
// ready"): a worker that starts before the chief waits, then trains from the chief's values, not
// its own; a worker whose chief never comes fails within its bound naming the chief; and after a
// server restarts without a checkpoint, a worker waits for the chief to create the variables there
// again instead of failing or creating them itself.
#include <gtest/gtest.h>
#include <poll.h>
#include <unistd.h>

#include <cstring>

#include "testing/ps_cluster.h"
#include "training_worker.h"

namespace cohort::ps {
namespace {

using namespace std::chrono_literals;
using testing::Child;
using testing::ChildOutcome;
using testing::Describe;
using testing::PsCluster;
using testing::Report;
using testing::ServeUntilShutdown;

const cluster::TaskId kChief{"chief", 0};

// The chief's initial values: not what training_worker.h's workers would start from.
std::vector<DenseVariable> ChiefVariables() {
  std::vector<DenseVariable> variables = testing::ModelVariables();
  for (int j = 0; j < testing::kDimensions; ++j) variables[0].initial[j] = 0.001f * (j + 1);
  variables[1].initial = {0.5f};
  return variables;
}

// What a worker with another seed would have made of the same model.
std::vector<DenseVariable> WorkerVariables() {
  std::vector<DenseVariable> variables = testing::ModelVariables();
  for (float& value : variables[0].initial) value = 7.0f;
  variables[1].initial = {-3.0f};
  return variables;
}

EmbeddingTableSpec WorkerTable() {
  EmbeddingTableSpec table = testing::ModelTable();
  table.seed = 99;  // the chief's is 7
  return table;
}

std::vector<Child> StartServers(PsCluster& cluster, int count) {
  std::vector<Child> servers;
  std::vector<int> indices;
  for (int index = 0; index < count; ++index) {
    ParameterServerOptions options = cluster.ServerOptions(index);
    servers.push_back(
        cluster.Spawn([options] { return ServeUntilShutdown(options); }, options.listening_fd));
    indices.push_back(index);
  }
  cluster.CloseHandedOver(indices);
  return servers;
}

StatusOr<std::unique_ptr<ParameterServerClient>> ConnectAsChief(const PsCluster& cluster) {
  auto client = ParameterServerClient::Connect(testing::TrainingOptions(cluster, kChief));
  if (!client.ok()) return client.status();
  COHORT_RETURN_IF_ERROR((*client)->CreateVariables(ChiefVariables()));
  COHORT_RETURN_IF_ERROR((*client)->CreateTable(testing::ModelTable()));
  return client;
}

StatusOr<std::unique_ptr<ParameterServerClient>> ConnectAsWorker(
    const PsCluster& cluster, int index, std::chrono::milliseconds timeout) {
  auto client =
      ParameterServerClient::Connect(testing::TrainingOptions(cluster, {"worker", index}));
  if (!client.ok()) return client.status();
  COHORT_RETURN_IF_ERROR(
      (*client)->WaitForVariables(WorkerVariables(), {WorkerTable()}, kChief, timeout));
  return client;
}

// Whether the servers hold the chief's initial values (dense and table rows); reports what differs.
bool HoldsTheChiefsInitialValues(ParameterServerClient& client) {
  const std::vector<DenseVariable> chief = ChiefVariables();
  std::vector<float> w(testing::kDimensions), b(1);
  Status pulled = client.Pull({{"w", w.data()}, {"b", b.data()}});
  if (!pulled.ok()) {
    Report("pull: " + pulled.ToString());
    return false;
  }
  if (w != chief[0].initial || b != chief[1].initial) {
    Report("w[0] = " + std::to_string(w[0]) + ", b = " + std::to_string(b[0]));
    return false;
  }
  const EmbeddingTableSpec table = testing::ModelTable();
  std::vector<int64_t> ids = {5, 6};
  std::vector<float> rows(ids.size() * testing::kTableWidth);
  if (!client.PullRows(testing::kTable, ids.data(), ids.size(), rows.data()).ok()) return false;
  for (size_t r = 0; r < ids.size(); ++r) {
    for (int c = 0; c < testing::kTableWidth; ++c) {
      if (rows[r * testing::kTableWidth + c] !=
          InitialRowValue(table.seed, ids[r], c, table.init_scale)) {
        Report("row " + std::to_string(ids[r]) + " is not the chief's");
        return false;
      }
    }
  }
  return true;
}

TEST(ModelReady, WorkerStartedBeforeTheChiefWaitsThenTrainsFromTheChiefsValues) {
  PsCluster cluster(2, 1);
  std::vector<Child> servers = StartServers(cluster, 2);
  Child worker = cluster.Spawn([&cluster] {
    auto client = ConnectAsWorker(cluster, 0, 60s);
    if (!client.ok()) {
      Report("worker: " + client.status().ToString());
      return 1;
    }
    if (!HoldsTheChiefsInitialValues(**client)) return 2;
    Report("starts from the chief's values");
    return testing::TrainWorker(**client, 0, 150);
  });
  // The worker is waiting before the chief exists; it created nothing meanwhile.
  ASSERT_TRUE(worker.WaitForReport("worker:0 is waiting up to 60 s for chief:0", 30s))
      << worker.Report();
  // Nor does it go on without the chief: it still waits half a second later (it would say so at
  // once).
  EXPECT_FALSE(worker.WaitForReport("model is ready", 500ms)) << worker.Report();
  Child chief = cluster.Spawn([&cluster] {
    auto client = ConnectAsChief(cluster);
    Report("chief: " + client.status().ToString());
    return client.ok() ? 0 : 1;
  });
  ChildOutcome created = chief.Await(60s);
  EXPECT_EQ(created.exit_code, 0) << Describe(created);
  ChildOutcome trained = worker.Await(120s);
  EXPECT_EQ(trained.exit_code, 0) << Describe(trained);
  EXPECT_NE(trained.report.find("model is ready (chief:0 initialised it on all 2 ps"),
            std::string::npos)
      << trained.report;
  EXPECT_NE(trained.report.find("starts from the chief's values"), std::string::npos)
      << trained.report;
  // The chief ends the job once the model has converged.
  Child checker = cluster.Spawn([&cluster] {
    auto client = ConnectAsChief(cluster);
    if (!client.ok()) return 1;
    Status model = testing::CheckModel(**client);
    Report("model: " + model.ToString());
    return model.ok() && (*client)->ShutdownServers().ok() ? 0 : 1;
  });
  ChildOutcome checked = checker.Await(60s);
  EXPECT_EQ(checked.exit_code, 0) << Describe(checked);
  for (Child& server : servers) EXPECT_EQ(server.Await(30s).exit_code, 0);
}

TEST(ModelReady, WorkerWhoseChiefNeverComesFailsWithinTheBoundNamingIt) {
  PsCluster cluster(1, 1);
  std::vector<Child> servers = StartServers(cluster, 1);
  Child worker = cluster.Spawn([&cluster] {
    const auto started = std::chrono::steady_clock::now();
    auto client = ConnectAsWorker(cluster, 0, 1500ms);
    const auto took = std::chrono::steady_clock::now() - started;
    Report("worker: " + client.status().ToString());
    if (client.ok()) return 1;
    if (client.status().code() != Status::Code::kDeadlineExceeded) return 2;
    return took >= 1500ms && took < 10s ? 0 : 3;
  });
  ChildOutcome outcome = worker.Await(30s);
  EXPECT_EQ(outcome.exit_code, 0) << Describe(outcome);
  EXPECT_NE(outcome.report.find("worker:0 waited 1.5 s for chief:0 to initialise the model's 2 "
                                "variables and 1 embedding tables on all 1 ps"),
            std::string::npos)
      << outcome.report;
  EXPECT_NE(outcome.report.find("is not held by ps:0"), std::string::npos) << outcome.report;
  servers[0].Kill();
}

TEST(ModelReady, AfterAServerRestartsEmptyTheWorkerWaitsForTheChiefToCreateAgain) {
  PsCluster cluster(1, 1);
  std::vector<Child> servers = StartServers(cluster, 1);
  int go[2];
  ASSERT_EQ(pipe(go), 0);
  // Waits at most 60 s for the test's go-ahead.
  const auto wait_for_go = [&go] {
    pollfd ready{go[0], POLLIN, 0};
    char byte;
    return poll(&ready, 1, 60000) == 1 && read(go[0], &byte, 1) == 1;
  };
  // The chief creates the model, then (when told) pulls, which replays its creates on the
  // restarted server, and at the end shuts the job down.
  Child chief = cluster.Spawn([&] {
    auto client = ConnectAsChief(cluster);
    Report("chief: " + client.status().ToString());
    if (!client.ok() || !wait_for_go()) return 1;
    std::vector<float> w(testing::kDimensions);
    Status pulled = (*client)->Pull({{"w", w.data()}});
    Report("chief pulled: " + pulled.ToString());
    if (!pulled.ok() || !wait_for_go()) return 2;
    return (*client)->ShutdownServers().ok() ? 0 : 3;
  });
  ASSERT_TRUE(chief.WaitForReport("chief: OK", 30s)) << chief.Report();
  Child worker = cluster.Spawn([&cluster] {
    auto client = ConnectAsWorker(cluster, 0, 30s);
    if (!client.ok()) {
      Report("worker: " + client.status().ToString());
      return 1;
    }
    // Move the model away from its initial values, then pull until the restarted server holds
    // the chief's initial values again.
    std::vector<float> gradient_w(testing::kDimensions, 1.0f), gradient_b(1, 1.0f);
    if (!(*client)->Push({{"w", gradient_w.data()}, {"b", gradient_b.data()}}).ok()) return 2;
    Report("trained");
    const auto deadline = std::chrono::steady_clock::now() + 60s;
    while (std::chrono::steady_clock::now() < deadline) {
      std::vector<float> w(testing::kDimensions);
      Status pulled = (*client)->Pull({{"w", w.data()}});
      if (!pulled.ok()) {
        Report("pull: " + pulled.ToString());
        return 3;
      }
      if (w == ChiefVariables()[0].initial) {
        Report("holds the chief's initial values again");
        return 0;
      }
      std::this_thread::sleep_for(20ms);
    }
    return 4;
  });
  ASSERT_TRUE(worker.WaitForReport("trained", 30s)) << worker.Report();
  servers[0].Kill();
  // The replacement starts once the worker has found ps:0 gone.
  ASSERT_TRUE(
      worker.WaitForReport("ps:0 (" + cluster.spec().Endpoint({"ps", 0}) + ") unreachable", 30s))
      << worker.Report();
  ParameterServerOptions restarted = cluster.ServerOptions(0);  // no checkpoint: comes back empty
  Child replacement = cluster.Spawn([restarted] { return ServeUntilShutdown(restarted); });
  ASSERT_TRUE(worker.WaitForReport("came back without the model", 30s)) << worker.Report();
  EXPECT_NE(worker.Report().find("waiting for chief:0 to create it there again"), std::string::npos)
      << worker.Report();
  ASSERT_EQ(write(go[1], "g", 1), 1);
  ChildOutcome waited = worker.Await(60s);
  EXPECT_EQ(waited.exit_code, 0) << Describe(waited);
  EXPECT_NE(waited.report.find("reconnected to ps:0"), std::string::npos) << waited.report;
  ASSERT_EQ(write(go[1], "g", 1), 1);
  ChildOutcome chief_outcome = chief.Await(60s);
  EXPECT_EQ(chief_outcome.exit_code, 0) << Describe(chief_outcome);
  EXPECT_EQ(replacement.Await(30s).exit_code, 0);
  close(go[0]);
  close(go[1]);
}

}  // namespace
}  // namespace cohort::ps
