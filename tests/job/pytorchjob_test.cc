// The PyTorchJob kind against Kubeflow's training operator: its facts, the parser and writer on
// its own spec fields (elasticPolicy's nested fields with their positions), its defaults
// (OnFailure, nprocPerNode, elasticPolicy's bounds), its webhook's rules as file:line:column
// errors, the environment of masters and workers with and without elasticPolicy on Kubernetes and
// locally, its success rule through the reconciler and its condition reasons and messages.
// Expected values are written out from the operator's source (docs/behaviour.md §7), not
// produced by the code under test.
#include "job/pytorchjob.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "job/defaults.h"
#include "job/reconciler.h"
#include "job/replica_endpoints.h"
#include "job/spec_parser.h"
#include "job/spec_writer.h"
#include "job/validation.h"
#include "manifest_text.h"

namespace cohort::job {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

std::string SpecPath(const std::string& name) {
  return std::string(COHORT_TEST_DATA_DIR) + "/specs/pytorchjob/" + name;
}

// Line numbers matter to the tests below.
constexpr const char* kElastic = R"(apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata:
  name: elastic
spec:
  nprocPerNode: "2"
  elasticPolicy:
    minReplicas: 2
    rdzvId: run-1
    rdzvConf:
      - key: timeout
        value: "900"
      - key: read_timeout
        value: "60"
    standalone: true
  pytorchReplicaSpecs:
    Worker:
      replicas: 3
      template:
        spec:
          containers:
            - name: pytorch
              image: torch:2.3
)";

constexpr const char* kMasterAndWorkers = R"(apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata:
  name: mnist
  namespace: team
spec:
  pytorchReplicaSpecs:
    Master:
      replicas: 1
      template:
        spec:
          containers:
            - name: pytorch
              image: torch:2.3
    Worker:
      replicas: 2
      template:
        spec:
          containers:
            - name: pytorch
              image: torch:2.3
)";

Job Load(const std::string& text) {
  StatusOr<Job> job = LoadJob(text, "job.yaml");
  EXPECT_TRUE(job.ok()) << job.status().ToString();
  return job.ok() ? *job : NewPyTorchJob();
}

Job ParseAndDefault(const std::string& text) {
  StatusOr<Job> job = ParseJob(text, "job.yaml");
  EXPECT_TRUE(job.ok()) << job.status().ToString();
  if (!job.ok()) return NewPyTorchJob();
  ApplyDefaults(*job);
  return *job;
}

// "NAME=value" for each variable, in order.
std::vector<std::string> Describe(const std::vector<EnvVar>& environment) {
  std::vector<std::string> described;
  for (const EnvVar& variable : environment) {
    described.push_back(variable.name + "=" + variable.value);
  }
  return described;
}

// Local endpoints as the local executor gives them: localhost and one port per replica.
EndpointFunction LocalEndpoints(const std::map<std::string, int>& ports) {
  return [ports](const std::string& type, int index) {
    return "localhost:" + std::to_string(ports.at(LowerCase(type) + "-" + std::to_string(index)));
  };
}

// ---- Facts ----

TEST(PyTorchJobKindTest, FactsAreTheOperators) {
  const KindFacts& facts = PyTorchJobKind().facts();
  EXPECT_EQ(PyTorchJobKind().api_version(), "kubeflow.org/v1");
  EXPECT_EQ(facts.kind, "PyTorchJob");
  EXPECT_EQ(facts.plural, "pytorchjobs");
  EXPECT_EQ(PyTorchJobKind().ResourceName(), "pytorchjob.kubeflow.org");
  EXPECT_EQ(facts.replica_specs_field, "pytorchReplicaSpecs");
  EXPECT_EQ(facts.container_name, "pytorch");
  EXPECT_EQ(facts.port_name, "pytorchjob-port");
  EXPECT_EQ(facts.port, 23456);
  EXPECT_EQ(facts.default_restart_policy, RestartPolicy::kOnFailure);
  EXPECT_TRUE(facts.environment_in_every_container);
  EXPECT_THAT(facts.replica_types, ElementsAre("Master", "Worker"));
  EXPECT_THAT(facts.chief_types, ElementsAre("Master"));
  EXPECT_EQ(facts.controller_name, "pytorchjob-controller");
  EXPECT_EQ(PyTorchJobKind().Reason("Created"), "PyTorchJobCreated");
}

TEST(PyTorchJobKindTest, TheDefaultRegistryRunsBothKinds) {
  EXPECT_EQ(KindRegistry::Default().Find("kubeflow.org/v1", "PyTorchJob"), &PyTorchJobKind());
  EXPECT_EQ(KindRegistry::Default().Names(" or "), "TFJob or PyTorchJob");
}

