#include "job/ai_platform_job.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "job/job_file.h"
#include "job/replica_endpoints.h"
#include "job/tfjob.h"
#include "job/validation.h"
#include "manifest_text.h"

namespace cohort::job {
namespace {

using ::testing::AllOf;
using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;
using ::testing::StartsWith;

// A small valid CUSTOM job; tests replace parts of it. Line numbers matter to the tests below.
constexpr const char* kCustom = R"(jobId: census_2024
trainingInput:
  scaleTier: CUSTOM
  masterType: n1-standard-8
  masterConfig:
    imageUri: example/trainer:1.0
  workerType: n1-standard-8
  workerCount: 3
  parameterServerType: n1-highmem-4
  parameterServerCount: "2"
  args: [--epochs=3]
)";

// A TFJob manifest with the kind's default restart policy and no backoffLimit.
constexpr const char* kTFJobManifest = R"(apiVersion: kubeflow.org/v1
kind: TFJob
metadata: {name: plain}
spec:
  tfReplicaSpecs:
    Worker:
      template:
        spec:
          containers: [{name: tensorflow, image: tf:2.15}]
)";

StatusOr<JobFile> Load(const std::string& text, std::vector<std::string>* warnings = nullptr,
                       const std::string& name = "") {
  JobFileOptions options;
  options.job_name = name;
  return LoadJobFromText(text, "job.yaml", options, warnings);
}

// The message of a spec that must fail to load.
std::string LoadError(const std::string& text, const std::string& name = "") {
  StatusOr<JobFile> loaded = Load(text, nullptr, name);
  EXPECT_FALSE(loaded.ok()) << "loaded without an error:\n" << text;
  return loaded.ok() ? "" : loaded.status().message();
}

std::map<std::string, int32_t> ReplicaCounts(const Job& job) {
  std::map<std::string, int32_t> counts;
  for (const auto& [type, spec] : job.replica_specs) counts[type] = spec.replicas;
  return counts;
}

const Container& TensorflowOf(const Job& job, const std::string& type) {
  return *TFJobKind().MainContainer(job.replica_specs.at(type).template_spec);
}

// ---- Detection ----

TEST(AiPlatformDetection, TrainingInputWithoutKindIsAiPlatform) {
  StatusOr<std::vector<YamlDocument>> documents = ReadYamlDocuments(kCustom, "job.yaml");
  ASSERT_TRUE(documents.ok());
  EXPECT_TRUE(IsAiPlatformJob((*documents)[0]));
  StatusOr<JobFile> loaded = Load(kCustom);
  ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
  EXPECT_EQ(loaded->format, JobFileFormat::kAiPlatform);
}

TEST(AiPlatformDetection, AKubernetesObjectIsNeverAiPlatform) {
  std::string with_kind = std::string("kind: TFJob\n") + kCustom;
  StatusOr<std::vector<YamlDocument>> documents = ReadYamlDocuments(with_kind, "job.yaml");
  ASSERT_TRUE(documents.ok());
  EXPECT_FALSE(IsAiPlatformJob((*documents)[0]));
  // ... so the TFJob parser reads it and says what is wrong.
  EXPECT_THAT(LoadError(with_kind), HasSubstr("job.yaml:1:1: apiVersion: is required"));
}

TEST(AiPlatformDetection, ATFJobManifestLoadsAsBeforeAndRefusesName) {
  constexpr const char* manifest = R"(apiVersion: kubeflow.org/v1
kind: TFJob
metadata: {name: plain}
spec:
  tfReplicaSpecs:
    Worker:
      template:
        spec:
          containers: [{name: tensorflow, image: tf:2.15}]
)";
  StatusOr<JobFile> loaded = Load(manifest);
  ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
  EXPECT_EQ(loaded->format, JobFileFormat::kManifest);
  EXPECT_EQ(loaded->job.metadata.name, "plain");
  EXPECT_EQ(LoadError(manifest, "other"),
            "job.yaml: --name is for AI Platform job specs; a TFJob or PyTorchJob manifest names "
            "its job in metadata.name");
}

