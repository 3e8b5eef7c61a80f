#include "job/spec_parser.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "job/defaults.h"
#include "job/tfjob.h"
#include "job/validation.h"
#include "job/yaml_document.h"
#include "manifest_text.h"

namespace cohort::job {
namespace {

using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::StartsWith;

std::string SpecPath(const std::string& name) {
  return std::string(COHORT_TEST_DATA_DIR) + "/specs/" + name;
}

// A small valid manifest; tests replace parts of it. Line numbers matter to the tests below.
constexpr const char* kMinimal = R"(apiVersion: kubeflow.org/v1
kind: TFJob
metadata:
  name: mnist
spec:
  tfReplicaSpecs:
    Worker:
      replicas: 2
      restartPolicy: OnFailure
      template:
        spec:
          containers:
            - name: tensorflow
              image: tf:2.15
              command: [python, train.py]
)";

// ---- Kubeflow's own examples ----

class KubeflowExampleTest : public ::testing::TestWithParam<const char*> {};

TEST_P(KubeflowExampleTest, ParsesDefaultsAndValidates) {
  std::vector<std::string> warnings;
  StatusOr<Job> job = LoadJobFile(SpecPath(std::string("kubeflow/") + GetParam()), &warnings);
  ASSERT_TRUE(job.ok()) << job.status().ToString();
  EXPECT_FALSE(job->metadata.name.empty());
  EXPECT_FALSE(job->replica_specs.empty());
  for (const auto& [type, replica] : job->replica_specs) {
    const Container* tensorflow = TFJobKind().MainContainer(replica.template_spec);
    ASSERT_NE(tensorflow, nullptr) << type;
    ASSERT_FALSE(tensorflow->ports.empty());
    EXPECT_EQ(tensorflow->ports.back().name, "tfjob-port");
    EXPECT_EQ(tensorflow->ports.back().container_port, 2222);
  }
}

INSTANTIATE_TEST_SUITE_P(AllExamples, KubeflowExampleTest,
                         ::testing::Values("simple.yaml", "dist-mnist.yaml",
                                           "estimator-api-distributed.yaml",
                                           "keras-multi-worker.yaml", "mnist-with-summaries.yaml",
                                           "dist-mnist-with-exithandler.yaml",
                                           "monitored-training-session.yaml",
                                           "v1-mnist-with-summaries.yaml"),
                         [](const auto& info) {
                           std::string name = info.param;
                           name = name.substr(0, name.find('.'));
                           for (char& c : name) {
                             if (c == '-') c = '_';
                           }
                           return name;
                         });

TEST(KubeflowExamples, SimpleReadsEveryField) {
  StatusOr<Job> job = LoadJobFile(SpecPath("kubeflow/simple.yaml"));
  ASSERT_TRUE(job.ok()) << job.status().ToString();
  EXPECT_EQ(job->metadata.name, "tfjob-simple");
  EXPECT_EQ(job->metadata.namespace_name, "kubeflow");
  ASSERT_EQ(job->replica_specs.count("Worker"), 1u);
  const ReplicaSpec& worker = job->replica_specs.at("Worker");
  EXPECT_EQ(worker.replicas, 2);
  EXPECT_EQ(worker.restart_policy, RestartPolicy::kOnFailure);
  ASSERT_EQ(worker.template_spec.containers.size(), 1u);
  const Container& container = worker.template_spec.containers[0];
  EXPECT_EQ(container.image, "docker.io/kubeflowkatib/tf-mnist-with-summaries:latest");
  EXPECT_THAT(container.command,
              ElementsAre("python", "/opt/tf-mnist-with-summaries/mnist.py", "--epochs=1"));
  EXPECT_EQ(worker.position.line, 8);
  EXPECT_EQ(worker.position.column, 5);
  EXPECT_EQ(container.position.line, 14);
  EXPECT_EQ(container.position.column, 15);
  EXPECT_EQ(container.position.file, SpecPath("kubeflow/simple.yaml"));
}

TEST(KubeflowExamples, DistMnistHasPsAndWorkers) {
  StatusOr<Job> job = LoadJobFile(SpecPath("kubeflow/dist-mnist.yaml"));
  ASSERT_TRUE(job.ok()) << job.status().ToString();
  EXPECT_EQ(job->metadata.namespace_name, "default");
  EXPECT_EQ(job->replica_specs.at("PS").replicas, 2);
  EXPECT_EQ(job->replica_specs.at("Worker").replicas, 4);
  EXPECT_EQ(job->run_policy.clean_pod_policy, CleanPodPolicy::kNone);
}

TEST(KubeflowExamples, ExitHandlerWarnsAboutUnknownField) {
  std::vector<std::string> warnings;
  std::string path = SpecPath("kubeflow/dist-mnist-with-exithandler.yaml");
  StatusOr<Job> job = LoadJobFile(path, &warnings);
  ASSERT_TRUE(job.ok()) << job.status().ToString();
  EXPECT_THAT(warnings,
              ElementsAre(path + ":23:3: spec.onExit: not a field of the kubeflow.org/v1 TFJob "
                                 "API; ignored (a Kubernetes API server would drop it too)"));
}

TEST(KubeflowExamples, LegacyCleanPodPolicyIsReadWithAWarning) {
  std::vector<std::string> warnings;
  std::string path = SpecPath("kubeflow/monitored-training-session.yaml");
  StatusOr<Job> job = LoadJobFile(path, &warnings);
  ASSERT_TRUE(job.ok()) << job.status().ToString();
  EXPECT_EQ(job->run_policy.clean_pod_policy, CleanPodPolicy::kNone);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_THAT(warnings[0], StartsWith(path + ":6:19: spec.cleanPodPolicy: read as "
                                             "spec.runPolicy.cleanPodPolicy"));
}

TEST(KubeflowExamples, TemplateAnnotationsAreRead) {
  StatusOr<Job> job = LoadJobFile(SpecPath("kubeflow/estimator-api-distributed.yaml"));
  ASSERT_TRUE(job.ok()) << job.status().ToString();
  EXPECT_EQ(
      job->replica_specs.at("Worker").template_spec.annotations.at("scheduling.k8s.io/group-name"),
      "distributed-training");
}

// ---- What is read ----

TEST(ParseJob, ReadsMinimalManifest) {
  std::vector<std::string> warnings;
  StatusOr<Job> job = ParseJob(kMinimal, "job.yaml", &warnings);
  ASSERT_TRUE(job.ok()) << job.status().ToString();
  EXPECT_THAT(warnings, IsEmpty());
  EXPECT_EQ(job->api_version, "kubeflow.org/v1");
  EXPECT_EQ(job->kind, "TFJob");
  EXPECT_EQ(job->source_file, "job.yaml");
  EXPECT_EQ(job->metadata.name, "mnist");
  const ReplicaSpec& worker = job->replica_specs.at("Worker");
  EXPECT_EQ(worker.replicas, 2);
  EXPECT_EQ(worker.restart_policy, RestartPolicy::kOnFailure);
  EXPECT_THAT(worker.template_spec.containers[0].command, ElementsAre("python", "train.py"));
  // Parsing alone does not default: no port yet.
  EXPECT_THAT(worker.template_spec.containers[0].ports, IsEmpty());
}

TEST(ParseJob, RecordsPositionsByFieldPath) {
  StatusOr<Job> job = ParseJob(kMinimal, "job.yaml");
  ASSERT_TRUE(job.ok()) << job.status().ToString();
  SourcePosition image =
      FindPosition(*job, "spec.tfReplicaSpecs.Worker.template.spec.containers[0].image");
  EXPECT_EQ(image.file, "job.yaml");
  EXPECT_EQ(image.line, 14);
  EXPECT_EQ(image.column, 22);
  // A mapping is found at its key; an absent field at its nearest enclosing one.
  EXPECT_EQ(FindPosition(*job, "spec.tfReplicaSpecs.Worker").line, 7);
  EXPECT_EQ(FindPosition(*job, "spec.tfReplicaSpecs.Worker.template.spec.containers[0].ports").line,
            13);
  EXPECT_EQ(FieldMessage(*job, "spec.runPolicy.backoffLimit", "oops"),
            "job.yaml:5:1: spec.runPolicy.backoffLimit: oops");
}

TEST(ParseJob, KeepsTheWholeTemplateWithTypes) {
  std::string text = Replace(kMinimal, "              command: [python, train.py]\n",
                             R"(              resources:
                limits:
                  nvidia.com/gpu: 1
                  memory: 2Gi
              securityContext:
                privileged: true
          hostNetwork: false
          terminationGracePeriodSeconds: 30
)");
  StatusOr<Job> job = ParseJob(text, "job.yaml");
  ASSERT_TRUE(job.ok()) << job.status().ToString();
  const nlohmann::json& raw = job->replica_specs.at("Worker").template_spec.raw;
  const nlohmann::json& container = raw["spec"]["containers"][0];
  EXPECT_EQ(container["resources"]["limits"]["nvidia.com/gpu"], 1);
  EXPECT_TRUE(container["resources"]["limits"]["nvidia.com/gpu"].is_number_integer());
  EXPECT_EQ(container["resources"]["limits"]["memory"], "2Gi");
  EXPECT_EQ(container["securityContext"]["privileged"], true);
  EXPECT_EQ(raw["spec"]["hostNetwork"], false);
  EXPECT_EQ(raw["spec"]["terminationGracePeriodSeconds"], 30);
}

TEST(ParseJob, ReadsEnvironmentIncludingValueFrom) {
  std::string text = Replace(kMinimal, "              command: [python, train.py]\n",
                             R"(              env:
                - name: RATE
                  value: "1"
                - name: SECRET
                  valueFrom:
                    secretKeyRef: {name: s, key: k}
)");
  StatusOr<Job> job = ParseJob(text, "job.yaml");
  ASSERT_TRUE(job.ok()) << job.status().ToString();
  const std::vector<EnvVar>& env = job->replica_specs.at("Worker").template_spec.containers[0].env;
  ASSERT_EQ(env.size(), 2u);
  EXPECT_EQ(env[0].name, "RATE");
  EXPECT_EQ(env[0].value, "1");
  EXPECT_TRUE(env[0].value_from.is_null());
  EXPECT_EQ(env[1].value_from["secretKeyRef"]["key"], "k");
}

TEST(ParseJob, MisspeltFieldsAreErrorsWithTheFieldMeant) {
  std::string text = Replace(kMinimal, "command: [python, train.py]",
                             "comand: [python, train.py]\n              env: [{name: A, valu: x}]");
  text = Replace(text, "replicas: 2", "replica: 2");
  std::vector<std::string> warnings;
  StatusOr<Job> job = ParseJob(text, "job.yaml", &warnings);
  ASSERT_FALSE(job.ok());
  EXPECT_EQ(job.status().message(),
            "job.yaml:8:16: spec.tfReplicaSpecs.Worker.replica: not a field of the kubeflow.org/v1 "
            "TFJob API; did you mean \"replicas\"? (as written, the job would run without it)\n"
            "job.yaml:15:15: spec.tfReplicaSpecs.Worker.template.spec.containers[0].comand: not a "
            "field of a Kubernetes container; did you mean \"command\"? (as written, the job would "
            "run without it)\n"
            "job.yaml:16:37: spec.tfReplicaSpecs.Worker.template.spec.containers[0].env[0].valu: "
            "not a field of a Kubernetes environment variable; did you mean \"value\"? (as "
            "written, the job would run without it)");
}

TEST(ParseJob, AMisspellingBesideTheFieldItselfIsOnlyWarnedAbout) {
  std::string text = Replace(kMinimal, "command: [python, train.py]",
                             "command: [python, train.py]\n"
                             "              comand: [python, other.py]");
  std::vector<std::string> warnings;
  StatusOr<Job> job = ParseJob(text, "job.yaml", &warnings);
  ASSERT_TRUE(job.ok()) << job.status().ToString();
  EXPECT_THAT(warnings,
              ElementsAre("job.yaml:16:15: spec.tfReplicaSpecs.Worker.template.spec.containers[0]."
                          "comand: not a field of a Kubernetes container; ignored (a Kubernetes "
                          "API server would drop it too)"));
}

TEST(ParseJob, ReadsEveryRunPolicyField) {
  StatusOr<Job> job = ParseJobFile(SpecPath("full.yaml"));
  ASSERT_TRUE(job.ok()) << job.status().ToString();
  const RunPolicy& policy = job->run_policy;
  EXPECT_EQ(policy.clean_pod_policy, CleanPodPolicy::kRunning);
  EXPECT_EQ(policy.ttl_seconds_after_finished, 600);
  EXPECT_EQ(policy.active_deadline_seconds, 7200);
  EXPECT_EQ(policy.backoff_limit, 3);
  EXPECT_FALSE(policy.suspend);
  EXPECT_EQ(policy.managed_by, "kubeflow.org/training-operator");
  EXPECT_EQ(policy.scheduling_policy["minAvailable"], 4);
  EXPECT_EQ(TFJobSuccessPolicy(*job), "AllWorkers");
  EXPECT_EQ(job->metadata.labels.at("team"), "vision");
  EXPECT_EQ(job->metadata.annotations.at(kEvaluatorInClusterAnnotation), "false");
}

TEST(ParseJob, TakesTheTFJobOfAMultiDocumentFile) {
  StatusOr<Job> job = ParseJobFile(SpecPath("full.yaml"));
  ASSERT_TRUE(job.ok()) << job.status().ToString();
  EXPECT_EQ(job->metadata.name, "full-job");
  EXPECT_EQ(job->metadata.namespace_name, "research");
  EXPECT_EQ(job->replica_specs.size(), 4u);
}

TEST(ParseJob, ExpandsAliasesAndMergeKeys) {
  constexpr const char* kText = R"(apiVersion: kubeflow.org/v1
kind: TFJob
metadata: {name: merged}
spec:
  tfReplicaSpecs:
    PS:
      replicas: 1
      template: &pod
        spec:
          containers:
            - &container
              name: tensorflow
              image: tf:2.15
              args: [--role=any]
    Worker:
      template:
        spec:
          containers:
            - <<: *container
              args: [--role=worker]
)";
  StatusOr<Job> job = ParseJob(kText, "job.yaml");
  ASSERT_TRUE(job.ok()) << job.status().ToString();
  const Container& worker = job->replica_specs.at("Worker").template_spec.containers[0];
  EXPECT_EQ(worker.name, "tensorflow");
  EXPECT_EQ(worker.image, "tf:2.15");
  EXPECT_THAT(worker.args, ElementsAre("--role=worker"));  // written keys win over merged ones
}

