#include "job/validation.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "job/defaults.h"
#include "job/spec_parser.h"
#include "job/tfjob.h"
#include "manifest_text.h"

namespace cohort::job {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

std::string SpecPath(const std::string& name) {
  return std::string(COHORT_TEST_DATA_DIR) + "/specs/" + name;
}

// Line numbers matter to the tests below.
constexpr const char* kValid = R"(apiVersion: kubeflow.org/v1
kind: TFJob
metadata:
  name: mnist
spec:
  runPolicy:
    backoffLimit: 3
  tfReplicaSpecs:
    Worker:
      replicas: 2
      template:
        spec:
          containers:
            - name: tensorflow
              image: tf:2.15
)";

Job ParseAndDefault(const std::string& text) {
  StatusOr<Job> job = ParseJob(text, "job.yaml");
  EXPECT_TRUE(job.ok()) << job.status().ToString();
  if (!job.ok()) return Job{};
  ApplyDefaults(*job);
  return *job;
}

TEST(ValidateJob, AcceptsAValidJob) {
  Job job = ParseAndDefault(kValid);
  EXPECT_THAT(ValidationErrors(job), IsEmpty());
  EXPECT_TRUE(ValidateJob(job).ok());
}

TEST(ValidateJob, AcceptsEveryKubernetesOnlyField) {
  StatusOr<Job> job = LoadJobFile(SpecPath("full.yaml"));
  EXPECT_TRUE(job.ok()) << job.status().ToString();
}

struct ValidationCase {
  const char* name;
  std::string from;  // replaced in kValid...
  std::string to;    // ...by this
  std::vector<std::string> errors;
};

class ValidationErrorTest : public ::testing::TestWithParam<ValidationCase> {};

TEST_P(ValidationErrorTest, ReportsTheOperatorsRules) {
  const ValidationCase& test_case = GetParam();
  Job job = ParseAndDefault(Replace(kValid, test_case.from, test_case.to));
  EXPECT_EQ(ValidationErrors(job), test_case.errors);
}

const std::string kDns1035 =
    "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an "
    "alphabetic character, and end with an alphanumeric character (e.g. 'my-name', or "
    "'abc-123')";