TEST(AiPlatformDetection, TheRestJobObjectInJsonIsRead) {
  constexpr const char* rest = R"({
  "jobId": "census",
  "state": "SUCCEEDED",
  "trainingOutput": {"completedTrialCount": "0"},
  "trainingInput": {
    "scaleTier": "CUSTOM",
    "masterType": "n1-standard-4",
    "masterConfig": {"imageUri": "example/trainer:1.0"},
    "workerType": "n1-standard-4",
    "workerCount": "2"
  }
})";
  std::vector<std::string> warnings;
  StatusOr<JobFile> loaded = Load(rest, &warnings);
  ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
  EXPECT_EQ(ReplicaCounts(loaded->job),
            (std::map<std::string, int32_t>{{kMaster, 1}, {kWorker, 2}}));
  // Output-only fields of a fetched job are ignored without a word; machine types are not.
  EXPECT_THAT(warnings, Not(Contains(HasSubstr("state"))));
  EXPECT_THAT(warnings, Contains(HasSubstr("job.yaml:7:19: trainingInput.masterType: ignored")));
}

TEST(AiPlatformDetection, MoreDocumentsAfterTheSpecAreAnError) {
  EXPECT_EQ(LoadError(std::string(kCustom) + "---\nkind: ConfigMap\n"),
            "job.yaml: an AI Platform job spec is a file of its own, and this one holds more "
            "documents after it");
}

// ---- Scale tiers ----

struct TierCase {
  const char* tier;
  int32_t workers;
  int32_t parameter_servers;
};

class ScaleTierTest : public ::testing::TestWithParam<TierCase> {};

TEST_P(ScaleTierTest, GivesTheTiersCluster) {
  std::string spec = std::string("jobId: tiered\ntrainingInput:\n  scaleTier: ") + GetParam().tier +
                     "\n  masterConfig: {imageUri: example/trainer:1.0}\n";
  StatusOr<JobFile> loaded = Load(spec);
  ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
  std::map<std::string, int32_t> expected = {{kMaster, 1}};
  if (GetParam().workers > 0) expected[kWorker] = GetParam().workers;
  if (GetParam().parameter_servers > 0) expected[kPS] = GetParam().parameter_servers;
  EXPECT_EQ(ReplicaCounts(loaded->job), expected);
}

INSTANTIATE_TEST_SUITE_P(EveryTier, ScaleTierTest,
                         ::testing::Values(TierCase{"BASIC", 0, 0}, TierCase{"STANDARD_1", 4, 3},
                                           TierCase{"PREMIUM_1", 19, 11},
                                           TierCase{"BASIC_GPU", 0, 0},
                                           TierCase{"BASIC_TPU", 0, 0}),
                         [](const auto& info) { return std::string(info.param.tier); });

TEST(ScaleTier, AbsentIsBasic) {
  StatusOr<JobFile> loaded =
      Load("jobId: basic\ntrainingInput:\n  masterConfig: {imageUri: example/trainer:1.0}\n");
  ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
  EXPECT_EQ(ReplicaCounts(loaded->job), (std::map<std::string, int32_t>{{kMaster, 1}}));
}

TEST(ScaleTier, AcceleratorTiersWarnThatTheAcceleratorIsNotAttached) {
  std::vector<std::string> warnings;
  ASSERT_TRUE(Load("jobId: gpu\ntrainingInput:\n  scaleTier: BASIC_GPU\n"
                   "  masterConfig: {imageUri: example/trainer:1.0}\n",
                   &warnings)
                  .ok());
  EXPECT_THAT(warnings, ElementsAre("job.yaml:3:14: trainingInput.scaleTier: ignored by a local "
                                    "run: its accelerator is not attached; the master runs as "
                                    "one process with this machine's devices"));
}

TEST(ScaleTier, UnknownTierIsAnError) {
  EXPECT_EQ(LoadError(Replace(kCustom, "scaleTier: CUSTOM", "scaleTier: STANDARD_2")),
            "job.yaml:3:14: trainingInput.scaleTier: \"STANDARD_2\" is not one of BASIC, "
            "STANDARD_1, PREMIUM_1, BASIC_GPU, BASIC_TPU, CUSTOM");
}