TEST(ParseJob, ScalarsFollowTheCoreSchema) {
  EXPECT_EQ(ResolvePlainScalar("2"), 2);
  EXPECT_EQ(ResolvePlainScalar("-7"), -7);
  EXPECT_EQ(ResolvePlainScalar("+7"), 7);
  EXPECT_EQ(ResolvePlainScalar("0x1F"), 31);
  EXPECT_EQ(ResolvePlainScalar("0o17"), 15);
  EXPECT_EQ(ResolvePlainScalar("1.5"), 1.5);
  EXPECT_EQ(ResolvePlainScalar("1e3"), 1000.0);
  EXPECT_EQ(ResolvePlainScalar("true"), true);
  EXPECT_EQ(ResolvePlainScalar("False"), false);
  EXPECT_TRUE(ResolvePlainScalar("~").is_null());
  EXPECT_TRUE(ResolvePlainScalar("").is_null());
  EXPECT_EQ(ResolvePlainScalar("yes"), "yes");  // YAML 1.1 only
  EXPECT_EQ(ResolvePlainScalar(".inf"), ".inf");
  EXPECT_EQ(ResolvePlainScalar("2Gi"), "2Gi");
  EXPECT_EQ(ResolvePlainScalar("99999999999999999999"), 1e20);
  EXPECT_EQ(ResolvePlainScalar("1.2.3"), "1.2.3");
}