// ---- Parsing, defaults, writing ----

TEST(PyTorchJobParseTest, KubeflowShapedExamplesValidate) {
  for (const char* name : {"mnist.yaml", "mnist-gloo.yaml", "elastic-echo.yaml"}) {
    std::vector<std::string> warnings;
    StatusOr<Job> job = LoadJobFile(SpecPath(name), &warnings);
    ASSERT_TRUE(job.ok()) << name << ": " << job.status().ToString();
    EXPECT_EQ(job->job_kind, &PyTorchJobKind()) << name;
    EXPECT_THAT(warnings, IsEmpty()) << name;
  }
}

TEST(PyTorchJobParseTest, DefaultsAreTheOperators) {
  StatusOr<Job> gloo = LoadJobFile(SpecPath("mnist-gloo.yaml"));
  ASSERT_TRUE(gloo.ok()) << gloo.status().ToString();
  const Job& job = *gloo;
  for (const char* type : {kPyTorchMaster, kPyTorchWorker}) {
    const ReplicaSpec& spec = job.replica_specs.at(type);
    EXPECT_EQ(spec.restart_policy, RestartPolicy::kOnFailure) << type;
    const Container* container = PyTorchJobKind().MainContainer(spec.template_spec);
    ASSERT_NE(container, nullptr);
    ASSERT_EQ(container->ports.size(), 1u);
    EXPECT_EQ(container->ports[0].name, "pytorchjob-port");
    EXPECT_EQ(container->ports[0].container_port, 23456);
  }
  EXPECT_EQ(job.run_policy.clean_pod_policy, CleanPodPolicy::kNone);
  EXPECT_EQ(PyTorchNprocPerNode(job), "auto");
  EXPECT_FALSE(PyTorchElasticPolicy(job).has_value());
}

TEST(PyTorchJobParseTest, AnEmptyRestartPolicyIsTheKindsDefault) {
  Job job = Load(Replace(kMasterAndWorkers, "      replicas: 2\n",
                         "      replicas: 2\n      restartPolicy: \"\"\n"));
  EXPECT_EQ(job.replica_specs.at(kPyTorchWorker).restart_policy, RestartPolicy::kOnFailure);
  Job never = Load(Replace(kMasterAndWorkers, "      replicas: 2\n",
                           "      replicas: 2\n      restartPolicy: Never\n"));
  EXPECT_EQ(never.replica_specs.at(kPyTorchWorker).restart_policy, RestartPolicy::kNever);
}

TEST(PyTorchJobParseTest, ElasticPolicyIsReadWithItsPositionsAndDefaulted) {
  Job job = Load(kElastic);
  std::optional<ElasticPolicy> policy = PyTorchElasticPolicy(job);
  ASSERT_TRUE(policy.has_value());
  EXPECT_EQ(policy->min_replicas, 2);
  EXPECT_EQ(policy->max_replicas, 2) << "maxReplicas defaults to minReplicas";
  EXPECT_EQ(policy->rdzv_id, "run-1");
  ASSERT_TRUE(policy->rdzv_conf.has_value());
  EXPECT_THAT(*policy->rdzv_conf,
              ElementsAre(std::pair<std::string, std::string>("timeout", "900"),
                          std::pair<std::string, std::string>("read_timeout", "60")));
  EXPECT_EQ(policy->standalone, true);
  EXPECT_FALSE(policy->rdzv_backend.has_value());
  EXPECT_EQ(PyTorchNprocPerNode(job), "2");
  EXPECT_EQ(FindPosition(job, "spec.elasticPolicy.rdzvConf[1].value").line, 14);
  EXPECT_EQ(FindPosition(job, "spec.elasticPolicy.rdzvConf[1].value").column, 16);
}

TEST(PyTorchJobParseTest, ElasticBoundsDefaultFromEachOtherOrTheWorkers) {
  Job from_max = Load(Replace(kElastic, "minReplicas: 2", "maxReplicas: 4"));
  EXPECT_EQ(PyTorchElasticPolicy(from_max)->min_replicas, 4);
  EXPECT_EQ(PyTorchElasticPolicy(from_max)->max_replicas, 4);
  Job from_workers = Load(Replace(kElastic, "minReplicas: 2", "maxRestarts: 3"));
  EXPECT_EQ(PyTorchElasticPolicy(from_workers)->min_replicas, 3);
  EXPECT_EQ(PyTorchElasticPolicy(from_workers)->max_replicas, 3);
  Job both = Load(Replace(kElastic, "minReplicas: 2", "minReplicas: 1\n    maxReplicas: 5"));
  EXPECT_EQ(PyTorchElasticPolicy(both)->min_replicas, 1);
  EXPECT_EQ(PyTorchElasticPolicy(both)->max_replicas, 5);
}