TEST(ScaleTier, CountsWithAPredefinedTierAreAnError) {
  std::string error = LoadError(Replace(kCustom, "scaleTier: CUSTOM", "scaleTier: STANDARD_1"));
  EXPECT_THAT(error, HasSubstr("job.yaml:8:16: trainingInput.workerCount: only scaleTier CUSTOM "
                               "takes counts; scaleTier STANDARD_1 decides the cluster by "
                               "itself"));
  EXPECT_THAT(error, HasSubstr("job.yaml:10:25: trainingInput.parameterServerCount: only"));
}

// ---- CUSTOM ----

TEST(CustomTier, CountsComeFromTheCountFieldsAsNumbersOrStrings) {
  StatusOr<JobFile> loaded =
      Load(std::string(kCustom) + "  evaluatorType: n1-standard-4\n  evaluatorCount: 1\n");
  ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
  EXPECT_EQ(
      ReplicaCounts(loaded->job),
      (std::map<std::string, int32_t>{{kEvaluator, 1}, {kMaster, 1}, {kPS, 2}, {kWorker, 3}}));
  for (const auto& [type, spec] : loaded->job.replica_specs) {
    EXPECT_EQ(spec.restart_policy, RestartPolicy::kExitCode) << type;
  }
  // AI Platform never lists the evaluator in TF_CONFIG's cluster.
  EXPECT_FALSE(EvaluatorInCluster(loaded->job));
}

TEST(CustomTier, ZeroCountsLeaveTheReplicaTypeOut) {
  StatusOr<JobFile> loaded = Load(Replace(kCustom, "workerCount: 3", "workerCount: 0"));
  ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
  EXPECT_EQ(ReplicaCounts(loaded->job), (std::map<std::string, int32_t>{{kMaster, 1}, {kPS, 2}}));
  // No evaluator, so no word about it (only the job ID census_2024 is kept).
  EXPECT_EQ(loaded->job.metadata.annotations,
            (std::map<std::string, std::string>{{kAiPlatformJobIdAnnotation, "census_2024"}}));
}

TEST(CustomTier, ANegativeCountIsAnErrorAtItsPosition) {
  EXPECT_EQ(LoadError(Replace(kCustom, "workerCount: 3", "workerCount: \"-1\"")),
            "job.yaml:8:16: trainingInput.workerCount: \"-1\" must be a non-negative integer");
  EXPECT_EQ(LoadError(Replace(kCustom, "workerCount: 3", "workerCount: 2.5")),
            "job.yaml:8:16: trainingInput.workerCount: 2.5 must be a non-negative integer");
  EXPECT_EQ(LoadError(Replace(kCustom, "workerCount: 3", "workerCount: 3000000000")),
            "job.yaml:8:16: trainingInput.workerCount: 3000000000 is more than the 2147483647 "
            "replicas a TFJob can have");
}

TEST(CustomTier, MachineTypesAreRequiredAsOnAiPlatform) {
  std::string error = LoadError(Replace(Replace(kCustom, "  masterType: n1-standard-8\n", ""),
                                        "  workerType: n1-standard-8\n", ""));
  EXPECT_EQ(error,
            "job.yaml:2:1: trainingInput.masterType: is required with scaleTier CUSTOM, as AI "
            "Platform requires it (a local run does not use its value)\n"
            "job.yaml:2:1: trainingInput.workerType: is required when workerCount is above 0, as "
            "AI Platform requires it (a local run does not use its value)");
}

// ---- The master ----

TEST(Master, IsTheMasterReplicaWithTaskTypeMaster) {
  StatusOr<JobFile> loaded = Load(kCustom);
  ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
  EXPECT_EQ(loaded->job.replica_specs.count(kChief), 0u);
  std::optional<std::string> tf_config =
      TfConfigForReplica(loaded->job, kMaster, 0, KubernetesEndpoints(loaded->job));
  ASSERT_TRUE(tf_config.has_value());
  EXPECT_THAT(*tf_config, HasSubstr(R"("master":["census-2024-master-0.default.svc:2222"])"));
  EXPECT_THAT(*tf_config, HasSubstr(R"("task":{"type":"master","index":0})"));
}