TEST(ParseJob, QuotedNumbersStayText) {
  StatusOr<Job> job = ParseJob(Replace(kMinimal, "image: tf:2.15", "image: \"2.15\""), "j");
  ASSERT_TRUE(job.ok()) << job.status().ToString();
  EXPECT_EQ(job->replica_specs.at("Worker").template_spec.containers[0].image, "2.15");
}

TEST(ParseJob, IgnoresStatusAndServerSetMetadata) {
  std::string text = Replace(kMinimal, "  name: mnist\n", R"(  name: mnist
  uid: 0d7c9e63-1111-2222-3333-444444444444
  resourceVersion: "1234"
  creationTimestamp: "2021-09-06T11:48:10Z"
)");
  text += "status:\n  conditions: []\n";
  std::vector<std::string> warnings;
  StatusOr<Job> job = ParseJob(text, "job.yaml", &warnings);
  ASSERT_TRUE(job.ok()) << job.status().ToString();
  EXPECT_THAT(warnings, IsEmpty());
}

TEST(ParseJob, NullMeansUnset) {
  std::string text = Replace(kMinimal, "      replicas: 2\n", "      replicas: ~\n");
  StatusOr<Job> job = ParseJob(text, "job.yaml");
  ASSERT_TRUE(job.ok()) << job.status().ToString();
  EXPECT_EQ(job->replica_specs.at("Worker").replicas, 1);
}

