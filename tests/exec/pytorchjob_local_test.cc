// A PyTorchJob run locally: each replica's environment reaches its peers on this machine
// (MASTER_ADDR the master's local host, MASTER_PORT its local port, the rendezvous at worker 0's
// local port), inherited values of the kind's variables never leak in, and a job whose master
// checks its environment and exits 0 succeeds through the real executor.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "exec/local_jobs.h"
#include "exec/replica_environment.h"
#include "exec_test_support.h"
#include "job/reconciler.h"

namespace cohort::exec {
namespace {

constexpr const char* kMasterAndWorker = R"(apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata:
  name: local-mnist
spec:
  pytorchReplicaSpecs:
    Master:
      replicas: 1
      template:
        spec:
          containers:
            - name: log-shipper
              image: fluent-bit:3
            - name: pytorch
              image: test
              env:
                - name: LOGLEVEL
                  value: DEBUG
              command: [/bin/sh, -c, 'MASTER_SCRIPT']
    Worker:
      replicas: 1
      template:
        spec:
          containers:
            - name: pytorch
              image: test
              command: [/bin/sh, -c, 'WORKER_SCRIPT']
)";

std::string WithScripts(const std::string& master, const std::string& worker) {
  std::string text = kMasterAndWorker;
  text.replace(text.find("MASTER_SCRIPT"), std::string("MASTER_SCRIPT").size(), master);
  text.replace(text.find("WORKER_SCRIPT"), std::string("WORKER_SCRIPT").size(), worker);
  return text;
}

TEST(PyTorchJobLocalEnvironmentTest, TheMasterIsReachedAtItsLocalEndpoint) {
  job::Job job = JobFromYaml(WithScripts("true", "true"));
  StatusOr<const job::Container*> container = ReplicaContainer(job, "Master");
  ASSERT_TRUE(container.ok()) << container.status().ToString();
  EXPECT_EQ((*container)->name, "pytorch") << "the kind's container runs, not the sidecar";
  const std::map<std::string, int> ports = {{"master-0", 41000}, {"worker-0", 41001}};
  std::map<std::string, std::string> worker = ReplicaEnvironment(job, "Worker", 0, ports, "s");
  EXPECT_EQ(worker["MASTER_ADDR"], "localhost");
  EXPECT_EQ(worker["PET_MASTER_ADDR"], "localhost");
  EXPECT_EQ(worker["MASTER_PORT"], "41000");
  EXPECT_EQ(worker["PET_MASTER_PORT"], "41000");
  EXPECT_EQ(worker["WORLD_SIZE"], "2");
  EXPECT_EQ(worker["RANK"], "1");
  EXPECT_EQ(worker["PET_NODE_RANK"], "1");
  EXPECT_EQ(worker["PET_NNODES"], "2");
  EXPECT_EQ(worker["PYTHONUNBUFFERED"], "1");
  std::map<std::string, std::string> master = ReplicaEnvironment(job, "Master", 0, ports, "s");
  EXPECT_EQ(master["RANK"], "0");
  EXPECT_EQ(master["LOGLEVEL"], "DEBUG") << "the pytorch container's own env";
}

TEST(PyTorchJobLocalEnvironmentTest, InheritedValuesOfTheKindsVariablesDoNotLeakIn) {
  setenv("MASTER_ADDR", "elsewhere", 1);
  setenv("PET_RDZV_ENDPOINT", "elsewhere:1", 1);
  const std::string elastic = R"(apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata:
  name: local-elastic
spec:
  elasticPolicy:
    maxReplicas: 2
  pytorchReplicaSpecs:
    Worker:
      replicas: 2
      template:
        spec:
          containers:
            - name: pytorch
              image: test
              command: [/bin/true]
)";
  job::Job job = JobFromYaml(elastic);
  std::map<std::string, std::string> environment =
      ReplicaEnvironment(job, "Worker", 1, {{"worker-0", 42000}, {"worker-1", 42001}}, "s");
  EXPECT_EQ(environment.count("MASTER_ADDR"), 0u) << "a job without a Master has no master";
  EXPECT_EQ(environment["PET_RDZV_ENDPOINT"], "localhost:42000");
  EXPECT_EQ(environment["PET_NNODES"], "2:2");
  EXPECT_EQ(environment["PET_RDZV_BACKEND"], "c10d");
  unsetenv("MASTER_ADDR");
  unsetenv("PET_RDZV_ENDPOINT");
}