TEST(Master, IsTheChiefWithUseChiefInTfConfig) {
  StatusOr<JobFile> loaded = Load(std::string(kCustom) + "  useChiefInTfConfig: true\n");
  ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
  EXPECT_EQ(loaded->job.replica_specs.count(kMaster), 0u);
  std::optional<std::string> tf_config =
      TfConfigForReplica(loaded->job, kChief, 0, KubernetesEndpoints(loaded->job));
  ASSERT_TRUE(tf_config.has_value());
  EXPECT_THAT(*tf_config, HasSubstr(R"("task":{"type":"chief","index":0})"));
}

TEST(Master, UseChiefInTfConfigMustBeABoolean) {
  EXPECT_EQ(LoadError(std::string(kCustom) + "  useChiefInTfConfig: \"yes\"\n"),
            "job.yaml:12:23: trainingInput.useChiefInTfConfig: expected true or false, got "
            "\"yes\"");
}

// ---- Containers ----

TEST(Containers, EveryReplicaRunsTheMastersImageWithTheJobsArgs) {
  StatusOr<JobFile> loaded = Load(kCustom);
  ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
  for (const char* type : {kMaster, kWorker, kPS}) {
    const Container& container = TensorflowOf(loaded->job, type);
    EXPECT_EQ(container.name, "tensorflow");
    EXPECT_EQ(container.image, "example/trainer:1.0") << type;
    EXPECT_THAT(container.args, ElementsAre("--epochs=3")) << type;
    EXPECT_THAT(container.command, IsEmpty());
  }
}

TEST(Containers, ARolesConfigOverridesImageCommandAndArgs) {
  StatusOr<JobFile> loaded =
      Load(std::string(kCustom) +
           "  parameterServerConfig:\n    imageUri: example/ps:2.0\n    containerCommand: [serve]\n"
           "    containerArgs: [--port=2222]\n");
  ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
  const Container& parameter_server = TensorflowOf(loaded->job, kPS);
  EXPECT_EQ(parameter_server.image, "example/ps:2.0");
  EXPECT_THAT(parameter_server.command, ElementsAre("serve"));
  EXPECT_THAT(parameter_server.args, ElementsAre("--port=2222"));
  EXPECT_EQ(TensorflowOf(loaded->job, kWorker).image, "example/trainer:1.0");
}

TEST(Containers, JobDirIsPassedAsJobDirArgument) {
  std::vector<std::string> warnings;
  StatusOr<JobFile> loaded =
      Load(std::string(kCustom) + "  jobDir: gs://bucket/census\n", &warnings);
  ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
  EXPECT_THAT(TensorflowOf(loaded->job, kWorker).args,
              ElementsAre("--epochs=3", "--job-dir=gs://bucket/census"));
  // The local run's warning about storage URLs names the argument where jobDir was written.
  EXPECT_THAT(LocalRunWarnings(loaded->job),
              Contains(StartsWith("job.yaml:12:11: spec.tfReplicaSpecs.Master.template.spec."
                                  "containers[0].args[1]: a URL: a local run has no gs:// "
                                  "storage")));
}

TEST(Containers, StorageUrlsInArgsAreWarnedAboutWhereTheyAreWritten) {
  std::string spec = Replace(kCustom, "  args: [--epochs=3]\n",
                             "  args: [--epochs=3, --out=s3://b/o]\n"
                             "  workerConfig:\n"
                             "    containerArgs: [--in=hdfs://n/i]\n");
  StatusOr<JobFile> loaded = Load(spec);
  ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
  EXPECT_THAT(LocalRunWarnings(loaded->job),
              AllOf(Contains(StartsWith("job.yaml:11:22: spec.tfReplicaSpecs.Master.template.spec."
                                        "containers[0].args[1]: a URL: a local run has no s3://")),
                    Contains(StartsWith("job.yaml:13:21: spec.tfReplicaSpecs.Worker.template.spec."
                                        "containers[0].args[0]: a URL: a local run has no "
                                        "hdfs://"))));
}

