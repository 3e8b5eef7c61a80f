// Parsing, defaults, validation, writing and reconciling a job of a kind that is not TFJob (the
// ShellJob test double of test_kind.h), and the TFJob kind's own table and hooks.
#include "job/job_kind.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "job/defaults.h"
#include "job/reconciler.h"
#include "job/spec_parser.h"
#include "job/spec_writer.h"
#include "job/tfjob.h"
#include "job/validation.h"
#include "manifest_text.h"
#include "testing/test_kind.h"

namespace cohort::job {
namespace {

using testing::BothKindsRegistry;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using testing::kLeader;
using testing::kModeField;
using testing::kNode;
using testing::kTolerateNodeFailuresField;
using testing::ShellKind;
using testing::ShellRegistry;

constexpr const char* kShellJob = R"(apiVersion: example.com/v1alpha1
kind: ShellJob
metadata:
  name: demo
  namespace: ns
spec:
  mode: serial
  shellReplicaSpecs:
    node:
      replicas: 2
      template:
        spec:
          containers:
            - name: shell
              image: busybox
              command: [sh, -c, "echo hi"]
)";

// ---- The TFJob kind's table ----

TEST(TFJobKindTest, HasTheOperatorsNames) {
  const JobKind& kind = TFJobKind();
  EXPECT_EQ(kind.api_version(), "kubeflow.org/v1");
  EXPECT_EQ(kind.name(), "TFJob");
  EXPECT_EQ(kind.facts().plural, "tfjobs");
  EXPECT_EQ(kind.facts().replica_specs_field, "tfReplicaSpecs");
  EXPECT_EQ(kind.facts().container_name, "tensorflow");
  EXPECT_EQ(kind.facts().port_name, "tfjob-port");
  EXPECT_EQ(kind.facts().port, 2222);
  EXPECT_THAT(kind.facts().replica_types,
              ElementsAre("Chief", "Evaluator", "Master", "PS", "Worker"));
  EXPECT_THAT(kind.facts().chief_types, ElementsAre("Chief", "Master"));
  EXPECT_EQ(kind.Reason(kConditionRunning), "TFJobRunning");
  EXPECT_EQ(kind.facts().controller_name, "tfjob-controller");
  EXPECT_EQ(kind.ResourceName(), "tfjob.kubeflow.org");
  EXPECT_EQ(kind.CanonicalReplicaType("ps"), "PS");
  EXPECT_EQ(kind.CanonicalReplicaType("Sidecar"), "Sidecar");
}

TEST(TFJobKindTest, TheSuccessRuleFollowsSuccessPolicy) {
  Job job = NewTFJob();
  EXPECT_EQ(TFJobKind().WorkerSuccessRule(job), JobKind::WorkerSuccess::kFirstWorker);
  job.kind_spec[kSuccessPolicyField] = kSuccessPolicyAllWorkers;
  EXPECT_EQ(TFJobKind().WorkerSuccessRule(job), JobKind::WorkerSuccess::kAllWorkers);
}

TEST(TFJobKindTest, DynamicWorkersMayFail) {
  Job job = NewTFJob();
  EXPECT_FALSE(TFJobKind().ToleratesFailure(job, kWorker));
  job.kind_spec[kEnableDynamicWorkerField] = true;
  EXPECT_TRUE(TFJobKind().ToleratesFailure(job, kWorker));
  EXPECT_FALSE(TFJobKind().ToleratesFailure(job, kPS));
}

TEST(TFJobKindTest, TfConfigOnlyForADistributedJob) {
  Job job = NewTFJob();
  job.metadata.name = "mnist";
  job.replica_specs[kWorker].replicas = 1;
  auto endpoint = [](const std::string&, int index) {
    return "localhost:" + std::to_string(4000 + index);
  };
  EXPECT_THAT(TFJobKind().ReplicaEnvironment(job, kWorker, 0, endpoint), IsEmpty());
  job.replica_specs[kWorker].replicas = 2;
  std::vector<EnvVar> environment = TFJobKind().ReplicaEnvironment(job, kWorker, 1, endpoint);
  ASSERT_EQ(environment.size(), 1u);
  EXPECT_EQ(environment[0].name, "TF_CONFIG");
  EXPECT_EQ(environment[0].value, R"({"cluster":{"worker":["localhost:4000","localhost:4001"]},)"
                                  R"("task":{"type":"worker","index":1},"environment":"cloud"})");
  EXPECT_THAT(TFJobKind().EnvironmentNames(), ElementsAre("TF_CONFIG"));
}

TEST(KindRegistryTest, FindsKindsByApiVersionAndKind) {
  const KindRegistry& kinds = BothKindsRegistry();
  EXPECT_EQ(kinds.Find("kubeflow.org/v1", "TFJob"), &TFJobKind());
  EXPECT_EQ(kinds.Find("example.com/v1alpha1", "ShellJob"), &ShellKind());
  EXPECT_EQ(kinds.Find("kubeflow.org/v1", "ShellJob"), nullptr);
  EXPECT_EQ(kinds.FindByName("ShellJob"), &ShellKind());
  EXPECT_EQ(kinds.Names(" or "), "TFJob or ShellJob");
  EXPECT_EQ(KindRegistry::Default().Names(", "), "TFJob, PyTorchJob");
}

// ---- Parsing, defaults, validation and writing through another kind ----

TEST(ShellKindTest, ParsesDefaultsAndValidatesThroughTheKind) {
  std::vector<std::string> warnings;
  StatusOr<Job> job = LoadJob(kShellJob, "shell.yaml", &warnings, ShellRegistry());
  ASSERT_TRUE(job.ok()) << job.status().ToString();
  EXPECT_THAT(warnings, IsEmpty());
  EXPECT_EQ(job->job_kind, &ShellKind());
  EXPECT_EQ(job->api_version, "example.com/v1alpha1");
  EXPECT_EQ(job->kind, "ShellJob");
  EXPECT_EQ(job->kind_spec.at(kModeField), "serial");
  // "node" is rewritten to the kind's Node, and its positions follow.
  ASSERT_EQ(job->replica_specs.count(kNode), 1u);
  EXPECT_EQ(FindPosition(*job, "spec.shellReplicaSpecs.Node.replicas").line, 10);
  // The kind's container gets the kind's port.
  const Container* shell = ShellKind().MainContainer(job->replica_specs.at(kNode).template_spec);
  ASSERT_NE(shell, nullptr);
  ASSERT_EQ(shell->ports.size(), 1u);
  EXPECT_EQ(shell->ports[0].name, "peer-port");
  EXPECT_EQ(shell->ports[0].container_port, 7000);
}

TEST(ShellKindTest, TheDefaultRegistryRunsKubeflowsKindsOnly) {
  StatusOr<Job> job = ParseJob(kShellJob, "shell.yaml");
  ASSERT_FALSE(job.ok());
  EXPECT_EQ(job.status().message(),
            "shell.yaml:1:13: apiVersion: \"example.com/v1alpha1\" is not supported: Cohort reads "
            "kubeflow.org/v1 TFJobs\n"
            "shell.yaml:2:7: kind: \"ShellJob\" is not supported: Cohort runs kind TFJob or "
            "PyTorchJob only");
}

TEST(ShellKindTest, ARegistryOfTwoKindsReadsEither) {
  StatusOr<Job> shell = LoadJob(kShellJob, "shell.yaml", nullptr, BothKindsRegistry());
  ASSERT_TRUE(shell.ok()) << shell.status().ToString();
  EXPECT_EQ(shell->job_kind, &ShellKind());
  StatusOr<Job> pod =
      ParseJob("apiVersion: v1\nkind: Pod\n", "pod.yaml", nullptr, BothKindsRegistry());
  ASSERT_FALSE(pod.ok());
  EXPECT_THAT(pod.status().message(),
              HasSubstr("kind: \"Pod\" is not supported: Cohort runs kind TFJob or ShellJob only"));
}

TEST(ShellKindTest, MessagesUseTheKindsNames) {
  std::vector<std::string> warnings;
  std::string text = Replace(kShellJob, "  mode: serial\n", "  mode: sometimes\n  extra: 1\n");
  text = Replace(text, "- name: shell", "- name: bash");
  StatusOr<Job> job = LoadJob(text, "shell.yaml", &warnings, ShellRegistry());
  ASSERT_FALSE(job.ok());
  EXPECT_EQ(job.status().message(),
            "shell.yaml:7:9: spec.mode: \"sometimes\" is not one of parallel, serial\n"
            "shell.yaml:14:11: spec.shellReplicaSpecs.Node.template.spec.containers: must have at "
            "least one container with name shell");
  EXPECT_THAT(warnings, ElementsAre("shell.yaml:8:10: spec.extra: not a field of the "
                                    "example.com/v1alpha1 ShellJob API; ignored (a Kubernetes API "
                                    "server would drop it too)"));
}

TEST(ShellKindTest, OneChiefAtMost) {
  std::string text = Replace(kShellJob, "    node:\n",
                             "    Leader:\n      template:\n        spec:\n          containers:\n"
                             "            - {name: shell, image: busybox}\n    leader:\n"
                             "      template:\n        spec:\n          containers:\n"
                             "            - {name: shell, image: busybox}\n    node:\n");
  StatusOr<Job> job = LoadJob(text, "shell.yaml", nullptr, ShellRegistry());
  ASSERT_FALSE(job.ok());
  EXPECT_THAT(job.status().message(),
              HasSubstr("spec.shellReplicaSpecs.leader: names the same replica type as "
                        "spec.shellReplicaSpecs.Leader (replica types are case-insensitive)"));
}

TEST(ShellKindTest, LocalRunWarningsNameTheKind) {
  std::string text = Replace(kShellJob, "    node:\n",
                             "    Worker:\n      template:\n        spec:\n          containers:\n"
                             "            - {name: shell, image: busybox}\n    node:\n");
  StatusOr<Job> job = LoadJob(text, "shell.yaml", nullptr, ShellRegistry());
  ASSERT_TRUE(job.ok()) << job.status().ToString();
  EXPECT_THAT(LocalRunWarnings(*job),
              ElementsAre("shell.yaml:9:5: spec.shellReplicaSpecs.Worker: \"Worker\" is not a "
                          "ShellJob replica type (Leader, Node): it is still run and listed in "
                          "SHELL_PEERS, but the job's status ignores it"));
}

TEST(ShellKindTest, WritesTheKindsShapeAndReadsItBack) {
  StatusOr<Job> job = LoadJob(kShellJob, "shell.yaml", nullptr, ShellRegistry());
  ASSERT_TRUE(job.ok()) << job.status().ToString();
  nlohmann::json written = ToJson(*job);
  EXPECT_EQ(written["apiVersion"], "example.com/v1alpha1");
  EXPECT_EQ(written["kind"], "ShellJob");
  EXPECT_EQ(written["spec"]["mode"], "serial");
  EXPECT_FALSE(written["spec"].contains(kTolerateNodeFailuresField));  // its default
  EXPECT_FALSE(written["spec"].contains("tfReplicaSpecs"));
  EXPECT_FALSE(written["spec"].contains("successPolicy"));
  EXPECT_EQ(written["spec"]["shellReplicaSpecs"]["Node"]["replicas"], 2);
  StatusOr<Job> read_back = JobFromJson(written, nullptr, ShellRegistry());
  ASSERT_TRUE(read_back.ok()) << read_back.status().ToString();
  EXPECT_EQ(read_back->job_kind, &ShellKind());
  EXPECT_EQ(ToJson(*read_back), written);
}

// ---- The reconciler through another kind ----

const Time kStart = Clock::from_time_t(1630928890);  // 2021-09-06T11:48:10Z

Job ShellJob(int leaders, int nodes) {
  Job job = ShellKind().NewJob();
  job.metadata.name = "demo";
  job.metadata.namespace_name = "ns";
  if (leaders > 0) job.replica_specs[kLeader].replicas = leaders;
  job.replica_specs[kNode].replicas = nodes;
  return job;
}

ObservedReplica Running(const std::string& type, int index) {
  ObservedReplica replica;
  replica.type = type;
  replica.index = index;
  replica.phase = ReplicaPhase::kRunning;
  replica.started_at = kStart;
  return replica;
}

ObservedReplica Exited(const std::string& type, int index, int exit_code) {
  ObservedReplica replica = Running(type, index);
  replica.phase = exit_code == 0 ? ReplicaPhase::kSucceeded : ReplicaPhase::kFailed;
  replica.exit_code = exit_code;
  replica.finished_at = kStart + std::chrono::seconds(5);
  return replica;
}

std::vector<std::string> Describe(const std::vector<Event>& events) {
  std::vector<std::string> described;
  for (const Event& event : events) {
    described.push_back(event.type + " " + event.reason + ": " + event.message);
  }
  return described;
}

// Runs the passes in order, each seeing the status the one before wrote.
class Passes {
 public:
  explicit Passes(Job job) : job_(std::move(job)) {}