TEST(PyTorchJobParseTest, NprocPerNodeIsNotDefaultedWhenElasticPolicySetsIt) {
  std::vector<std::string> warnings;
  StatusOr<Job> job =
      LoadJob(Replace(Replace(kElastic, "  nprocPerNode: \"2\"\n", ""), "    standalone: true\n",
                      "    standalone: true\n    nProcPerNode: 4\n"),
              "job.yaml", &warnings);
  ASSERT_TRUE(job.ok()) << job.status().ToString();
  EXPECT_FALSE(PyTorchNprocPerNode(*job).has_value());
  EXPECT_EQ(PyTorchElasticPolicy(*job)->nproc_per_node, 4);
  EXPECT_THAT(warnings, ElementsAre("job.yaml:15:19: spec.elasticPolicy.nProcPerNode: deprecated: "
                                    "use spec.nprocPerNode instead"));
}

TEST(PyTorchJobParseTest, TypeErrorsInElasticPolicyNameTheNestedField) {
  std::string text = Replace(kElastic, "minReplicas: 2", "minReplicas: two");
  text = Replace(text, "value: \"60\"", "value: 60");
  text = Replace(text, "standalone: true", "standalone: yes please");
  StatusOr<Job> job = ParseJob(text, "job.yaml");
  ASSERT_FALSE(job.ok());
  EXPECT_EQ(job.status().message(),
            "job.yaml:8:18: spec.elasticPolicy.minReplicas: expected an integer, got \"two\"\n"
            "job.yaml:14:16: spec.elasticPolicy.rdzvConf[1].value: expected a string, got 60 "
            "(quote it to mean text: \"60\")\n"
            "job.yaml:15:17: spec.elasticPolicy.standalone: expected true or false, got \"yes "
            "please\"");
}

TEST(PyTorchJobParseTest, UnknownElasticFieldsAreWarnedAboutAndDropped) {
  std::vector<std::string> warnings;
  StatusOr<Job> job =
      LoadJob(Replace(kElastic, "    rdzvId: run-1\n", "    rdzvId: run-1\n    rendezvous: 1\n"),
              "job.yaml", &warnings);
  ASSERT_TRUE(job.ok()) << job.status().ToString();
  EXPECT_THAT(warnings, ElementsAre("job.yaml:10:17: spec.elasticPolicy.rendezvous: not a field of "
                                    "the kubeflow.org/v1 PyTorchJob API; ignored (a Kubernetes API "
                                    "server would drop it too)"));
  EXPECT_FALSE(job->kind_spec.at(kElasticPolicyField).contains("rendezvous"));
}

TEST(PyTorchJobParseTest, AMisspeltElasticFieldIsAnError) {
  StatusOr<Job> job = LoadJob(
      Replace(kElastic, "    rdzvId: run-1\n", "    rdzvId: run-1\n    rdvzPort: 1\n"), "job.yaml");
  ASSERT_FALSE(job.ok());
  EXPECT_EQ(job.status().message(),
            "job.yaml:10:15: spec.elasticPolicy.rdvzPort: not a field of the kubeflow.org/v1 "
            "PyTorchJob API; did you mean \"rdzvPort\"? (as written, the job would run without "
            "it)");
}

TEST(PyTorchJobParseTest, TheNormalisedSpecReadsBackTheSame) {
  for (const std::string& text : {std::string(kElastic), std::string(kMasterAndWorkers)}) {
    Job job = Load(text);
    nlohmann::json written = ToJson(job);
    EXPECT_EQ(written["kind"], "PyTorchJob");
    EXPECT_TRUE(written["spec"].contains("pytorchReplicaSpecs"));
    EXPECT_EQ(written["spec"]["pytorchReplicaSpecs"]["Worker"]["restartPolicy"], "OnFailure");
    StatusOr<Job> read_back = JobFromJson(written);
    ASSERT_TRUE(read_back.ok()) << read_back.status().ToString();
    EXPECT_EQ(ToJson(*read_back), written);
  }
  nlohmann::json elastic = ToJson(Load(kElastic))["spec"];
  EXPECT_EQ(elastic["nprocPerNode"], "2");
  EXPECT_EQ(elastic["elasticPolicy"],
            nlohmann::json::parse(R"({"minReplicas":2,"maxReplicas":2,"rdzvId":"run-1",
              "rdzvConf":[{"key":"timeout","value":"900"},{"key":"read_timeout","value":"60"}],
              "standalone":true})"));
}

// ---- Validation: the webhook's rules ----