TEST(Containers, APythonPackageWithoutAnImageIsAnError) {
  std::string spec = Replace(kCustom, "  masterConfig:\n    imageUri: example/trainer:1.0\n",
                             "  packageUris: [gs://bucket/trainer-0.1.tar.gz]\n"
                             "  pythonModule: trainer.task\n");
  std::string error = LoadError(spec);
  EXPECT_THAT(error, HasSubstr("job.yaml:5:3: trainingInput.packageUris: runs Python code on AI "
                               "Platform's runtime images, which a local run does not have: "
                               "build a container image with the code and set "
                               "trainingInput.masterConfig.imageUri (then map it with --image)"));
  EXPECT_THAT(error, HasSubstr("job.yaml:6:17: trainingInput.pythonModule: runs Python code"));
  // The module's line suggests the image mapping that runs it.
  EXPECT_THAT(error, HasSubstr("(then map it with --image); e.g. imageUri: trainer, run with "
                               "--image 'trainer=python3 -m trainer.task'"));
}

TEST(Containers, NoImageAtAllIsAnError) {
  EXPECT_EQ(LoadError(Replace(kCustom, "  masterConfig:\n    imageUri: example/trainer:1.0\n", "")),
            "job.yaml:2:1: trainingInput.masterConfig.imageUri: is required: a local run runs a "
            "container image (mapped to a command with --image)");
}

TEST(Containers, AnEmptyImageFailsValidationAtTheImageUriLine) {
  EXPECT_EQ(LoadError(Replace(kCustom, "imageUri: example/trainer:1.0", "imageUri: \"\"")),
            "job.yaml:6:15: spec.tfReplicaSpecs.Master.template.spec.containers[0].image: is "
            "required\n"
            "job.yaml:6:15: spec.tfReplicaSpecs.PS.template.spec.containers[0].image: is "
            "required\n"
            "job.yaml:6:15: spec.tfReplicaSpecs.Worker.template.spec.containers[0].image: is "
            "required");
}

TEST(Containers, WrongTypesAreErrors) {
  std::string error = LoadError(Replace(kCustom, "args: [--epochs=3]", "args: --epochs=3"));
  EXPECT_EQ(error,
            "job.yaml:11:9: trainingInput.args: expected a list of strings, got "
            "\"--epochs=3\"");
}

// ---- Scheduling ----

TEST(Scheduling, MaxRunningTimeIsTheActiveDeadline) {
  StatusOr<JobFile> loaded =
      Load(std::string(kCustom) + "  scheduling:\n    maxRunningTime: 7200s\n");
  ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
  EXPECT_EQ(loaded->job.run_policy.active_deadline_seconds, 7200);
  loaded = Load(std::string(kCustom) + "  scheduling: {maxRunningTime: 1.25s}\n");
  ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
  EXPECT_EQ(loaded->job.run_policy.active_deadline_seconds, 2);
}

TEST(Scheduling, WithoutMaxRunningTimeTheDeadlineIsSevenDaysAsOnAiPlatform) {
  StatusOr<JobFile> loaded = Load(kCustom);
  ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
  EXPECT_EQ(loaded->job.run_policy.active_deadline_seconds, 7 * 24 * 3600);
}

TEST(Scheduling, AMalformedDurationIsAnError) {
  EXPECT_EQ(LoadError(std::string(kCustom) + "  scheduling:\n    maxRunningTime: 2h\n"),
            "job.yaml:13:21: trainingInput.scheduling.maxRunningTime: \"2h\" is not a duration in "
            "seconds such as \"7200s\"");
}

// ---- Failures, as AI Platform fails a job ----

TEST(Failures, EveryReplicaFailsTheJobOnItsOwnErrorAndIsRestartedAfterASignal) {
  StatusOr<JobFile> loaded = Load(kCustom);
  ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
  // ExitCode: an exit of 1-127 fails the job at once; 128 + N (a kill, the OOM killer) restarts.
  for (const auto& [type, spec] : loaded->job.replica_specs) {
    EXPECT_EQ(spec.restart_policy, RestartPolicy::kExitCode) << type;
  }
  EXPECT_EQ(loaded->job.run_policy.backoff_limit, kAiPlatformBackoffLimit);
  EXPECT_EQ(kAiPlatformBackoffLimit, 5);
}