  ReconcileResult Pass(const std::vector<ObservedReplica>& observed) {
    now_ += std::chrono::seconds(1);
    ReconcileResult result = Reconcile(job_, status_, observed, now_);
    status_ = result.status;
    return result;
  }
  const JobStatus& status() const { return status_; }

 private:
  Job job_;
  JobStatus status_;
  Time now_ = kStart;
};

TEST(ShellKindReconcileTest, ConditionsAndEventsCarryTheKindsNameAndPrefix) {
  Passes passes(ShellJob(0, 2));
  ReconcileResult created = passes.Pass({});
  EXPECT_EQ(created.actions.size(), 2u);
  ASSERT_EQ(created.status.conditions.size(), 1u);
  EXPECT_EQ(created.status.conditions[0].reason, "ShellCreated");
  EXPECT_EQ(created.status.conditions[0].message, "ShellJob demo is created.");
  ReconcileResult running = passes.Pass({Running(kNode, 0), Running(kNode, 1)});
  EXPECT_EQ(JobState(running.status), kConditionRunning);
  EXPECT_EQ(running.status.conditions.back().reason, "ShellRunning");
  EXPECT_EQ(running.status.conditions.back().message, "ShellJob ns/demo is running.");
}

TEST(ShellKindReconcileTest, NodeZeroAloneDoesNotDecideSuccess) {
  Passes passes(ShellJob(0, 2));
  passes.Pass({});
  passes.Pass({Running(kNode, 0), Running(kNode, 1)});
  // A TFJob would succeed here (worker 0 completed); the ShellJob waits for every Node.
  ReconcileResult one_done = passes.Pass({Exited(kNode, 0, 0), Running(kNode, 1)});
  EXPECT_EQ(JobState(one_done.status), kConditionRunning);
  EXPECT_FALSE(one_done.finished);
  ReconcileResult all_done = passes.Pass({Exited(kNode, 0, 0), Exited(kNode, 1, 0)});
  EXPECT_TRUE(all_done.finished);
  EXPECT_THAT(Describe(all_done.events),
              ElementsAre("Normal ExitedWithCode: Pod: ns.demo-node-1 exited with code 0",
                          "Normal ShellSucceeded: ShellJob ns/demo successfully completed."));
}

TEST(ShellKindReconcileTest, TheLeaderIsTheChief) {
  Passes passes(ShellJob(1, 2));
  passes.Pass({});
  passes.Pass({Running(kLeader, 0), Running(kNode, 0), Running(kNode, 1)});
  ReconcileResult done = passes.Pass({Exited(kLeader, 0, 0), Running(kNode, 0), Running(kNode, 1)});
  EXPECT_TRUE(IsSucceeded(done.status));
}

TEST(ShellKindReconcileTest, FailedNodesFailTheJobUnlessTheKindToleratesThem) {
  Passes strict(ShellJob(0, 2));
  strict.Pass({});
  strict.Pass({Running(kNode, 0), Running(kNode, 1)});
  ReconcileResult failed = strict.Pass({Running(kNode, 0), Exited(kNode, 1, 1)});
  EXPECT_TRUE(IsFailed(failed.status));
  EXPECT_EQ(failed.status.conditions.back().reason, "ShellFailed");
  EXPECT_EQ(failed.status.conditions.back().message,
            "ShellJob ns/demo has failed because 1 Node replica(s) failed: node-1 exited with code "
            "1 at 2021-09-06T11:48:15Z after 0 restarts.");

  Job tolerant_job = ShellJob(0, 2);
  tolerant_job.kind_spec[kTolerateNodeFailuresField] = true;
  Passes tolerant(tolerant_job);
  tolerant.Pass({});
  tolerant.Pass({Running(kNode, 0), Running(kNode, 1)});
  ReconcileResult still_running = tolerant.Pass({Running(kNode, 0), Exited(kNode, 1, 1)});
  EXPECT_EQ(JobState(still_running.status), kConditionRunning);
  EXPECT_EQ(still_running.status.replica_statuses.at(kNode).failed, 1);
}

TEST(ShellKindReconcileTest, RestartsUseTheKindsReason) {
  Job job = ShellJob(0, 1);
  job.replica_specs[kNode].restart_policy = RestartPolicy::kOnFailure;
  Passes passes(job);
  passes.Pass({});
  passes.Pass({Running(kNode, 0)});
  ReconcileResult restarting = passes.Pass({Exited(kNode, 0, 3)});
  EXPECT_EQ(JobState(restarting.status), kConditionRestarting);
  EXPECT_THAT(Describe(restarting.events),
              ElementsAre("Normal ExitedWithCode: Pod: ns.demo-node-0 exited with code 3",
                          "Warning ShellRestarting: job demo is restarting because Node replica(s) "
                          "failed."));
}

TEST(ShellKindTest, TheKindGivesEachReplicaItsEnvironment) {
  Job job = ShellJob(1, 2);
  auto endpoint = [](const std::string& type, int index) {
    return LowerCase(type) + ":" + std::to_string(index);
  };
  std::vector<EnvVar> environment = ShellKind().ReplicaEnvironment(job, kNode, 1, endpoint);
  ASSERT_EQ(environment.size(), 2u);
  EXPECT_EQ(environment[0].name, "SHELL_PEERS");
  EXPECT_EQ(environment[0].value, "leader:0,node:0,node:1");
  EXPECT_EQ(environment[1].name, "SHELL_RANK");
  EXPECT_EQ(environment[1].value, "node/1");
}

}  // namespace
}  // namespace cohort::job