INSTANTIATE_TEST_SUITE_P(
    Cases, ValidationErrorTest,
    ::testing::Values(
        ValidationCase{"MissingName",
                       "  name: mnist\n",
                       "  labels: {a: b}\n",
                       {"job.yaml:3:1: metadata.name: is required"}},
        ValidationCase{"UpperCaseName",
                       "name: mnist",
                       "name: Mnist",
                       {"job.yaml:4:9: metadata.name: \"Mnist\" is not valid: " + kDns1035}},
        ValidationCase{"NameStartsWithDigit",
                       "name: mnist",
                       "name: 1mnist",
                       {"job.yaml:4:9: metadata.name: \"1mnist\" is not valid: " + kDns1035}},
        ValidationCase{"NameEndsWithDash",
                       "name: mnist",
                       "name: mnist-",
                       {"job.yaml:4:9: metadata.name: \"mnist-\" is not valid: " + kDns1035}},
        ValidationCase{"NameWithDot",
                       "name: mnist",
                       "name: mnist.v2",
                       {"job.yaml:4:9: metadata.name: \"mnist.v2\" is not valid: " + kDns1035}},
        ValidationCase{"NameTooLong",
                       "name: mnist",
                       "name: " + std::string(64, 'a'),
                       {"job.yaml:4:9: metadata.name: \"" + std::string(64, 'a') +
                        "\" is not valid: must be no more than 63 characters"}},
        ValidationCase{"LogPoliciesNotJson",
                       "  name: mnist\n",
                       "  name: mnist\n  annotations:\n    cohort.dev/log-policies: 'oom: stop'\n",
                       {"job.yaml:6:30: metadata.annotations[cohort.dev/log-policies]: not "
                        "JSON; write a list such as [{\"pattern\": \"CUDA out of memory\", "
                        "\"action\": \"permanent\"}]"}},
        ValidationCase{
            "LogPolicyWithAnUnknownAction",
            "  name: mnist\n",
            "  name: mnist\n  annotations:\n    cohort.dev/log-policies: '[{\"pattern\": "
            "\"x\", \"action\": \"stop\"}]'\n",
            {"job.yaml:6:30: metadata.annotations[cohort.dev/log-policies]: [0].action: "
             "\"stop\" is not one of permanent, retryable"}},
        ValidationCase{"BadNamespace",
                       "  name: mnist\n",
                       "  name: mnist\n  namespace: Team_A\n",
                       {"job.yaml:5:14: metadata.namespace: \"Team_A\" is not valid: a lowercase "
                        "RFC 1123 label must consist of lower case alphanumeric characters or "
                        "'-', and must start and end with an alphanumeric character (e.g. "
                        "'my-name', or '123-abc')"}},
        ValidationCase{"NoReplicaSpecs",
                       "  tfReplicaSpecs:\n",
                       "  tfReplicaSpecs: {}\n  unused:\n",
                       {"job.yaml:8:3: spec.tfReplicaSpecs: is required: a TFJob needs at least "
                        "one replica type, e.g. Worker"}},
        ValidationCase{"NegativeReplicas",
                       "replicas: 2",
                       "replicas: -1",
                       {"job.yaml:10:17: spec.tfReplicaSpecs.Worker.replicas: must be greater "
                        "than or equal to 0, got -1"}},
        ValidationCase{"NoImage",
                       "              image: tf:2.15\n",
                       "",
                       {"job.yaml:14:15: spec.tfReplicaSpecs.Worker.template.spec.containers[0]."
                        "image: is required"}},
        ValidationCase{"NoTensorflowContainer",
                       "name: tensorflow",
                       "name: trainer",
                       {"job.yaml:13:11: spec.tfReplicaSpecs.Worker.template.spec.containers: "
                        "must have at least one container with name tensorflow"}},
        ValidationCase{"NoContainers",
                       "          containers:\n            - name: tensorflow\n"
                       "              image: tf:2.15\n",
                       "          containers: []\n",
                       {"job.yaml:13:11: spec.tfReplicaSpecs.Worker.template.spec.containers: "
                        "must be specified: a replica needs a container named tensorflow"}},
        ValidationCase{"NoTemplate",
                       "      template:\n        spec:\n          containers:\n"
                       "            - name: tensorflow\n              image: tf:2.15\n",
                       "",
                       {"job.yaml:9:5: spec.tfReplicaSpecs.Worker.template.spec.containers: must "
                        "be specified: a replica needs a container named tensorflow"}},
        ValidationCase{"DuplicateContainerName",
                       "              image: tf:2.15\n",
                       "              image: tf:2.15\n            - name: tensorflow\n"
                       "              image: tf:2.16\n",
                       {"job.yaml:16:21: spec.tfReplicaSpecs.Worker.template.spec.containers[1]."
                        "name: \"tensorflow\" is also the name of containers[0]"}},
        ValidationCase{"ChiefAndMaster",
                       "    Worker:\n",
                       "    Chief:\n      template: {spec: {containers: [{name: tensorflow, "
                       "image: tf}]}}\n    master:\n      template: {spec: {containers: [{name: "
                       "tensorflow, image: tf}]}}\n    Worker:\n",
                       {"job.yaml:8:3: spec.tfReplicaSpecs: must not have more than 1 Chief or "
                        "Master role"}},
        ValidationCase{"ActiveDeadlineZero",
                       "    backoffLimit: 3\n",
                       "    activeDeadlineSeconds: 0\n",
                       {"job.yaml:7:28: spec.runPolicy.activeDeadlineSeconds: must be greater "
                        "than 0, got 0"}},
        ValidationCase{"NegativeBackoffLimit",
                       "backoffLimit: 3",
                       "backoffLimit: -2",
                       {"job.yaml:7:19: spec.runPolicy.backoffLimit: must be greater than or "
                        "equal to 0, got -2"}},
        ValidationCase{"NegativeTtl",
                       "backoffLimit: 3",
                       "ttlSecondsAfterFinished: -5",
                       {"job.yaml:7:30: spec.runPolicy.ttlSecondsAfterFinished: must be greater "
                        "than or equal to 0, got -5"}},
        ValidationCase{"UnknownManagedBy",
                       "backoffLimit: 3",
                       "managedBy: example.com/mine",
                       {"job.yaml:7:16: spec.runPolicy.managedBy: \"example.com/mine\" is not "
                        "supported: must be kubeflow.org/training-operator or "
                        "kueue.x-k8s.io/multikueue"}},
        ValidationCase{"BadSuccessPolicy",
                       "  tfReplicaSpecs:\n",
                       "  successPolicy: ChiefOnly\n  tfReplicaSpecs:\n",
                       {"job.yaml:8:18: spec.successPolicy: \"ChiefOnly\" is not one of \"\" (the "
                        "default), AllWorkers"}},
        ValidationCase{"PortOutOfRange",
                       "              image: tf:2.15\n",
                       "              image: tf:2.15\n              ports: [{name: tfjob-port, "
                       "containerPort: 70000}]\n",
                       {"job.yaml:16:57: spec.tfReplicaSpecs.Worker.template.spec.containers[0]."
                        "ports[0].containerPort: must be between 1 and 65535, inclusive, got "
                        "70000"}},
        ValidationCase{"EnvWithoutName",
                       "              image: tf:2.15\n",
                       "              image: tf:2.15\n              env: [{value: x}]\n",
                       {"job.yaml:16:21: spec.tfReplicaSpecs.Worker.template.spec.containers[0]."
                        "env[0].name: is required"}},
        ValidationCase{"EnvValueAndValueFrom",
                       "              image: tf:2.15\n",
                       "              image: tf:2.15\n              env:\n"
                       "                - name: A\n                  value: x\n"
                       "                  valueFrom: {fieldRef: {fieldPath: metadata.name}}\n",
                       {"job.yaml:19:19: spec.tfReplicaSpecs.Worker.template.spec.containers[0]."
                        "env[0].valueFrom: may not be specified when value is not empty"}}),
    [](const auto& info) { return std::string(info.param.name); });