TEST(Failures, ATFJobManifestKeepsItsOwnPolicies) {
  StatusOr<JobFile> loaded = LoadJobFromText(std::string(kTFJobManifest), "tfjob.yaml", {});
  ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
  EXPECT_NE(loaded->job.replica_specs.at(kWorker).restart_policy, RestartPolicy::kExitCode);
  EXPECT_FALSE(loaded->job.run_policy.backoff_limit.has_value());
}

// ---- gcloud's submit flags ----

JobFileOptions WithFlags(const std::string& name, const std::string& job_id,
                         AiPlatformCommandLine command_line) {
  JobFileOptions options;
  options.job_name = name;
  options.job_id = job_id;
  options.ai_platform = std::move(command_line);
  return options;
}

TEST(CommandLine, FlagsOverrideTheConfigAndArgsAfterTheSeparatorAreAppended) {
  AiPlatformCommandLine flags;
  flags.training_input = {{"jobDir", "/tmp/model"},
                          {"masterConfig", {{"imageUri", "example/trainer:2.0"}}},
                          {"workerConfig", {{"imageUri", "example/worker:2.0"}}}};
  flags.flag_of_field = {{"trainingInput.jobDir", "--job-dir"},
                         {"trainingInput.masterConfig.imageUri", "--master-image-uri"},
                         {"trainingInput.workerConfig.imageUri", "--worker-image-uri"}};
  flags.user_args = {"--train-files=/data/train.csv", "--num-epochs=2"};
  StatusOr<JobFile> loaded =
      LoadJobFromText(kCustom, "job.yaml", WithFlags("", "", flags), nullptr);
  ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
  EXPECT_THAT(TensorflowOf(loaded->job, kMaster).args,
              ElementsAre("--epochs=3", "--train-files=/data/train.csv", "--num-epochs=2",
                          "--job-dir=/tmp/model"));
  EXPECT_EQ(TensorflowOf(loaded->job, kMaster).image, "example/trainer:2.0");
  EXPECT_EQ(TensorflowOf(loaded->job, kWorker).image, "example/worker:2.0");
  // Parameter servers fall back to the master's image, the flag's.
  EXPECT_EQ(TensorflowOf(loaded->job, kPS).image, "example/trainer:2.0");
}

TEST(CommandLine, AScaleTierFlagReplacesTheConfigsAndIsNamedInMessages) {
  AiPlatformCommandLine flags;
  flags.training_input = {{"scaleTier", "BASIC"}};
  flags.flag_of_field = {{"trainingInput.scaleTier", "--scale-tier"}};
  StatusOr<JobFile> basic = LoadJobFromText("trainingInput:\n  masterConfig: {imageUri: t}\n",
                                            "job.yaml", WithFlags("j", "", flags));
  ASSERT_TRUE(basic.ok()) << basic.status().ToString();
  EXPECT_EQ(ReplicaCounts(basic->job), (std::map<std::string, int32_t>{{kMaster, 1}}));
  flags.training_input = {{"scaleTier", "HUGE_1"}};
  StatusOr<JobFile> wrong = LoadJobFromText("trainingInput:\n  masterConfig: {imageUri: t}\n",
                                            "job.yaml", WithFlags("j", "", flags));
  ASSERT_FALSE(wrong.ok());
  EXPECT_THAT(wrong.status().message(), StartsWith("--scale-tier: \"HUGE_1\" is not one of"));
}

TEST(CommandLine, APythonPackageWithoutAnImageSaysWhatWouldRunIt) {
  AiPlatformCommandLine flags;
  flags.training_input = {{"pythonModule", "trainer.task"},
                          {"packageUris", {"/home/u/base/trainer"}},
                          {"runtimeVersion", "2.1"},
                          {"pythonVersion", "3.7"}};
  flags.flag_of_field = {{"trainingInput.pythonModule", "--module-name"},
                         {"trainingInput.packageUris", "--package-path"},
                         {"trainingInput.runtimeVersion", "--runtime-version"},
                         {"trainingInput.pythonVersion", "--python-version"}};
  StatusOr<JobFile> loaded = LoadJobFromText("trainingInput:\n  scaleTier: BASIC\n", "config.yaml",
                                             WithFlags("train-1", "train_1", flags));
  ASSERT_FALSE(loaded.ok());
  EXPECT_EQ(loaded.status().message(),
            "--module-name: a Python package runs on AI Platform's runtime (runtime version 2.1, "
            "Python 3.7), and this machine has no such runtime to run it: name an image for the "
            "trainer with --master-image-uri and map it to a command with --image, e.g. "
            "--master-image-uri trainer --image 'trainer=python3 -m trainer.task' run from the "
            "directory above /home/u/base/trainer");
}