TEST(PyTorchJobValidationTest, OnlyMasterAndWorker) {
  Job job = ParseAndDefault(Replace(kMasterAndWorkers, "    Worker:\n", "    Chief:\n"));
  EXPECT_THAT(ValidationErrors(job),
              ElementsAre("job.yaml:15:5: spec.pytorchReplicaSpecs.Chief: \"Chief\" is not "
                          "supported: must be Master or Worker"));
}

TEST(PyTorchJobValidationTest, TheMasterHasExactlyOneReplicaAndWorkersAtLeastOne) {
  std::string text = Replace(kMasterAndWorkers, "      replicas: 2\n", "      replicas: 0\n");
  text = Replace(text, "      replicas: 1\n", "      replicas: 2\n");
  Job job = ParseAndDefault(text);
  EXPECT_THAT(ValidationErrors(job),
              ElementsAre("job.yaml:9:17: spec.pytorchReplicaSpecs.Master.replicas: must be 1, "
                          "got 2",
                          "job.yaml:16:17: spec.pytorchReplicaSpecs.Worker.replicas: must be at "
                          "least 1, got 0"));
}

TEST(PyTorchJobValidationTest, ElasticPolicyNeedsWorkers) {
  std::string text = Replace(kMasterAndWorkers, "spec:\n  pytorchReplicaSpecs:",
                             "spec:\n  elasticPolicy:\n    maxReplicas: 2\n  pytorchReplicaSpecs:");
  text = text.substr(0, text.find("    Worker:\n"));
  Job job = ParseAndDefault(text);
  EXPECT_THAT(ValidationErrors(job),
              ElementsAre("job.yaml:9:3: spec.pytorchReplicaSpecs.Worker: is required when "
                          "spec.elasticPolicy is set"));
}

TEST(PyTorchJobValidationTest, ElasticNProcPerNodeExcludesNprocPerNode) {
  Job job = ParseAndDefault(
      Replace(kElastic, "    standalone: true\n", "    standalone: true\n    nProcPerNode: 4\n"));
  EXPECT_THAT(ValidationErrors(job),
              ElementsAre("job.yaml:16:19: spec.elasticPolicy.nProcPerNode: must not be used "
                          "with spec.nprocPerNode"));
}

TEST(PyTorchJobValidationTest, ThePytorchContainerIsRequired) {
  Job job = ParseAndDefault(Replace(kMasterAndWorkers,
                                    "          containers:\n            - name: pytorch\n"
                                    "              image: torch:2.3\n    Worker:",
                                    "          containers:\n            - name: trainer\n"
                                    "              image: torch:2.3\n    Worker:"));
  EXPECT_THAT(ValidationErrors(job),
              ElementsAre("job.yaml:12:11: spec.pytorchReplicaSpecs.Master.template.spec."
                          "containers: must have at least one container with name pytorch"));
}

// ---- Environment ----

TEST(PyTorchJobEnvironmentTest, MasterAndWorkersOnKubernetes) {
  Job job = Load(kMasterAndWorkers);
  const EndpointFunction endpoints = KubernetesEndpoints(job);
  EXPECT_THAT(
      Describe(PyTorchJobKind().ReplicaEnvironment(job, kPyTorchMaster, 0, endpoints)),
      ElementsAre("PYTHONUNBUFFERED=1", "MASTER_PORT=23456", "PET_MASTER_PORT=23456",
                  "MASTER_ADDR=mnist-master-0", "PET_MASTER_ADDR=mnist-master-0", "WORLD_SIZE=3",
                  "RANK=0", "PET_NODE_RANK=0", "PET_NPROC_PER_NODE=auto", "PET_NNODES=3"));
  EXPECT_THAT(
      Describe(PyTorchJobKind().ReplicaEnvironment(job, kPyTorchWorker, 1, endpoints)),
      ElementsAre("PYTHONUNBUFFERED=1", "MASTER_PORT=23456", "PET_MASTER_PORT=23456",
                  "MASTER_ADDR=mnist-master-0", "PET_MASTER_ADDR=mnist-master-0", "WORLD_SIZE=3",
                  "RANK=2", "PET_NODE_RANK=2", "PET_NPROC_PER_NODE=auto", "PET_NNODES=3"));
}