TEST(ParseJob, EmptyRestartPolicyIsTheDefault) {
  std::string text = Replace(kMinimal, "restartPolicy: OnFailure", "restartPolicy: \"\"");
  StatusOr<Job> job = ParseJob(text, "job.yaml");
  ASSERT_TRUE(job.ok()) << job.status().ToString();
  EXPECT_EQ(job->replica_specs.at("Worker").restart_policy, RestartPolicy::kNever);
}

// ---- Errors: file:line:column, field path, and what is wrong ----

struct ErrorCase {
  const char* name;
  const char* from;  // replaced in kMinimal...
  const char* to;    // ...by this
  const char* message;
};

class ParseErrorTest : public ::testing::TestWithParam<ErrorCase> {};

TEST_P(ParseErrorTest, NamesFileLineColumnAndField) {
  const ErrorCase& error_case = GetParam();
  StatusOr<Job> job = ParseJob(Replace(kMinimal, error_case.from, error_case.to), "job.yaml");
  ASSERT_FALSE(job.ok());
  EXPECT_EQ(job.status().code(), Status::Code::kInvalidArgument);
  EXPECT_EQ(job.status().message(), error_case.message);
}

INSTANTIATE_TEST_SUITE_P(
    Cases, ParseErrorTest,
    ::testing::Values(
        ErrorCase{"RestartPolicyEnum", "restartPolicy: OnFailure", "restartPolicy: Sometimes",
                  "job.yaml:9:22: spec.tfReplicaSpecs.Worker.restartPolicy: \"Sometimes\" is not "
                  "one of Always, OnFailure, Never, ExitCode"},
        ErrorCase{"ReplicasQuotedText", "replicas: 2", "replicas: \"two\"",
                  "job.yaml:8:17: spec.tfReplicaSpecs.Worker.replicas: expected an integer, got "
                  "\"two\""},
        ErrorCase{"ReplicasPlainText", "replicas: 2", "replicas: two",
                  "job.yaml:8:17: spec.tfReplicaSpecs.Worker.replicas: expected an integer, got "
                  "\"two\""},
        ErrorCase{"ReplicasQuotedNumber", "replicas: 2", "replicas: \"2\"",
                  "job.yaml:8:17: spec.tfReplicaSpecs.Worker.replicas: expected an integer, got "
                  "\"2\""},
        ErrorCase{"ReplicasFloat", "replicas: 2", "replicas: 2.5",
                  "job.yaml:8:17: spec.tfReplicaSpecs.Worker.replicas: expected an integer, got "
                  "2.5"},
        ErrorCase{"ReplicasOutOfRange", "replicas: 2", "replicas: 3000000000",
                  "job.yaml:8:17: spec.tfReplicaSpecs.Worker.replicas: expected an integer from "
                  "-2147483648 to 2147483647, got 3000000000"},
        ErrorCase{"ImageNotText", "image: tf:2.15", "image: 215",
                  "job.yaml:14:22: spec.tfReplicaSpecs.Worker.template.spec.containers[0].image: "
                  "expected a string, got 215 (quote it to mean text: \"215\")"},
        ErrorCase{"CommandNotAList", "command: [python, train.py]", "command: python train.py",
                  "job.yaml:15:24: spec.tfReplicaSpecs.Worker.template.spec.containers[0].command: "
                  "expected a list of strings, got \"python train.py\""},
        ErrorCase{"ContainersNotAList",
                  "          containers:\n            - name: tensorflow\n              image: "
                  "tf:2.15\n              command: [python, train.py]\n",
                  "          containers: {name: tensorflow}\n",
                  "job.yaml:12:11: spec.tfReplicaSpecs.Worker.template.spec.containers: expected "
                  "a list of containers, got a mapping"},
        ErrorCase{"ReplicaSpecsAList", "    Worker:\n", "    - Worker:\n",
                  "job.yaml:6:3: spec.tfReplicaSpecs: expected a mapping, got a list"},
        ErrorCase{"WrongApiVersion", "apiVersion: kubeflow.org/v1",
                  "apiVersion: kubeflow.org/v1beta2",
                  "job.yaml:1:13: apiVersion: \"kubeflow.org/v1beta2\" is not supported: Cohort "
                  "reads kubeflow.org/v1 TFJobs; a v1alpha2, v1beta1 or v1beta2 TFJob usually "
                  "needs only its apiVersion changed"},
        ErrorCase{"WrongKind", "kind: TFJob", "kind: MPIJob",
                  "job.yaml:2:7: kind: \"MPIJob\" is not supported: Cohort runs kind TFJob or "
                  "PyTorchJob only"},
        ErrorCase{"MissingApiVersion", "apiVersion: kubeflow.org/v1\n", "",
                  "job.yaml:1:1: apiVersion: is required: apiVersion: kubeflow.org/v1"},
        ErrorCase{"NameNotText", "name: mnist", "name: [mnist]",
                  "job.yaml:4:3: metadata.name: expected a string, got a list"},
        ErrorCase{"DuplicateKey", "      replicas: 2\n", "      replicas: 2\n      replicas: 3\n",
                  "job.yaml:9:7: duplicate key \"replicas\" (first written at line 8)"},
        ErrorCase{"SyntaxError", "      replicas: 2\n", "      replicas: [2\n",
                  "job.yaml:9:20: invalid YAML: end of sequence flow not found"},
        ErrorCase{"TabIndentation", "    Worker:\n", "\tWorker:\n",
                  "job.yaml:7:2: invalid YAML: end of map not found"}),
    [](const auto& info) { return std::string(info.param.name); });

