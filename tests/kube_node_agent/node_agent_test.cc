// The test node agent (testing/node_agent.h) against a real API server: pods that the operator's
// builders make run as local processes, reach each other by service name, restart in place,
// stop on deletion and report a killed container as the kubelet would.
#include "testing/node_agent.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <memory>
#include <string>

#include "job/spec_parser.h"
#include "kube/client/http_api.h"
#include "kube/client/kubeconfig.h"
#include "kube/objects/objects.h"
#include "testing/files.h"
#include "testing/host.h"
#include "testing/kube_test_cluster.h"
#include "testing/processes.h"
#include "testing/scratch_directory.h"
#include "testing/wait.h"

namespace cohort::testing {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;

const std::string kSourceDir = std::string(COHORT_TEST_DATA_DIR) + "/../..";

class NodeAgentTest : public KubeClusterTest {
 protected:
  void SetUp() override {
    KubeClusterTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    if (Status supported = CheckNodeAgentSupported(); !supported.ok()) {
      COHORT_SKIP_OR_FAIL_IN_CI(supported.ToString());
    }
    StatusOr<kube::ConnectionConfig> config =
        kube::LoadKubeconfig({cluster().admin_kubeconfig()}, "");
    ASSERT_TRUE(config.ok()) << config.status().ToString();
    api_ = std::make_unique<kube::HttpApi>(*config, kube::HttpApiOptions{});
  }

  // Creates the namespace and an agent (node "<namespace>-node") that takes its pods.
  void StartAgent(const std::string& namespace_name, const std::string& image_flag = "") {
    ASSERT_TRUE(cluster().CreateNamespace(namespace_name).ok());
    NodeAgentOptions options;
    options.node_name = namespace_name + "-node";
    if (!image_flag.empty()) {
      ASSERT_TRUE(options.images.AddFlag(image_flag).ok());
    }
    options.work_dir = scratch_.path() / namespace_name;
    options.schedule_namespace = namespace_name;
    options.restart_backoff = 200ms;
    StatusOr<std::unique_ptr<NodeAgent>> agent = NodeAgent::Start(*api_, std::move(options));
    ASSERT_TRUE(agent.ok()) << agent.status().ToString();
    agent_ = std::move(*agent);
  }

  json Pod(const std::string& namespace_name, const std::string& name) {
    StatusOr<json> pod = api_->Get(kube::PodResource(), namespace_name, name);
    return pod.ok() ? *pod : json();
  }

  // Waits for the pod's phase; the failure message shows the pod as last read.
  ::testing::AssertionResult WaitForPhase(const std::string& namespace_name,
                                          const std::string& name, const std::string& phase,
                                          std::chrono::milliseconds timeout = 60s) {
    json pod;
    bool reached = WaitUntil(
        [&] {
          pod = Pod(namespace_name, name);
          return pod.is_object() && pod["status"].value("phase", "") == phase;
        },
        timeout, 100ms);
    if (reached) return ::testing::AssertionSuccess();
    return ::testing::AssertionFailure()
           << "pod " << namespace_name << "/" << name << " never reached phase " << phase
           << "; last seen: " << pod.dump(1);
  }

  // The job's Secret (kube/objects), holding `secret`, which its pods read as COHORT_JOB_SECRET.
  void CreateJobSecret(const std::string& namespace_name, const job::Job& job,
                       const std::string& secret) {
    StatusOr<json> built = kube::BuildJobSecret(job, kube::Owner{}, secret);
    ASSERT_TRUE(built.ok()) << built.status().ToString();
    StatusOr<json> created = api_->Create(kube::SecretResource(), namespace_name, *built);
    ASSERT_TRUE(created.ok()) << created.status().ToString();
  }

  json CreatePod(const std::string& namespace_name, const json& pod) {
    StatusOr<json> created = api_->Create(kube::PodResource(), namespace_name, pod);
    EXPECT_TRUE(created.ok()) << created.status().ToString();
    return created.ok() ? *created : json();
  }