// Both replicas check what they were told, under restartPolicy Never so that a wrong value fails
// the job; the master, which decides the job, waits (at most 20 s) for the worker's check to pass.
TEST(PyTorchJobLocalRunTest, AJobWhoseReplicasFindTheirMasterSucceeds) {
  ScratchDirectory home;
  LocalJobs jobs(home.path());
  const std::string worker_ok = (home.path() / "worker-ok").string();
  const std::string check =
      "test \"$MASTER_ADDR\" = localhost && test -n \"$MASTER_PORT\" && test \"$WORLD_SIZE\" = 2";
  std::string text =
      WithScripts(check + " && test \"$RANK\" = 0 && for i in $(seq 200); do test -f " + worker_ok +
                      " && exit 0; sleep 0.1; done; exit 1",
                  check + " && test \"$RANK\" = 1 && touch " + worker_ok);
  const std::string replicas = "      replicas: 1\n";
  const std::string never = "      restartPolicy: Never\n";
  for (size_t at = text.find(replicas); at != std::string::npos;
       at = text.find(replicas, at + never.size() + 1)) {
    text.insert(at, never);
  }
  job::Job job = JobFromYaml(text);
  ASSERT_EQ(job.replica_specs.at("Worker").restart_policy, job::RestartPolicy::kNever);
  ASSERT_EQ(job.replica_specs.at("Master").restart_policy, job::RestartPolicy::kNever);
  StatusOr<CreatedJob> created = jobs.Create(job, ImageMap());
  ASSERT_TRUE(created.ok()) << created.status().ToString();
  StatusOr<job::JobStatus> status = jobs.Supervise(std::move(*created), ImageMap());
  ASSERT_TRUE(status.ok()) << status.status().ToString();
  EXPECT_EQ(job::JobState(*status), "Succeeded");
  ASSERT_FALSE(status->conditions.empty());
  EXPECT_EQ(status->conditions.back().reason, "PyTorchJobSucceeded");
  EXPECT_EQ(status->conditions.back().message, "PyTorchJob local-mnist is successfully completed.");
}

// The restart race through the real executor, with real processes: worker-0 (rank 1) dies in its
// first run (exit 137, as SIGKILL would end it; `$$` would be a variable reference's escape), and
// the master, a slow survivor of that group, exits with its report "peer rank:1 died" only once
// worker-0's next run has started (it waits for the file that run writes, at most 20 s). The report
// is about the killed run, of generation 0; the new run, of generation 1, must neither be stopped
// nor have its exit counted: under backoffLimit 1 the job succeeds, the stale report is recorded as
// StalePeerReport, and nothing is stopped as Unhealthy. (Before generations, the new run was
// stopped, its exit counted, and the job failed.)
TEST(PyTorchJobLocalRunTest, ASlowSurvivorsReportDoesNotStopTheKilledReplicasNewRun) {
  ScratchDirectory home;
  LocalJobs jobs(home.path());
  const std::string dir = home.path().string();
  const std::string wait_for = "for i in $(seq 200); do test -f " + dir +
                               "/FILE && break; "
                               "sleep 0.1; done; test -f " +
                               dir + "/FILE || exit 3; ";
  auto waiting_for = [&](const std::string& file) {
    std::string text = wait_for;
    for (size_t at = text.find("FILE"); at != std::string::npos; at = text.find("FILE", at)) {
      text.replace(at, 4, file);
    }
    return text;
  };
  const std::string master =
      "if [ ! -f " + dir + "/master-ran ]; then touch " + dir + "/master-ran; " +
      waiting_for("worker-second-run") +
      "echo \"peer rank:1 died (closed the connection)\" > \"$COHORT_TERMINATION_MESSAGE_PATH\"; "
      "exit 1; fi; touch " +
      dir + "/master-second-run";
  const std::string worker = "if [ ! -f " + dir + "/worker-ran ]; then touch " + dir +
                             "/worker-ran; exit 137; fi; touch " + dir + "/worker-second-run; " +
                             waiting_for("master-second-run") + "exit 0";
  std::string text = WithScripts(master, worker);
  text.replace(text.find("spec:\n  pytorchReplicaSpecs"), std::string("spec:\n").size(),
               "spec:\n  runPolicy:\n    backoffLimit: 1\n");
  job::Job job = JobFromYaml(text);
  ASSERT_EQ(job.run_policy.backoff_limit, 1);
  StatusOr<CreatedJob> created = jobs.Create(job, ImageMap());
  ASSERT_TRUE(created.ok()) << created.status().ToString();
  const JobKey key = created->key;
  StatusOr<job::JobStatus> status = jobs.Supervise(std::move(*created), ImageMap());
  ASSERT_TRUE(status.ok()) << status.status().ToString();
  ASSERT_FALSE(status->conditions.empty());
  EXPECT_EQ(job::JobState(*status), "Succeeded") << status->conditions.back().message;
  StatusOr<std::vector<job::Event>> events = jobs.store().ReadEvents(key);
  ASSERT_TRUE(events.ok()) << events.status().ToString();
  std::vector<std::string> reasons;
  for (const job::Event& event : *events) reasons.push_back(event.reason);
  EXPECT_THAT(reasons, ::testing::Contains("StalePeerReport"));
  EXPECT_THAT(reasons, ::testing::Not(::testing::Contains("Unhealthy")));
}

}  // namespace
}  // namespace cohort::exec