TEST(CommandLine, FlagsAreRefusedForAManifest) {
  AiPlatformCommandLine flags;
  flags.user_args = {"--epochs=1"};
  StatusOr<JobFile> loaded =
      LoadJobFromText(std::string(kTFJobManifest), "tfjob.yaml", WithFlags("", "", flags));
  ASSERT_FALSE(loaded.ok());
  EXPECT_THAT(loaded.status().message(), HasSubstr("gcloud's flags"));
}

// ---- The name ----

TEST(JobName, AJobIdThatIsNotTheNameIsKeptForGcloudsCommands) {
  StatusOr<JobFile> from_argument = LoadJobFromText(
      kCustom, "job.yaml", WithFlags("train-tensorflow-taxi-5", "train_tensorflow_taxi_5", {}));
  ASSERT_TRUE(from_argument.ok()) << from_argument.status().ToString();
  EXPECT_EQ(from_argument->job.metadata.name, "train-tensorflow-taxi-5");
  EXPECT_EQ(AiPlatformJobId(from_argument->job), "train_tensorflow_taxi_5");
  StatusOr<JobFile> from_job_id = Load(kCustom);
  ASSERT_TRUE(from_job_id.ok()) << from_job_id.status().ToString();
  EXPECT_EQ(from_job_id->job.metadata.name, "census-2024");
  EXPECT_EQ(AiPlatformJobId(from_job_id->job), "census_2024");
  // An ID that is the name needs no annotation.
  StatusOr<JobFile> same = Load(Replace(kCustom, "census_2024", "census"));
  ASSERT_TRUE(same.ok()) << same.status().ToString();
  EXPECT_EQ(same->job.metadata.annotations.count(kAiPlatformJobIdAnnotation), 0u);
  EXPECT_EQ(AiPlatformJobId(same->job), "census");
}

TEST(JobName, ComesFromJobIdMadeDns1035Valid) {
  StatusOr<JobFile> loaded = Load(Replace(kCustom, "census_2024", "Census_Run.7"));
  ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
  EXPECT_EQ(loaded->job.metadata.name, "census-run-7");
}

TEST(JobName, TheNameOptionWins) {
  StatusOr<JobFile> loaded = Load(kCustom, nullptr, "nightly");
  ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
  EXPECT_EQ(loaded->job.metadata.name, "nightly");
}

TEST(JobName, AJobIdThatCannotBeANameIsAnErrorNamingTheWayOut) {
  EXPECT_EQ(LoadError(Replace(kCustom, "census_2024", "2024_census")),
            "job.yaml:1:8: jobId: \"2024_census\" cannot be a TFJob's name: a TFJob's name starts "
            "with a letter; pass --name NAME");
  EXPECT_EQ(LoadError(Replace(kCustom, "census_2024", "census/2024")),
            "job.yaml:1:8: jobId: \"census/2024\" cannot be a TFJob's name: it has '/', and a "
            "TFJob's name has only letters, digits and '-'; pass --name NAME");
  EXPECT_EQ(LoadError(Replace(kCustom, "jobId: census_2024\n", "")),
            "job.yaml:1:1: the job has no name: set jobId, or pass --name NAME");
}

TEST(JobName, ANameWithoutJobIdNamesOnlyASpecWithoutOne) {
  JobFileOptions options;
  options.name_without_job_id = "from-file";
  StatusOr<JobFile> unnamed =
      LoadJobFromText(Replace(kCustom, "jobId: census_2024\n", ""), "job.yaml", options);
  ASSERT_TRUE(unnamed.ok()) << unnamed.status().ToString();
  EXPECT_EQ(unnamed->job.metadata.name, "from-file");
  StatusOr<JobFile> named = LoadJobFromText(kCustom, "job.yaml", options);
  ASSERT_TRUE(named.ok()) << named.status().ToString();
  EXPECT_EQ(named->job.metadata.name, "census-2024");
}