  static json ShellPod(const std::string& name, const std::string& script,
                       const std::string& restart_policy) {
    return {
        {"apiVersion", "v1"},
        {"kind", "Pod"},
        {"metadata", {{"name", name}, {"labels", {{"app", name}}}}},
        {"spec",
         {{"restartPolicy", restart_policy},
          {"terminationGracePeriodSeconds", 5},
          {"containers", json::array({{{"name", "main"},
                                       {"image", "unused"},
                                       {"command", json::array({"/bin/sh", "-c", script})}}})}}}};
  }

  ScratchDirectory scratch_;
  std::unique_ptr<kube::Api> api_;
  std::unique_ptr<NodeAgent> agent_;
};

// The hello example's pods and services, as the operator builds them, run to the end: the workers
// end Succeeded with exit code 0 and their logs; the parameter server serves until its pod is
// deleted, then stops on SIGTERM and the pod is gone.
TEST_F(NodeAgentTest, HelloJobRunsAndTheServerStopsOnDeletion) {
  const std::string ns = "agent-hello";
  StartAgent(ns, "localhost/hello=" + kSourceDir + "/examples/hello/replica.sh");
  ASSERT_TRUE(agent_);
  StatusOr<job::Job> job = job::LoadJobFile(kSourceDir + "/examples/hello/tfjob.yaml");
  ASSERT_TRUE(job.ok()) << job.status().ToString();
  job->metadata.namespace_name = ns;
  kube::Owner owner;
  owner.name = job->metadata.name;
  CreateJobSecret(ns, *job, "hello-secret");
  for (const auto& [type, count] :
       std::vector<std::pair<std::string, int>>{{"PS", 1}, {"Worker", 2}}) {
    for (int index = 0; index < count; ++index) {
      StatusOr<json> service = kube::BuildService(*job, owner, type, index, {});
      ASSERT_TRUE(service.ok()) << service.status().ToString();
      ASSERT_TRUE(api_->Create(kube::ServiceResource(), ns, *service).ok());
      StatusOr<json> pod = kube::BuildPod(*job, owner, type, index, {});
      ASSERT_TRUE(pod.ok()) << pod.status().ToString();
      CreatePod(ns, *pod);
    }
  }
  for (const std::string worker : {"hello-worker-0", "hello-worker-1"}) {
    ASSERT_TRUE(WaitForPhase(ns, worker, "Succeeded"));
    json pod = Pod(ns, worker);
    EXPECT_EQ(pod["spec"].value("nodeName", ""), ns + "-node");
    const json& status = pod["status"]["containerStatuses"][0];
    EXPECT_EQ(status["state"]["terminated"]["exitCode"], 0) << status.dump(1);
    EXPECT_EQ(status["state"]["terminated"]["reason"], "Completed");
    std::string log = ReadText(agent_->LogPath(ns, worker, "tensorflow", 0));
    EXPECT_NE(log.find("hello from a TFJob: I am pod " + worker), std::string::npos) << log;
    EXPECT_NE(log.find("hello-ps-0." + ns + ".svc:2222"), std::string::npos) << log;
    EXPECT_NE(log.find("done"), std::string::npos) << log;
  }
  ASSERT_TRUE(WaitForPhase(ns, "hello-ps-0", "Running"));
  EXPECT_EQ(Pod(ns, "hello-ps-0")["status"]["containerStatuses"][0]["ready"], true);

  ASSERT_TRUE(api_->Delete(kube::PodResource(), ns, "hello-ps-0").ok());
  EXPECT_TRUE(WaitUntil([&] { return Pod(ns, "hello-ps-0").is_null(); }, 30s, 100ms))
      << "the deleted pod is still there: " << Pod(ns, "hello-ps-0").dump(1);
  std::string log = ReadText(agent_->LogPath(ns, "hello-ps-0", "tensorflow", 0));
  EXPECT_NE(log.find("stopping: got SIGTERM"), std::string::npos) << log;
  EXPECT_EQ(agent_->PodIp(ns, "hello-ps-0"), "");
}

// An env variable from a Secret's key (the job secret's way into a replica) gets the key's value;
// a pod whose Secret is missing fails, naming the Secret.
TEST_F(NodeAgentTest, EnvFromASecretKeyIsTheSecretsValue) {
  const std::string ns = "agent-secret";
  StartAgent(ns);
  ASSERT_TRUE(agent_);
  const json secret = {{"apiVersion", "v1"},
                       {"kind", "Secret"},
                       {"metadata", {{"name", "job-secret"}}},
                       {"stringData", {{"COHORT_JOB_SECRET", "s3cret-value"}}}};
  ASSERT_TRUE(api_->Create(kube::SecretResource(), ns, secret).ok());
  const json from_secret = {
      {"name", "COHORT_JOB_SECRET"},
      {"valueFrom", {{"secretKeyRef", {{"name", "job-secret"}, {"key", "COHORT_JOB_SECRET"}}}}}};
  json reader = ShellPod("reader", "echo \"secret=$COHORT_JOB_SECRET\"", "Never");
  reader["spec"]["containers"][0]["env"] = json::array({from_secret});
  CreatePod(ns, reader);
  ASSERT_TRUE(WaitForPhase(ns, "reader", "Succeeded"));
  const std::string log = ReadText(agent_->LogPath(ns, "reader", "main", 0));
  EXPECT_NE(log.find("secret=s3cret-value\n"), std::string::npos) << log;

  json missing = ShellPod("missing", "true", "Never");
  json elsewhere = from_secret;
  elsewhere["valueFrom"]["secretKeyRef"]["name"] = "no-such-secret";
  missing["spec"]["containers"][0]["env"] = json::array({elsewhere});
  CreatePod(ns, missing);
  ASSERT_TRUE(WaitForPhase(ns, "missing", "Failed"));
  EXPECT_NE(Pod(ns, "missing")["status"].value("message", "").find("no-such-secret"),
            std::string::npos)
      << Pod(ns, "missing")["status"].dump();
}

// Two pods both use port 2222, each on its own IP; the client reaches the server by its service's
// name.
TEST_F(NodeAgentTest, PodsReachEachOtherByServiceName) {
  const std::string ns = "agent-net";
  StartAgent(ns);
  ASSERT_TRUE(agent_);
  json service = {{"apiVersion", "v1"},
                  {"kind", "Service"},
                  {"metadata", {{"name", "server"}}},
                  {"spec",
                   {{"clusterIP", "None"},
                    {"selector", {{"app", "server"}}},
                    {"ports", json::array({{{"port", 2222}}})}}}};
  ASSERT_TRUE(api_->Create(kube::ServiceResource(), ns, service).ok());
  const std::string server_script =
      "exec perl -MIO::Socket::INET -e '$s = IO::Socket::INET->new(LocalPort => 2222, Listen => 1, "
      "ReuseAddr => 1) or die \"listen: $!\"; $c = $s->accept; print \"got: \", scalar <$c>;'";
  const std::string client_script =
      "exec perl -MIO::Socket::INET -e 'for (1..100) { $c = IO::Socket::INET->new(\"server." + ns +
      ".svc:2222\") and last; select(undef, undef, undef, 0.2) } $c or die \"connect: $!\"; "
      "print $c \"hello from \", `hostname`;'";
  // The client listens on 2222 too, so that a shared port would fail one of them.
  CreatePod(ns, ShellPod("server", server_script, "Never"));
  CreatePod(ns, ShellPod("client",
                         "perl -MIO::Socket::INET -e 'IO::Socket::INET->new(LocalPort => 2222, "
                         "Listen => 1) or die \"listen: $!\"; sleep 30' & " +
                             client_script,
                         "Never"));
  ASSERT_TRUE(WaitForPhase(ns, "server", "Succeeded"));
  ASSERT_TRUE(WaitForPhase(ns, "client", "Succeeded"));
  std::string log = ReadText(agent_->LogPath(ns, "server", "main", 0));
  EXPECT_NE(log.find("got: hello from client"), std::string::npos) << log;
  EXPECT_NE(Pod(ns, "server")["status"].value("podIP", ""),
            Pod(ns, "client")["status"].value("podIP", ""));
}

// restartPolicy OnFailure: a failing container restarts in place until it succeeds, counted.
TEST_F(NodeAgentTest, OnFailureRestartsInPlace) {
  const std::string ns = "agent-restart";
  StartAgent(ns);
  ASSERT_TRUE(agent_);
  std::string counter = (scratch_.path() / "runs").string();
  CreatePod(ns, ShellPod("flaky",
                         "n=$(cat " + counter + " 2>/dev/null || echo 0); echo $((n + 1)) > " +
                             counter + "; echo run $n; [ $n -ge 2 ]",
                         "OnFailure"));
  ASSERT_TRUE(WaitForPhase(ns, "flaky", "Succeeded"));
  json status = Pod(ns, "flaky")["status"]["containerStatuses"][0];
  EXPECT_EQ(status["restartCount"], 2) << status.dump(1);
  EXPECT_EQ(status["lastState"]["terminated"]["exitCode"], 1) << status.dump(1);
  EXPECT_EQ(status["lastState"]["terminated"]["reason"], "Error");
  EXPECT_EQ(status["state"]["terminated"]["exitCode"], 0);
  EXPECT_NE(ReadText(agent_->LogPath(ns, "flaky", "main", 1)).find("run 1"), std::string::npos);
}

// Kill: the container dies of SIGKILL, reported as exit code 137 with the signal.
TEST_F(NodeAgentTest, KilledContainerReportsExitCode137) {
  const std::string ns = "agent-kill";
  StartAgent(ns);
  ASSERT_TRUE(agent_);
  CreatePod(ns, ShellPod("sleeper", "exec sleep 600", "Never"));
  ASSERT_TRUE(WaitForPhase(ns, "sleeper", "Running"));
  ASSERT_TRUE(agent_->Kill(ns, "sleeper").ok());
  ASSERT_TRUE(WaitForPhase(ns, "sleeper", "Failed"));
  json terminated = Pod(ns, "sleeper")["status"]["containerStatuses"][0]["state"]["terminated"];
  EXPECT_EQ(terminated["exitCode"], 137) << terminated.dump(1);
  EXPECT_EQ(terminated["signal"], 9);
  EXPECT_EQ(terminated["reason"], "Error");
  EXPECT_EQ(agent_->Kill(ns, "sleeper").code(), Status::Code::kNotFound);
}

// terminationMessagePolicy FallbackToLogsOnError: a failed run's message is the end of its log
// (80 lines at most).
TEST_F(NodeAgentTest, FailedRunsMessageIsTheEndOfItsLog) {
  const std::string ns = "agent-message";
  StartAgent(ns);
  ASSERT_TRUE(agent_);
  json pod = ShellPod("failing", "seq 1 100; echo cannot go on; exit 3", "Never");
  pod["spec"]["containers"][0]["terminationMessagePolicy"] = "FallbackToLogsOnError";
  CreatePod(ns, pod);
  ASSERT_TRUE(WaitForPhase(ns, "failing", "Failed"));
  json terminated = Pod(ns, "failing")["status"]["containerStatuses"][0]["state"]["terminated"];
  EXPECT_EQ(terminated["exitCode"], 3);
  std::string message = terminated.value("message", "");
  EXPECT_EQ(message.substr(0, 3), "22\n") << message;
  EXPECT_NE(message.find("99\n100\ncannot go on\n"), std::string::npos) << message;
}

// A container that ignores SIGTERM is SIGKILLed once the deletion's grace period has passed, and
// the pod is removed.
TEST_F(NodeAgentTest, DeletionKillsAfterTheGracePeriod) {
  const std::string ns = "agent-grace";
  StartAgent(ns);
  ASSERT_TRUE(agent_);
  CreatePod(
      ns, ShellPod("stubborn", "trap '' TERM; echo ignoring; while :; do sleep 1; done", "Always"));
  ASSERT_TRUE(WaitForPhase(ns, "stubborn", "Running"));
  ASSERT_TRUE(WaitUntil(
      [&] {
        return ReadText(agent_->LogPath(ns, "stubborn", "main", 0)).find("ignoring") !=
               std::string::npos;
      },
      30s));
  kube::DeleteOptions options;
  options.grace_period_seconds = 1;
  auto deleted_at = std::chrono::steady_clock::now();
  ASSERT_TRUE(api_->Delete(kube::PodResource(), ns, "stubborn", options).ok());
  EXPECT_TRUE(WaitUntil([&] { return Pod(ns, "stubborn").is_null(); }, 30s, 100ms))
      << Pod(ns, "stubborn").dump(1);
  EXPECT_GE(std::chrono::steady_clock::now() - deleted_at, 1s);
  EXPECT_EQ(agent_->PodIp(ns, "stubborn"), "");
}

// A container whose image maps to no command cannot start: the pod fails, saying which image.
TEST_F(NodeAgentTest, UnmappedImageFailsThePod) {
  const std::string ns = "agent-unmapped";
  StartAgent(ns);
  ASSERT_TRUE(agent_);
  json pod = ShellPod("unmapped", "", "Never");
  pod["spec"]["containers"][0].erase("command");
  pod["spec"]["containers"][0]["image"] = "example.com/not-mapped:1";
  CreatePod(ns, pod);
  ASSERT_TRUE(WaitForPhase(ns, "unmapped", "Failed"));
  std::string message = Pod(ns, "unmapped")["status"].value("message", "");
  EXPECT_NE(message.find("example.com/not-mapped:1"), std::string::npos) << message;
}

// The mnist example as pods without an operator: its pods and services, with 2 workers and a few
// steps, run cohort-train on this node, reach each other through TF_CONFIG's service names and end
// Succeeded with a saved model. A worker SIGKILLed mid-run makes its peer exit with the retryable
// code; both restart in place (OnFailure) and resume from the chief's backup. Only in a build
// with cohort-train (COHORT_WITH_TORCH): without it the test does not exist, rather than skip.
#ifdef COHORT_NODE_AGENT_TRAINS
TEST_F(NodeAgentTest, MnistWorkersTrainAndSaveAModel) {
  const std::string ns = "agent-mnist";
  const std::string train = std::string(COHORT_BINARY_DIR) + "/apps/cohort-train/cohort-train";
  StartAgent(ns, "localhost/mnist-train=" + train);
  ASSERT_TRUE(agent_);
  StatusOr<job::Job> job = job::LoadJobFile(kSourceDir + "/examples/mnist/tfjob.yaml");
  ASSERT_TRUE(job.ok()) << job.status().ToString();
  job->metadata.namespace_name = ns;
  job::ReplicaSpec& workers = job->replica_specs.at("Worker");
  workers.replicas = 2;
  const std::filesystem::path out = scratch_.path() / "mnist";
  workers.template_spec.containers[0].args = {"--epochs=2",
                                              "--steps_per_epoch=40",
                                              "--per_worker_batch=32",
                                              "--seed=7",
                                              "--threads=1",
                                              "--backup_every_steps=10",
                                              "--checkpoint_path=" + (out / "backup").string(),
                                              "--saved_model_path=" + (out / "model").string(),
                                              "--tensorboard_dir=" + (out / "logs").string()};
  kube::Owner owner;
  owner.name = job->metadata.name;
  CreateJobSecret(ns, *job, "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef");
  for (int index = 0; index < 2; ++index) {
    StatusOr<json> service = kube::BuildService(*job, owner, "Worker", index, {});
    ASSERT_TRUE(service.ok()) << service.status().ToString();
    ASSERT_TRUE(api_->Create(kube::ServiceResource(), ns, *service).ok());
  }
  for (int index = 0; index < 2; ++index) {
    StatusOr<json> pod = kube::BuildPod(*job, owner, "Worker", index, {});
    ASSERT_TRUE(pod.ok()) << pod.status().ToString();
    CreatePod(ns, *pod);
  }
  // Mid-run: once the chief has backed up twice (global step 20 of 80), worker 1 is killed.
  const std::filesystem::path state = out / "backup" / "chief" / "checkpoint";
  ASSERT_TRUE(
      WaitUntil([&] { return ReadText(state).find("ckpt-2") != std::string::npos; }, 240s, 100ms))
      << "no second backup; the chief's log:\n"
      << ReadText(agent_->LogPath(ns, "mnist-worker-0", "tensorflow", 0));
  ASSERT_TRUE(agent_->Kill(ns, "mnist-worker-1").ok());
  for (const std::string worker : {"mnist-worker-0", "mnist-worker-1"}) {
    ASSERT_TRUE(WaitForPhase(ns, worker, "Succeeded", 300s))
        << ReadText(agent_->LogPath(ns, worker, "tensorflow", 0));
    json status = Pod(ns, worker)["status"]["containerStatuses"][0];
    EXPECT_GE(status["restartCount"], 1) << status.dump(1);
    EXPECT_EQ(status["state"]["terminated"]["exitCode"], 0) << status.dump(1);
  }
  EXPECT_EQ(Pod(ns, "mnist-worker-1")["status"]["containerStatuses"][0]["lastState"]["terminated"]
                                     ["exitCode"],
            137);
  // The survivor asked to be restarted; both resumed from the backup, which is gone at the end.
  EXPECT_EQ(Pod(ns, "mnist-worker-0")["status"]["containerStatuses"][0]["lastState"]["terminated"]
                                     ["exitCode"],
            138);
  for (const std::string worker : {"mnist-worker-0", "mnist-worker-1"}) {
    std::string resumed = ReadText(agent_->LogPath(ns, worker, "tensorflow", 1));
    EXPECT_NE(resumed.find("resuming from epoch 1"), std::string::npos) << resumed;
    // The workers authenticated each other with the job secret from the job's Secret.
    for (int run = 0; run < 2; ++run) {
      const std::string log = ReadText(agent_->LogPath(ns, worker, "tensorflow", run));
      EXPECT_EQ(log.find("runs in open mode"), std::string::npos) << worker << ": " << log;
    }
  }
  EXPECT_TRUE(std::filesystem::exists(out / "model" / "manifest.json"));
  // The backup is gone; with a job secret the run has an identity, so its completion marker
  // stays (train/backup_and_restore.h), as in a local run.
  EXPECT_FALSE(std::filesystem::exists(out / "backup" / "chief"));
  EXPECT_TRUE(std::filesystem::exists(out / "backup" / "training_complete"));
}
#endif  // COHORT_NODE_AGENT_TRAINS

// The network namespaces of an agent whose process died are swept; a live process's are kept.
TEST(NodeAgentSweepTest, RemovesTheNetworksOfDeadAgentsOnly) {
  if (Status supported = CheckNodeAgentSupported(); !supported.ok()) {
    COHORT_SKIP_OR_FAIL_IN_CI(supported.ToString());
  }
  pid_t dead = fork();
  if (dead == 0) _exit(0);
  ASSERT_EQ(WaitForChild(dead, 10s), 0);
  const std::string orphan = "cohort-node-agent-" + std::to_string(dead) + "-0-bridge";
  const std::string live = "cohort-node-agent-" + std::to_string(getppid()) + "-0-bridge";
  ASSERT_EQ(RunCommand("ip netns add " + orphan).exit_code, 0);
  ASSERT_EQ(RunCommand("ip netns add " + live).exit_code, 0);
  SweepLeftoverNetworks();
  std::string left = RunCommand("ip netns list").output;
  RunCommand("ip netns delete " + live);
  RunCommand("ip netns delete " + orphan);
  EXPECT_EQ(left.find(orphan), std::string::npos) << left;
  EXPECT_NE(left.find(live), std::string::npos) << left;
}

}  // namespace
}  // namespace cohort::testing