TEST(PyTorchJobEnvironmentTest, TheMastersOwnPortAndANumericNprocPerNode) {
  Job job = Load(Replace(Replace(kMasterAndWorkers, "spec:\n  pytorchReplicaSpecs:",
                                 "spec:\n  nprocPerNode: \"4\"\n  pytorchReplicaSpecs:"),
                         "              image: torch:2.3\n    Worker:",
                         "              image: torch:2.3\n              ports:\n"
                         "                - name: pytorchjob-port\n"
                         "                  containerPort: 29500\n    Worker:"));
  std::vector<std::string> worker = Describe(
      PyTorchJobKind().ReplicaEnvironment(job, kPyTorchWorker, 0, KubernetesEndpoints(job)));
  EXPECT_THAT(worker, ElementsAre("PYTHONUNBUFFERED=1", "MASTER_PORT=29500",
                                  "PET_MASTER_PORT=29500", "MASTER_ADDR=mnist-master-0",
                                  "PET_MASTER_ADDR=mnist-master-0", "WORLD_SIZE=12", "RANK=1",
                                  "PET_NODE_RANK=1", "PET_NPROC_PER_NODE=4", "PET_NNODES=3"));
}

TEST(PyTorchJobEnvironmentTest, ElasticWorkersOnKubernetes) {
  Job job = Load(kElastic);
  EXPECT_THAT(Describe(PyTorchJobKind().ReplicaEnvironment(job, kPyTorchWorker, 2,
                                                           KubernetesEndpoints(job))),
              ElementsAre("PYTHONUNBUFFERED=1", "PET_NPROC_PER_NODE=2",
                          "PET_RDZV_ENDPOINT=elastic-worker-0:23456", "PET_RDZV_BACKEND=c10d",
                          "PET_NNODES=2:2", "PET_RDZV_ID=run-1",
                          "PET_RDZV_CONF=timeout=900,read_timeout=60", "PET_STANDALONE="));
}

TEST(PyTorchJobEnvironmentTest, ElasticPolicysOwnRendezvousAndRestarts) {
  Job job = Load(Replace(Replace(kElastic, "  nprocPerNode: \"2\"\n", ""),
                         "    minReplicas: 2\n    rdzvId: run-1\n",
                         "    rdzvBackend: etcd\n    rdzvHost: etcd-service\n    rdzvPort: 2379\n"
                         "    maxRestarts: 5\n    nProcPerNode: 8\n"));
  EXPECT_THAT(Describe(PyTorchJobKind().ReplicaEnvironment(job, kPyTorchWorker, 0,
                                                           KubernetesEndpoints(job))),
              ElementsAre("PYTHONUNBUFFERED=1", "PET_RDZV_ENDPOINT=etcd-service:2379",
                          "PET_RDZV_BACKEND=etcd", "PET_NNODES=3:3", "PET_MAX_RESTARTS=5",
                          "PET_NPROC_PER_NODE=8", "PET_RDZV_CONF=timeout=900,read_timeout=60",
                          "PET_STANDALONE="));
}

TEST(PyTorchJobEnvironmentTest, LocallyTheMasterIsReachedAtItsLocalPort) {
  Job job = Load(kMasterAndWorkers);
  const EndpointFunction local =
      LocalEndpoints({{"master-0", 41000}, {"worker-0", 41001}, {"worker-1", 41002}});
  EXPECT_THAT(Describe(PyTorchJobKind().ReplicaEnvironment(job, kPyTorchWorker, 0, local)),
              ElementsAre("PYTHONUNBUFFERED=1", "MASTER_PORT=41000", "PET_MASTER_PORT=41000",
                          "MASTER_ADDR=localhost", "PET_MASTER_ADDR=localhost", "WORLD_SIZE=3",
                          "RANK=1", "PET_NODE_RANK=1", "PET_NPROC_PER_NODE=auto", "PET_NNODES=3"));
  Job elastic = Load(kElastic);
  const EndpointFunction elastic_local =
      LocalEndpoints({{"worker-0", 42000}, {"worker-1", 42001}, {"worker-2", 42002}});
  std::vector<std::string> worker =
      Describe(PyTorchJobKind().ReplicaEnvironment(elastic, kPyTorchWorker, 1, elastic_local));
  ASSERT_GE(worker.size(), 3u);
  EXPECT_EQ(worker[2], "PET_RDZV_ENDPOINT=localhost:42000");
}

TEST(PyTorchJobEnvironmentTest, EveryVariableIsOneAnExecutorKeepsFromLeakingIn) {
  Job job = Load(
      Replace(kElastic, "    standalone: true\n", "    standalone: true\n    maxRestarts: 1\n"));
  job.kind_spec.erase(kNprocPerNodeField);
  job.kind_spec[kElasticPolicyField]["nProcPerNode"] = 2;
  Job master = Load(kMasterAndWorkers);
  const std::vector<std::string> names = PyTorchJobKind().EnvironmentNames();
  for (const Job* each : {&job, &master}) {
    for (const EnvVar& variable : PyTorchJobKind().ReplicaEnvironment(*each, kPyTorchWorker, 0,
                                                                      KubernetesEndpoints(*each))) {
      EXPECT_NE(std::find(names.begin(), names.end(), variable.name), names.end()) << variable.name;
    }
  }
}