TEST(JobName, LabelsBecomeTheTFJobsLabels) {
  StatusOr<JobFile> loaded = Load(std::string("labels: {team: census}\n") + kCustom);
  ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
  EXPECT_EQ(loaded->job.metadata.labels, (std::map<std::string, std::string>{{"team", "census"}}));
}

// ---- What a local run cannot do ----

TEST(LocalRun, CloudOnlyFieldsWarnOnceEachAtTheirPositions) {
  std::vector<std::string> warnings;
  StatusOr<JobFile> loaded =
      Load(std::string(kCustom) +
               "  region: us-central1\n  runtimeVersion: \"2.11\"\n  pythonVersion: \"3.7\"\n"
               "  workerConfig:\n    acceleratorConfig: {count: 1, type: NVIDIA_TESLA_T4}\n"
               "  scheduling: {maxWaitTime: 3600s}\n  colour: blue\n",
           &warnings);
  ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
  EXPECT_THAT(
      warnings,
      ElementsAre(
          "job.yaml:4:15: trainingInput.masterType: ignored by a local run: machine types are not "
          "emulated; every replica is a process on this machine",
          "job.yaml:7:15: trainingInput.workerType: ignored by a local run: machine types are not "
          "emulated; every replica is a process on this machine",
          "job.yaml:9:24: trainingInput.parameterServerType: ignored by a local run: machine "
          "types are not emulated; every replica is a process on this machine",
          "job.yaml:12:11: trainingInput.region: ignored by a local run: every replica runs on "
          "this machine",
          "job.yaml:13:19: trainingInput.runtimeVersion: ignored by a local run: the container "
          "image decides the TensorFlow version",
          "job.yaml:14:18: trainingInput.pythonVersion: ignored by a local run: the container "
          "image decides the Python version",
          "job.yaml:16:5: trainingInput.workerConfig.acceleratorConfig: ignored by a local run: "
          "accelerators are not attached; the replica sees this machine's",
          "job.yaml:17:29: trainingInput.scheduling.maxWaitTime: ignored by a local run: there "
          "is no queue; the job starts at once",
          "job.yaml:18:11: trainingInput.colour: not a field of AI Platform's TrainingInput; "
          "ignored"));
}

TEST(LocalRun, HyperparameterTuningAndPredictionAreErrors) {
  EXPECT_THAT(LoadError(std::string(kCustom) + "  hyperparameters: {goal: MAXIMIZE}\n"),
              HasSubstr("job.yaml:12:3: trainingInput.hyperparameters: hyperparameter tuning "
                        "runs many trials of a job"));
  EXPECT_THAT(LoadError(std::string("predictionInput: {dataFormat: JSON}\n") + kCustom),
              HasSubstr("job.yaml:1:1: predictionInput: a batch prediction job"));
}

TEST(LocalRun, ProblemsAreAllReportedInDocumentOrder) {
  std::string spec = Replace(Replace(kCustom, "workerCount: 3", "workerCount: -4"),
                             "parameterServerCount: \"2\"", "parameterServerCount: many");
  EXPECT_EQ(LoadError(spec),
            "job.yaml:8:16: trainingInput.workerCount: -4 must be a non-negative integer\n"
            "job.yaml:10:25: trainingInput.parameterServerCount: \"many\" must be a non-negative "
            "integer");
}

// ---- Names ----

TEST(JobNameForJobId, LowerCasesAndTurnsSeparatorsIntoDashes) {
  EXPECT_EQ(*JobNameForJobId("Taxi_Train.v2"), "taxi-train-v2");
  EXPECT_FALSE(JobNameForJobId("taxi_").ok());
  EXPECT_FALSE(JobNameForJobId("").ok());
  EXPECT_FALSE(JobNameForJobId(std::string(64, 'a')).ok());
  EXPECT_TRUE(JobNameForJobId(std::string(63, 'a')).ok());
}

}  // namespace
}  // namespace cohort::job