TEST(ValidateJob, ValidNames) {
  for (const char* name : {"a", "mnist", "dist-mnist-for-e2e-test", "a1", "x-2-y"}) {
    Job job = ParseAndDefault(Replace(kValid, "name: mnist", std::string("name: ") + name));
    EXPECT_THAT(ValidationErrors(job), IsEmpty()) << name;
  }
  Job longest = ParseAndDefault(Replace(kValid, "name: mnist", "name: " + std::string(63, 'a')));
  EXPECT_THAT(ValidationErrors(longest), IsEmpty());
}

TEST(ValidateJob, JoinsEveryErrorIntoOneStatus) {
  std::string text = Replace(kValid, "name: mnist", "name: Mnist");
  text = Replace(text, "replicas: 2", "replicas: -1");
  Status status = ValidateJob(ParseAndDefault(text));
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.code(), Status::Code::kInvalidArgument);
  EXPECT_EQ(status.message(),
            "job.yaml:4:9: metadata.name: \"Mnist\" is not valid: " + kDns1035 +
                "\njob.yaml:10:17: spec.tfReplicaSpecs.Worker.replicas: must be greater than or "
                "equal to 0, got -1");
}

TEST(ValidateJob, JobsBuiltInCodeHaveNoPositions) {
  Job job = NewTFJob();
  job.metadata.name = "built";
  ReplicaSpec worker;
  worker.template_spec.containers.push_back(Container{});
  worker.template_spec.containers[0].name = "tensorflow";
  job.replica_specs["Worker"] = worker;
  EXPECT_THAT(ValidationErrors(job),
              ElementsAre("spec.tfReplicaSpecs.Worker.template.spec.containers[0].image: is "
                          "required"));
}

TEST(ValidateJob, AllowsMultiKueueAndTheOperator) {
  for (const char* managed_by : {kManagedByTrainingOperator, kManagedByMultiKueue}) {
    Job job = ParseAndDefault(
        Replace(kValid, "backoffLimit: 3", std::string("managedBy: ") + managed_by));
    EXPECT_THAT(ValidationErrors(job), IsEmpty()) << managed_by;
  }
}