// ---- Init container ----

TEST(PyTorchJobInitContainerTest, WorkersOfAJobWithAMasterWaitForIt) {
  Job job = Load(kMasterAndWorkers);
  EXPECT_THAT(PyTorchJobKind().InitContainers(job, kPyTorchMaster, 0), IsEmpty());
  std::vector<nlohmann::json> init = PyTorchJobKind().InitContainers(job, kPyTorchWorker, 1);
  ASSERT_EQ(init.size(), 1u);
  EXPECT_EQ(init[0], nlohmann::json::parse(R"({
    "name": "init-pytorch",
    "image": "alpine:3.10",
    "imagePullPolicy": "IfNotPresent",
    "resources": {"limits": {"cpu": "100m", "memory": "20Mi"},
                  "requests": {"cpu": "50m", "memory": "10Mi"}},
    "command": ["sh", "-c", "err=1;for i in $(seq 100); do if nslookup mnist-master-0; then err=0 && break; fi;echo waiting for master; sleep 2; done; exit $err"]
  })"));
  EXPECT_THAT(PyTorchJobKind().InitContainers(Load(kElastic), kPyTorchWorker, 0), IsEmpty());
}

// ---- Status: success rule, reasons and messages ----

const Time kStart = Clock::from_time_t(1630928890);  // 2021-09-06T11:48:10Z

ObservedReplica Replica(const std::string& type, int index, ReplicaPhase phase, int exit_code = 0) {
  ObservedReplica replica;
  replica.type = type;
  replica.index = index;
  replica.phase = phase;
  replica.exit_code = exit_code;
  replica.started_at = kStart;
  if (phase == ReplicaPhase::kSucceeded || phase == ReplicaPhase::kFailed) {
    replica.finished_at = kStart + std::chrono::seconds(5);
  }
  return replica;
}

// The status after one pass over `observed`, from a job that was running.
JobStatus StatusAfter(const Job& job, const std::vector<ObservedReplica>& observed) {
  std::vector<ObservedReplica> running;
  for (const ObservedReplica& replica : observed) {
    running.push_back(Replica(replica.type, replica.index, ReplicaPhase::kRunning));
  }
  ReconcileResult first = Reconcile(job, JobStatus{}, running, kStart);
  return Reconcile(job, first.status, observed, kStart + std::chrono::seconds(10)).status;
}

const JobCondition& LastCondition(const JobStatus& status) {
  static const JobCondition none;
  return status.conditions.empty() ? none : status.conditions.back();
}

TEST(PyTorchJobStatusTest, ConditionsOfAJobWithAMaster) {
  Job job = Load(kMasterAndWorkers);
  ReconcileResult created = Reconcile(job, JobStatus{}, {}, kStart);
  ASSERT_FALSE(created.status.conditions.empty());
  EXPECT_EQ(created.status.conditions[0].reason, "PyTorchJobCreated");
  EXPECT_EQ(created.status.conditions[0].message, "PyTorchJob mnist is created.");

  JobStatus running = StatusAfter(job, {Replica(kPyTorchMaster, 0, ReplicaPhase::kRunning),
                                        Replica(kPyTorchWorker, 0, ReplicaPhase::kRunning),
                                        Replica(kPyTorchWorker, 1, ReplicaPhase::kRunning)});
  EXPECT_EQ(LastCondition(running).type, "Running");
  EXPECT_EQ(LastCondition(running).reason, "PyTorchJobRunning");
  EXPECT_EQ(LastCondition(running).message, "PyTorchJob mnist is running.");

  // The master decides, whatever the workers do.
  JobStatus succeeded = StatusAfter(job, {Replica(kPyTorchMaster, 0, ReplicaPhase::kSucceeded),
                                          Replica(kPyTorchWorker, 0, ReplicaPhase::kRunning),
                                          Replica(kPyTorchWorker, 1, ReplicaPhase::kRunning)});
  EXPECT_EQ(LastCondition(succeeded).type, "Succeeded");
  EXPECT_EQ(LastCondition(succeeded).reason, "PyTorchJobSucceeded");
  EXPECT_EQ(LastCondition(succeeded).message, "PyTorchJob mnist is successfully completed.");

  JobStatus workers_done = StatusAfter(job, {Replica(kPyTorchMaster, 0, ReplicaPhase::kRunning),
                                             Replica(kPyTorchWorker, 0, ReplicaPhase::kSucceeded),
                                             Replica(kPyTorchWorker, 1, ReplicaPhase::kSucceeded)});
  EXPECT_EQ(LastCondition(workers_done).type, "Running");
}