TEST(ParseJob, ReportsEveryErrorAtOnce) {
  std::string text = Replace(kMinimal, "replicas: 2", "replicas: two");
  text = Replace(text, "restartPolicy: OnFailure", "restartPolicy: Sometimes");
  StatusOr<Job> job = ParseJob(text, "job.yaml");
  ASSERT_FALSE(job.ok());
  EXPECT_EQ(job.status().message(),
            "job.yaml:8:17: spec.tfReplicaSpecs.Worker.replicas: expected an integer, got "
            "\"two\"\n"
            "job.yaml:9:22: spec.tfReplicaSpecs.Worker.restartPolicy: \"Sometimes\" is not one of "
            "Always, OnFailure, Never, ExitCode");
}

TEST(ParseJob, CleanPodPolicyEnum) {
  std::string text =
      Replace(kMinimal, "spec:\n  tfReplicaSpecs:",
              "spec:\n  runPolicy:\n    cleanPodPolicy: Sometimes\n  tfReplicaSpecs:");
  StatusOr<Job> job = ParseJob(text, "job.yaml");
  ASSERT_FALSE(job.ok());
  EXPECT_EQ(job.status().message(),
            "job.yaml:7:21: spec.runPolicy.cleanPodPolicy: \"Sometimes\" is not one of All, "
            "Running, None");
}