TEST(ValidateJob, UnknownReplicaTypesAreAllowed) {
  Job job = ParseAndDefault(Replace(kValid, "    Worker:\n", "    Launcher:\n"));
  EXPECT_THAT(ValidationErrors(job), IsEmpty());
}

// ---- TF_CONFIG must fit in what Linux lets a process start with ----

// The replica count in "at most N Worker replicas fit", or -1.
int FittingCount(const std::string& message) {
  const std::string before = "at most ";
  size_t at = message.find(before);
  if (at == std::string::npos) return -1;
  return std::stoi(message.substr(at + before.size()));
}

TEST(ValidateJob, TenThousandReplicasAreRefusedWithTheCountThatFits) {
  Job job = ParseAndDefault(Replace(kValid, "replicas: 2", "replicas: 10000"));
  std::vector<std::string> errors = ValidationErrors(job);
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_THAT(errors[0], ::testing::StartsWith(
                             "job.yaml:10:17: spec.tfReplicaSpecs.Worker.replicas: 10000 replicas "
                             "make TF_CONFIG too long to start a process: Worker 9999 would get "));
  EXPECT_THAT(errors[0], ::testing::HasSubstr(
                             "bytes with Kubernetes service names, over the 131072 bytes Linux "
                             "allows one environment string (MAX_ARG_STRLEN); at most "));
  const int fitting = FittingCount(errors[0]);
  ASSERT_GT(fitting, 1000);
  // The count given is exact: it validates, one more does not.
  Job largest =
      ParseAndDefault(Replace(kValid, "replicas: 2", "replicas: " + std::to_string(fitting)));
  EXPECT_THAT(ValidationErrors(largest), IsEmpty());
  Job one_more =
      ParseAndDefault(Replace(kValid, "replicas: 2", "replicas: " + std::to_string(fitting + 1)));
  EXPECT_EQ(ValidationErrors(one_more).size(), 1u);
}

TEST(ValidateJob, AHugeReplicaCountIsMeasuredWithoutBuildingItsTfConfig) {
  Job job = ParseAndDefault(Replace(kValid, "replicas: 2", "replicas: 2000000000"));
  std::vector<std::string> errors = ValidationErrors(job);
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_THAT(errors[0], ::testing::HasSubstr("2000000000 replicas make TF_CONFIG too long"));
  EXPECT_THAT(errors[0], ::testing::HasSubstr("would get more than "));
}

TEST(ValidateJob, ASparseTfConfigDoesNotListEveryWorker) {
  // With enableDynamicWorker a worker's TF_CONFIG holds itself and the parameter servers only.
  std::string text = Replace(kValid, "replicas: 2", "replicas: 100000");
  text = Replace(text, "  tfReplicaSpecs:\n", "  enableDynamicWorker: true\n  tfReplicaSpecs:\n");
  EXPECT_THAT(ValidationErrors(ParseAndDefault(text)), IsEmpty());
}

// ---- Settings that undo each other ----

TEST(UnrestoredBackupWarnings, NeverWithBackupsIsNamedOnce) {
  std::string text = Replace(kValid, "image: tf:2.15",
                             "image: tf:2.15\n              args: [--checkpoint_path=/b]");
  text = Replace(text, "    Worker:\n",
                 "    Chief:\n      template:\n        spec:\n          containers:\n"
                 "            - name: tensorflow\n              args: [--checkpoint_path, /b]\n"
                 "    Worker:\n");
  EXPECT_THAT(UnrestoredBackupWarnings(ParseAndDefault(text)),
              ElementsAre("job.yaml:9:5: spec.tfReplicaSpecs.Chief.restartPolicy: Never: a failed "
                          "Chief and Worker replica is not restarted, so the backups its program "
                          "writes (--checkpoint_path) are never restored and the job fails "
                          "instead; restartPolicy OnFailure or ExitCode would resume from them"));
}

TEST(UnrestoredBackupWarnings, NoneWhenReplicasRestartOrDoNotBackUp) {
  EXPECT_THAT(UnrestoredBackupWarnings(ParseAndDefault(kValid)), IsEmpty());
  std::string text = Replace(kValid, "image: tf:2.15",
                             "image: tf:2.15\n              args: [--checkpoint_path=/b]");
  EXPECT_THAT(
      UnrestoredBackupWarnings(ParseAndDefault(Replace(text, "      replicas: 2\n",
                                                       "      replicas: 2\n      restartPolicy: "
                                                       "OnFailure\n"))),
      IsEmpty());
  EXPECT_THAT(UnrestoredBackupWarnings(ParseAndDefault(
                  Replace(text, "--checkpoint_path=/b", "--checkpoint_path_is_not=/b"))),
              IsEmpty());
}