TEST(PyTorchJobStatusTest, AFailedReplicaUnderNeverFailsTheJob) {
  Job job = Load(Replace(kMasterAndWorkers, "      replicas: 2\n",
                         "      replicas: 2\n      restartPolicy: Never\n"));
  JobStatus failed = StatusAfter(job, {Replica(kPyTorchMaster, 0, ReplicaPhase::kRunning),
                                       Replica(kPyTorchWorker, 0, ReplicaPhase::kRunning),
                                       Replica(kPyTorchWorker, 1, ReplicaPhase::kFailed, 1)});
  EXPECT_EQ(LastCondition(failed).type, "Failed");
  EXPECT_EQ(LastCondition(failed).reason, "PyTorchJobFailed");
  EXPECT_THAT(LastCondition(failed).message,
              HasSubstr("PyTorchJob mnist is failed because 1 Worker replica(s) failed"));
}

TEST(PyTorchJobStatusTest, WithoutAMasterEveryWorkerMustSucceed) {
  Job job = Load(Replace(kElastic,
                         "  elasticPolicy:\n    minReplicas: 2\n    rdzvId: run-1\n"
                         "    rdzvConf:\n      - key: timeout\n        value: \"900\"\n"
                         "      - key: read_timeout\n        value: \"60\"\n"
                         "    standalone: true\n",
                         ""));
  ASSERT_FALSE(PyTorchElasticPolicy(job).has_value());
  JobStatus first_done = StatusAfter(job, {Replica(kPyTorchWorker, 0, ReplicaPhase::kSucceeded),
                                           Replica(kPyTorchWorker, 1, ReplicaPhase::kRunning),
                                           Replica(kPyTorchWorker, 2, ReplicaPhase::kRunning)});
  EXPECT_EQ(LastCondition(first_done).type, "Running") << "worker 0 alone does not decide";
  EXPECT_EQ(LastCondition(first_done).message, "PyTorchJob default/elastic is running.");
  JobStatus all_done = StatusAfter(job, {Replica(kPyTorchWorker, 0, ReplicaPhase::kSucceeded),
                                         Replica(kPyTorchWorker, 1, ReplicaPhase::kSucceeded),
                                         Replica(kPyTorchWorker, 2, ReplicaPhase::kSucceeded)});
  EXPECT_EQ(LastCondition(all_done).type, "Succeeded");
  EXPECT_EQ(LastCondition(all_done).message, "PyTorchJob default/elastic successfully completed.");
}

TEST(PyTorchJobStatusTest, WithElasticPolicyAnyWorkerSucceedingSucceedsTheJob) {
  Job job = Load(kElastic);
  JobStatus one_done = StatusAfter(job, {Replica(kPyTorchWorker, 0, ReplicaPhase::kRunning),
                                         Replica(kPyTorchWorker, 1, ReplicaPhase::kRunning),
                                         Replica(kPyTorchWorker, 2, ReplicaPhase::kSucceeded)});
  EXPECT_EQ(LastCondition(one_done).type, "Succeeded");
  EXPECT_EQ(LastCondition(one_done).reason, "PyTorchJobSucceeded");
  EXPECT_EQ(LastCondition(one_done).message, "PyTorchJob default/elastic successfully completed.");
}

// ---- Peer reports: which replica a rank is, and a group restart counted once ----

TEST(PyTorchJobPeerTest, ARankIsTheReplicaWhoseRankVariableSaysSo) {
  const JobKind& kind = PyTorchJobKind();
  Job job = Load(kMasterAndWorkers);
  using Key = std::pair<std::string, int>;
  EXPECT_EQ(kind.ReplicaOfTask(job, "rank", 0), Key(kPyTorchMaster, 0));
  EXPECT_EQ(kind.ReplicaOfTask(job, "rank", 1), Key(kPyTorchWorker, 0));
  EXPECT_EQ(kind.ReplicaOfTask(job, "rank", 2), Key(kPyTorchWorker, 1));
  EXPECT_EQ(kind.ReplicaOfTask(job, "rank", 3), std::nullopt) << "WORLD_SIZE is 3";
  EXPECT_EQ(kind.ReplicaOfTask(job, "rank", -1), std::nullopt);
  // Replica names as every kind reads them.
  EXPECT_EQ(kind.ReplicaOfTask(job, "worker", 1), Key(kPyTorchWorker, 1));
  EXPECT_EQ(kind.ReplicaOfTask(job, "master", 0), Key(kPyTorchMaster, 0));
  EXPECT_EQ(kind.ReplicaOfTask(job, "worker", 2), std::nullopt);

  // nprocPerNode 2: ranks 2 and 3 are worker 0's processes.
  Job two_per_node = Load(Replace(kMasterAndWorkers, "spec:\n", "spec:\n  nprocPerNode: \"2\"\n"));
  EXPECT_EQ(kind.ReplicaOfTask(two_per_node, "rank", 1), Key(kPyTorchMaster, 0));
  EXPECT_EQ(kind.ReplicaOfTask(two_per_node, "rank", 3), Key(kPyTorchWorker, 0));
  EXPECT_EQ(kind.ReplicaOfTask(two_per_node, "rank", 5), Key(kPyTorchWorker, 1));
  EXPECT_EQ(kind.ReplicaOfTask(two_per_node, "rank", 6), std::nullopt);

  // Under elasticPolicy (and without a Master) torchrun's rendezvous hands out the ranks.
  Job elastic = Load(kElastic);
  EXPECT_EQ(kind.ReplicaOfTask(elastic, "rank", 1), std::nullopt);
  EXPECT_EQ(kind.ReplicaOfTask(elastic, "worker", 1), Key(kPyTorchWorker, 1));
}