TEST(ParseJob, TwoTFJobDocumentsAreAnError) {
  std::string text = std::string(kMinimal) + "---\n" + kMinimal;
  StatusOr<Job> job = ParseJob(text, "job.yaml");
  ASSERT_FALSE(job.ok());
  EXPECT_EQ(job.status().message(),
            "job.yaml:18:7: kind: a second TFJob in this file (the first is at line 2); put "
            "each TFJob in its own file");
}

TEST(ParseJob, NoTFJobAmongSeveralDocuments) {
  StatusOr<Job> job = ParseJob("kind: Service\n---\nkind: ConfigMap\n---\nfoo: bar\n", "job.yaml");
  ASSERT_FALSE(job.ok());
  EXPECT_EQ(job.status().message(),
            "job.yaml: none of the 3 documents has kind: TFJob or PyTorchJob (found Service, "
            "ConfigMap, (no kind))");
}

TEST(ParseJob, EmptyFile) {
  for (const char* text : {"", "# just a comment\n", "---\n"}) {
    StatusOr<Job> job = ParseJob(text, "job.yaml");
    ASSERT_FALSE(job.ok()) << text;
    EXPECT_EQ(job.status().message(), "job.yaml: the file holds no TFJob or PyTorchJob");
  }
}

TEST(ParseJob, TopLevelMustBeAMapping) {
  StatusOr<Job> job = ParseJob("- a\n- b\n", "job.yaml");
  ASSERT_FALSE(job.ok());
  EXPECT_EQ(job.status().message(),
            "job.yaml:1:1: expected a mapping (a TFJob or PyTorchJob manifest), got a list");
}