// ---- What a local run cannot honour ----

TEST(LocalRunWarnings, NoneForAPlainJob) {
  EXPECT_THAT(LocalRunWarnings(ParseAndDefault(kValid)), IsEmpty());
}

TEST(LocalRunWarnings, KerasExampleOnce) {
  std::string path = SpecPath("kubeflow/keras-multi-worker.yaml");
  StatusOr<Job> job = LoadJobFile(path);
  ASSERT_TRUE(job.ok()) << job.status().ToString();
  EXPECT_THAT(
      LocalRunWarnings(*job),
      ElementsAre(path + ":23:11: spec.tfReplicaSpecs.Worker.template.spec.volumes: ignored by a "
                         "local run: volumes are not created",
                  path + ":20:15: spec.tfReplicaSpecs.Worker.template.spec.containers[0]."
                         "resources: ignored by a local run: requests and limits are not enforced",
                  path + ":17:15: spec.tfReplicaSpecs.Worker.template.spec.containers[0]."
                         "volumeMounts: ignored by a local run: nothing is mounted, so these "
                         "paths must exist on this machine"));
}

TEST(LocalRunWarnings, EveryKindOnceWithACountOfTheOthers) {
  std::string path = SpecPath("full.yaml");
  StatusOr<Job> job = LoadJobFile(path);
  ASSERT_TRUE(job.ok()) << job.status().ToString();
  std::vector<std::string> warnings = LocalRunWarnings(*job);
  EXPECT_THAT(
      warnings,
      ElementsAre(
          path + ":29:5: spec.runPolicy.schedulingPolicy: ignored by a local run: gang "
                 "scheduling needs a Kubernetes batch scheduler",
          path + ":43:11: spec.tfReplicaSpecs.Chief.template.spec.nodeSelector: ignored by a "
                 "local run: every replica runs on this machine (also in 3 other places)",
          path + ":42:31: spec.tfReplicaSpecs.Chief.template.spec.serviceAccountName: ignored "
                 "by a local run: replicas get no Kubernetes service account (also in 3 other "
                 "places)",
          path + ":61:15: spec.tfReplicaSpecs.Chief.template.spec.containers[0].resources: "
                 "ignored by a local run: requests and limits are not enforced (also in 3 other "
                 "places)",
          path + ":55:19: spec.tfReplicaSpecs.Chief.template.spec.containers[0].env[1]."
                 "valueFrom: ignored by a local run: AWS_ACCESS_KEY_ID is left unset (valueFrom "
                 "needs the Kubernetes API) (also in 3 other places)",
          path + ":64:15: spec.tfReplicaSpecs.Chief.template.spec.containers[1]: container "
                 "\"log-shipper\" is not run locally: a local run starts only the tensorflow "
                 "container (also in 3 other places)"));
}

TEST(LocalRunWarnings, ExternalControllerUnknownTypeAndTemplateRestartPolicy) {
  std::string text = Replace(kValid, "backoffLimit: 3", "managedBy: kueue.x-k8s.io/multikueue");
  text = Replace(text, "    Worker:\n", "    Launcher:\n");
  text = Replace(text, "        spec:\n", "        spec:\n          restartPolicy: OnFailure\n");
  EXPECT_THAT(
      LocalRunWarnings(ParseAndDefault(text)),
      ElementsAre("job.yaml:7:16: spec.runPolicy.managedBy: the Kubeflow operator would leave "
                  "this job to \"kueue.x-k8s.io/multikueue\"; a local run runs it itself",
                  "job.yaml:9:5: spec.tfReplicaSpecs.Launcher: \"Launcher\" is not a TFJob "
                  "replica type (Chief, Evaluator, Master, PS, Worker): it is still run and "
                  "listed in TF_CONFIG, but the job's status ignores it",
                  "job.yaml:13:26: spec.tfReplicaSpecs.Launcher.template.spec.restartPolicy: "
                  "overwritten by the replica's restartPolicy (Never), as the Kubeflow operator "
                  "does"));
}