// The example's kill scenario (examples/pytorch): worker 1 (rank 2) is SIGKILLed; the master and
// worker 0 fail at once, leaving the cohort backend's report "peer rank:2 died (...)"; the three
// restarts are one group restart, counted once: backoffLimit 1 is enough, and a second crash
// fails the job naming the crashed worker.
TEST(PyTorchJobPeerTest, AKilledWorkerRestartsTheGroupOnceAgainstTheBackoffLimit) {
  Job job =
      Load(Replace(kMasterAndWorkers, "spec:\n", "spec:\n  runPolicy:\n    backoffLimit: 1\n"));
  ASSERT_EQ(job.run_policy.backoff_limit, 1);
  const std::string report =
      "peer rank:2 died (closed the connection without saying goodbye: the process exited or was "
      "killed)";
  auto all_running = [&](int restarts, int group_restarts) {
    std::vector<ObservedReplica> observed = {Replica(kPyTorchMaster, 0, ReplicaPhase::kRunning),
                                             Replica(kPyTorchWorker, 0, ReplicaPhase::kRunning),
                                             Replica(kPyTorchWorker, 1, ReplicaPhase::kRunning)};
    for (ObservedReplica& replica : observed) {
      replica.restart_count = restarts;
      replica.group_restarts =
          replica.type == kPyTorchWorker && replica.index == 1 ? 0 : group_restarts;
    }
    return observed;
  };
  auto after_kill = [&](int restarts, int group_restarts) {
    std::vector<ObservedReplica> observed = all_running(restarts, group_restarts);
    for (ObservedReplica& replica : observed) {
      replica.phase = ReplicaPhase::kFailed;
      replica.finished_at = kStart + std::chrono::seconds(20);
      const bool killed = replica.type == kPyTorchWorker && replica.index == 1;
      replica.exit_code = killed ? 137 : 1;
      if (!killed) replica.termination_message = report;
    }
    return observed;
  };
  ReconcileResult running = Reconcile(job, JobStatus{}, all_running(0, 0), kStart);
  ReconcileResult first =
      Reconcile(job, running.status, after_kill(0, 0), kStart + std::chrono::seconds(20));
  std::vector<std::string> restarts;
  for (const Action& action : first.actions) {
    ASSERT_EQ(action.kind, Action::Kind::kRestart);
    restarts.push_back(action.type + " " + std::to_string(action.index) +
                       (action.group_restart ? " (group)" : ""));
  }
  EXPECT_THAT(restarts, ElementsAre("Master 0 (group)", "Worker 0 (group)", "Worker 1"));
  EXPECT_EQ(LastCondition(first.status).type, "Restarting");
  EXPECT_EQ(LastCondition(first.status).message,
            "job mnist is restarting because worker-1 died (closed the connection without "
            "saying goodbye: the process exited or was killed), as master-0 reported.");

  // The group runs again, each replica restarted once, two of them as group restarts.
  ReconcileResult again =
      Reconcile(job, first.status, all_running(1, 1), kStart + std::chrono::seconds(30));
  EXPECT_EQ(LastCondition(again.status).type, "Running");
  // A second crash would be the second counted restart: past backoffLimit 1.
  ReconcileResult second =
      Reconcile(job, again.status, after_kill(1, 1), kStart + std::chrono::seconds(60));
  EXPECT_EQ(LastCondition(second.status).type, "Failed");
  EXPECT_THAT(LastCondition(second.status).message, HasSubstr("worker-1 exited with code 137"));
}

}  // namespace
}  // namespace cohort::job