TEST(ParseJob, MissingFile) {
  StatusOr<Job> job = ParseJobFile("/nonexistent/job.yaml");
  ASSERT_FALSE(job.ok());
  EXPECT_EQ(job.status().code(), Status::Code::kNotFound);
  EXPECT_EQ(job.status().message(), "/nonexistent/job.yaml: no such file");
}

// ---- Hostile input is refused, not crashed on ----

TEST(ParseJob, RefusesDeepNesting) {
  std::string text = "a: " + std::string(200, '[') + std::string(200, ']') + "\n";
  StatusOr<Job> job = ParseJob(text, "deep.yaml");
  ASSERT_FALSE(job.ok());
  EXPECT_THAT(job.status().message(), StartsWith("deep.yaml:1:"));
  EXPECT_THAT(job.status().message(), HasSubstr("nests deeper than 64 levels"));
}

TEST(ParseJob, RefusesDeepBlockNesting) {
  std::string text;
  for (int depth = 0; depth < 100; ++depth) text += std::string(depth, ' ') + "k:\n";
  StatusOr<Job> job = ParseJob(text, "deep.yaml");
  ASSERT_FALSE(job.ok());
  EXPECT_THAT(job.status().message(), HasSubstr("nests deeper than 64 levels"));
}

TEST(ParseJob, RefusesAliasBombs) {
  std::string text = "a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n";
  for (int level = 1; level < 10; ++level) {
    std::string previous = "*a" + std::to_string(level - 1);
    text += "a" + std::to_string(level) + ": &a" + std::to_string(level) + " [";
    for (int i = 0; i < 10; ++i) text += (i ? ", " : "") + previous;
    text += "]\n";
  }
  StatusOr<Job> job = ParseJob(text, "bomb.yaml");
  ASSERT_FALSE(job.ok());
  EXPECT_THAT(job.status().message(), HasSubstr("more than 100000 nodes"));
}

TEST(ParseJob, RefusesRecursiveAliases) {
  StatusOr<Job> job = ParseJob("a: &x [1, *x]\n", "loop.yaml");
  ASSERT_FALSE(job.ok());
  EXPECT_THAT(job.status().message(), HasSubstr("recursive alias"));
}

TEST(ParseJob, RefusesHugeInput) {
  std::string text(kMaxYamlBytes + 1, '#');
  StatusOr<Job> job = ParseJob(text, "huge.yaml");
  ASSERT_FALSE(job.ok());
  EXPECT_THAT(job.status().message(), StartsWith("huge.yaml: the file is larger than 4 MiB"));
}