TEST(LocalRunWarnings, StorageUrlsInArgsOncePerScheme) {
  std::string text = Replace(
      kValid, "image: tf:2.15",
      "image: tf:2.15\n"
      "              command: [python, train.py, \"hdfs://nn/data\"]\n"
      "              args: [--saved_model_path=gs://bucket/saved_model_dir,\n"
      "                     --checkpoint_path=gs://bucket/checkpoints, --log=s3://b/l,\n"
      "                     --data_url=https://example.com/d.gz, --pattern=*://*, --x=1://y,\n"
      "                     --master=grpc://localhost:2222]");
  EXPECT_THAT(
      LocalRunWarnings(ParseAndDefault(text)),
      ElementsAre("job.yaml:16:43: spec.tfReplicaSpecs.Worker.template.spec.containers[0]."
                  "command[2]: a URL: a local run has no hdfs:// storage; the program gets the "
                  "text as it is, and one that takes it for a file name writes under ./hdfs:/ "
                  "in its working directory; use a path mounted on this machine instead",
                  "job.yaml:17:22: spec.tfReplicaSpecs.Worker.template.spec.containers[0]."
                  "args[0]: a URL: a local run has no gs:// storage; the program gets the text "
                  "as it is, and one that takes it for a file name writes under ./gs:/ in its "
                  "working directory; use a path mounted on this machine instead (also in 1 "
                  "other place)",
                  "job.yaml:18:65: spec.tfReplicaSpecs.Worker.template.spec.containers[0]."
                  "args[2]: a URL: a local run has no s3:// storage; the program gets the text "
                  "as it is, and one that takes it for a file name writes under ./s3:/ in its "
                  "working directory; use a path mounted on this machine instead"));
}

TEST(LocalRunWarnings, EnvFrom) {
  std::string text = Replace(kValid, "image: tf:2.15",
                             "image: tf:2.15\n              envFrom: [{configMapRef: {name: c}}]");
  EXPECT_THAT(LocalRunWarnings(ParseAndDefault(text)),
              ElementsAre("job.yaml:16:15: spec.tfReplicaSpecs.Worker.template.spec."
                          "containers[0].envFrom: ignored by a local run: variables from "
                          "ConfigMaps and Secrets need the Kubernetes API"));
}

TEST(LocalRunWarnings, InitContainersAndPullSecrets) {
  std::string text = Replace(kValid, "        spec:\n",
                             "        spec:\n"
                             "          imagePullSecrets: [{name: registry}]\n"
                             "          initContainers: [{name: fetch, image: busybox}]\n"
                             "          tolerations: []\n"
                             "          affinity: {}\n");
  EXPECT_THAT(
      LocalRunWarnings(ParseAndDefault(text)),
      ElementsAre("job.yaml:15:11: spec.tfReplicaSpecs.Worker.template.spec.tolerations: ignored "
                  "by a local run: every replica runs on this machine",
                  "job.yaml:16:11: spec.tfReplicaSpecs.Worker.template.spec.affinity: ignored by "
                  "a local run: every replica runs on this machine",
                  "job.yaml:13:11: spec.tfReplicaSpecs.Worker.template.spec.imagePullSecrets: "
                  "ignored by a local run: no image is pulled",
                  "job.yaml:14:11: spec.tfReplicaSpecs.Worker.template.spec.initContainers: "
                  "ignored by a local run: init containers are not run"));
}