// The probe of issue 17: a 3 MB string repeated 9^5 times through five levels of aliases has
// under 100,000 nodes but would expand to ~177 GB of text.
TEST(ParseJob, RefusesALongStringRepeatedThroughAliases) {
  std::string text = "s: &s " + std::string(3 * 1000 * 1000, 'x') + "\n";
  std::string previous = "*s";
  for (int level = 1; level <= 5; ++level) {
    std::string name = "l" + std::to_string(level);
    text += name + ": &" + name + " [";
    for (int i = 0; i < 9; ++i) text += (i ? ", " : "") + previous;
    text += "]\n";
    previous = "*" + name;
  }
  ASSERT_LT(text.size(), kMaxYamlBytes);
  StatusOr<Job> job = ParseJob(text, "aliases.yaml");
  ASSERT_FALSE(job.ok());
  // l1 holds 9 copies (27 MB, 30 MB with s itself); the first *l1 in l2 goes over 32 MiB.
  EXPECT_EQ(job.status().message(),
            "aliases.yaml:3:10: the document holds more than 32 MiB of text once aliases are "
            "expanded");
}

TEST(ParseJob, CountsTheTextOfAliasedKeysAndMappings) {
  std::string text = "m: &m {k: " + std::string(1000 * 1000, 'v') + "}\nl: [";
  for (int i = 0; i < 40; ++i) text += (i ? ", " : "") + std::string("*m");
  text += "]\n";
  StatusOr<Job> job = ParseJob(text, "mappings.yaml");
  ASSERT_FALSE(job.ok());
  EXPECT_THAT(job.status().message(),
              AllOf(StartsWith("mappings.yaml:2:"), HasSubstr("more than 32 MiB of text")));
}

TEST(ReadYamlFile, StopsAtTheLimitOnADeviceThatNeverEnds) {
  StatusOr<std::string> text = ReadYamlFile("/dev/zero");
  ASSERT_FALSE(text.ok());
  EXPECT_EQ(text.status().code(), Status::Code::kInvalidArgument);
  EXPECT_EQ(text.status().message(),
            "/dev/zero: the file is larger than 4 MiB; a job spec is a few kilobytes");
}

TEST(ParseJob, RefusesInvalidUtf8) {
  std::string text = Replace(kMinimal, "image: tf:2.15", "image: tf\xff");
  StatusOr<Job> job = ParseJob(text, "job.yaml");
  ASSERT_FALSE(job.ok());
  EXPECT_EQ(job.status().message(), "job.yaml:14:22: the text is not valid UTF-8");
}

TEST(ParseJob, LimitsTheNumberOfErrorsShown) {
  std::string text =
      "apiVersion: kubeflow.org/v1\nkind: TFJob\nmetadata: {name: x}\nspec:\n"
      "  tfReplicaSpecs:\n";
  for (int i = 0; i < 30; ++i) text += "    T" + std::to_string(i) + ": {replicas: x}\n";
  StatusOr<Job> job = ParseJob(text, "job.yaml");
  ASSERT_FALSE(job.ok());
  EXPECT_THAT(job.status().message(), HasSubstr("\n... and 10 more"));
}

// ---- LoadTFJob: all three steps ----

TEST(LoadJob, DefaultsAndValidates) {
  StatusOr<Job> job = LoadJob(Replace(kMinimal, "    Worker:", "    worker:"), "job.yaml");
  ASSERT_TRUE(job.ok()) << job.status().ToString();
  ASSERT_EQ(job->replica_specs.count("Worker"), 1u);
  EXPECT_EQ(job->replica_specs.at("Worker").template_spec.containers[0].ports[0].container_port,
            2222);
}

TEST(LoadJob, ReportsValidationErrorsWithPositions) {
  StatusOr<Job> job = LoadJob(Replace(kMinimal, "name: mnist", "name: MNIST"), "job.yaml");
  ASSERT_FALSE(job.ok());
  EXPECT_THAT(job.status().message(),
              StartsWith("job.yaml:4:9: metadata.name: \"MNIST\" is not valid: a DNS-1035 label"));
}

}  // namespace
}  // namespace cohort::job