// Probes, hooks, security and networking settings a kubelet would apply: each kind once, a pod's
// securityContext apart from a container's.
TEST(LocalRunWarnings, KubeletSchedulerAndNetworkFields) {
  std::string text = Replace(kValid, "        spec:\n",
                             "        spec:\n"
                             "          securityContext: {runAsUser: 1000}\n"
                             "          hostNetwork: true\n"
                             "          schedulerName: volcano\n"
                             "          priorityClassName: high\n"
                             "          dnsPolicy: ClusterFirst\n"
                             "          dnsConfig: {nameservers: [1.1.1.1]}\n"
                             "          hostAliases: [{ip: 10.0.0.1, hostnames: [db]}]\n"
                             "          runtimeClassName: gvisor\n"
                             "          topologySpreadConstraints: [{maxSkew: 1}]\n");
  text = Replace(text, "              image: tf:2.15\n",
                 "              image: tf:2.15\n"
                 "              livenessProbe: {exec: {command: [true]}}\n"
                 "              readinessProbe: {tcpSocket: {port: 2222}}\n"
                 "              startupProbe: {exec: {command: [true]}}\n"
                 "              lifecycle: {preStop: {exec: {command: [true]}}}\n"
                 "              securityContext: {privileged: true}\n"
                 "              ports:\n"
                 "                - {name: tfjob-port, containerPort: 2222, hostPort: 2222}\n");
  const std::string pod = "spec.tfReplicaSpecs.Worker.template.spec.";
  const std::string container = pod + "containers[0].";
  EXPECT_THAT(
      LocalRunWarnings(ParseAndDefault(text)),
      ElementsAre(
          "job.yaml:13:11: " + pod +
              "securityContext: ignored by a local run: replicas run as the user who runs cohort, "
              "with no other user, group or privileges",
          "job.yaml:14:24: " + pod +
              "hostNetwork: ignored by a local run: replicas always use this machine's network",
          "job.yaml:15:26: " + pod +
              "schedulerName: ignored by a local run: no scheduler places replicas",
          "job.yaml:16:30: " + pod +
              "priorityClassName: ignored by a local run: replicas are neither scheduled nor "
              "preempted",
          "job.yaml:17:22: " + pod +
              "dnsPolicy: ignored by a local run: replicas use this machine's DNS resolver",
          "job.yaml:18:11: " + pod +
              "dnsConfig: ignored by a local run: replicas use this machine's DNS resolver",
          "job.yaml:19:11: " + pod +
              "hostAliases: ignored by a local run: /etc/hosts is not changed (replicas reach "
              "each other as localhost)",
          "job.yaml:20:29: " + pod +
              "runtimeClassName: ignored by a local run: replicas are processes, not containers",
          "job.yaml:21:11: " + pod +
              "topologySpreadConstraints: ignored by a local run: every replica runs on this "
              "machine",
          "job.yaml:25:15: " + container +
              "livenessProbe: ignored by a local run: nothing probes the replica, so it is not "
              "restarted when unhealthy",
          "job.yaml:26:15: " + container +
              "readinessProbe: ignored by a local run: nothing probes the replica",
          "job.yaml:27:15: " + container +
              "startupProbe: ignored by a local run: nothing probes the replica",
          "job.yaml:28:15: " + container +
              "lifecycle: ignored by a local run: postStart and preStop hooks are not run",
          "job.yaml:29:15: " + container +
              "securityContext: ignored by a local run: replicas run as the user who runs "
              "cohort, with no other user, group or privileges",
          "job.yaml:31:69: " + container +
              "ports[0].hostPort: ignored by a local run: no host port is mapped; the replica "
              "listens on the local port in its TF_CONFIG"));
}

// Two replica types with the same probe: one warning, counting the other place.
TEST(LocalRunWarnings, AProbeInEveryReplicaIsReportedOnce) {
  std::string text = Replace(kValid, "              image: tf:2.15\n",
                             "              image: tf:2.15\n"
                             "              livenessProbe: {exec: {command: [true]}}\n"
                             "    PS:\n"
                             "      template:\n"
                             "        spec:\n"
                             "          containers:\n"
                             "            - name: tensorflow\n"
                             "              image: tf:2.15\n"
                             "              livenessProbe: {exec: {command: [true]}}\n");
  std::vector<std::string> warnings = LocalRunWarnings(ParseAndDefault(text));
  ASSERT_EQ(warnings.size(), 1u) << ::testing::PrintToString(warnings);
  EXPECT_THAT(warnings[0], ::testing::HasSubstr("livenessProbe: ignored by a local run"));
  EXPECT_THAT(warnings[0], ::testing::HasSubstr("(also in 1 other place)"));
}

}  // namespace
}  // namespace cohort::job
