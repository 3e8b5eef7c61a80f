#include "job/defaults.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "job/spec_parser.h"
#include "job/tfjob.h"
#include "job/validation.h"

namespace cohort::job {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

Job ParseOrDie(const std::string& text, std::vector<std::string>* warnings = nullptr) {
  StatusOr<Job> job = ParseJob(text, "job.yaml", warnings);
  EXPECT_TRUE(job.ok()) << job.status().ToString();
  return job.ok() ? *job : Job{};
}

// A manifest with one replica type `type` whose single container is `container_yaml` (indented
// to sit under "containers:").
std::string Manifest(const std::string& type, const std::string& container_yaml) {
  return "apiVersion: kubeflow.org/v1\n"
         "kind: TFJob\n"
         "metadata:\n"
         "  name: mnist\n"
         "spec:\n"
         "  tfReplicaSpecs:\n"
         "    " +
         type +
         ":\n"
         "      template:\n"
         "        spec:\n"
         "          containers:\n" +
         container_yaml;
}

constexpr const char* kTensorflowContainer =
    "            - name: tensorflow\n"
    "              image: tf:2.15\n";

TEST(ApplyDefaults, OperatorDefaultsForAMinimalJob) {
  Job job = ParseOrDie(Manifest("Worker", kTensorflowContainer));
  ApplyDefaults(job);
  EXPECT_EQ(job.metadata.namespace_name, "default");
  EXPECT_EQ(job.run_policy.clean_pod_policy, CleanPodPolicy::kNone);
  EXPECT_FALSE(job.run_policy.backoff_limit.has_value());
  EXPECT_FALSE(job.run_policy.active_deadline_seconds.has_value());
  EXPECT_FALSE(job.run_policy.ttl_seconds_after_finished.has_value());
  EXPECT_FALSE(job.run_policy.managed_by.has_value());
  EXPECT_FALSE(job.run_policy.suspend);
  EXPECT_EQ(TFJobSuccessPolicy(job), "");
  const ReplicaSpec& worker = job.replica_specs.at("Worker");
  EXPECT_EQ(worker.replicas, 1);
  EXPECT_EQ(worker.restart_policy, RestartPolicy::kNever);
  const std::vector<ContainerPort>& ports = worker.template_spec.containers[0].ports;
  ASSERT_EQ(ports.size(), 1u);
  EXPECT_EQ(ports[0].name, "tfjob-port");
  EXPECT_EQ(ports[0].container_port, 2222);
  EXPECT_EQ(ports[0].protocol, "TCP");
}

TEST(ApplyDefaults, KeepsAnExplicitNamespace) {
  std::string text = Manifest("Worker", kTensorflowContainer);
  text.replace(text.find("  name: mnist\n"), 14, "  name: mnist\n  namespace: kubeflow\n");
  Job job = ParseOrDie(text);
  ApplyDefaults(job);
  EXPECT_EQ(job.metadata.namespace_name, "kubeflow");
}

struct PortCase {
  const char* name;
  const char* containers;
  // "container:name:port" for every port after defaulting.
  std::vector<std::string> ports;
};

class DefaultPortTest : public ::testing::TestWithParam<PortCase> {};

TEST_P(DefaultPortTest, AddsTfjobPortWhereTheOperatorDoes) {
  Job job = ParseOrDie(Manifest("Worker", GetParam().containers));
  ApplyDefaults(job);
  std::vector<std::string> ports;
  for (const Container& container : job.replica_specs.at("Worker").template_spec.containers) {
    for (const ContainerPort& port : container.ports) {
      ports.push_back(container.name + ":" + port.name + ":" + std::to_string(port.container_port));
    }
  }
  EXPECT_EQ(ports, GetParam().ports);
}

INSTANTIATE_TEST_SUITE_P(
    Cases, DefaultPortTest,
    ::testing::Values(
        PortCase{"TensorflowContainer", kTensorflowContainer, {"tensorflow:tfjob-port:2222"}},
        PortCase{"KeepsAnExistingTfjobPort",
                 "            - name: tensorflow\n"
                 "              image: tf\n"
                 "              ports: [{name: tfjob-port, containerPort: 3333}]\n",
                 {"tensorflow:tfjob-port:3333"}},
        PortCase{"AppendsAfterOtherPorts",
                 "            - name: tensorflow\n"
                 "              image: tf\n"
                 "              ports: [{name: metrics, containerPort: 9090}]\n",
                 {"tensorflow:metrics:9090", "tensorflow:tfjob-port:2222"}},
        PortCase{"TensorflowIsNotFirst",
                 "            - name: sidecar\n"
                 "              image: envoy\n"
                 "            - name: tensorflow\n"
                 "              image: tf\n",
                 {"tensorflow:tfjob-port:2222"}},
        PortCase{"NoTensorflowContainerUsesTheFirst",
                 "            - name: trainer\n"
                 "              image: tf\n"
                 "            - name: sidecar\n"
                 "              image: envoy\n",
                 {"trainer:tfjob-port:2222"}}),
    [](const auto& info) { return std::string(info.param.name); });

TEST(ApplyDefaults, NoContainersNoPort) {
  std::string text = Manifest("Worker", "");
  text.replace(text.find("containers:\n"), 12, "containers: []\n");
  Job job = ParseOrDie(text);
  ApplyDefaults(job);
  EXPECT_THAT(job.replica_specs.at("Worker").template_spec.containers, IsEmpty());
}

class ReplicaTypeCaseTest : public ::testing::TestWithParam<std::pair<const char*, const char*>> {};

TEST_P(ReplicaTypeCaseTest, NormalisesKeysCaseInsensitively) {
  auto [written, canonical] = GetParam();
  Job job = ParseOrDie(Manifest(written, kTensorflowContainer));
  ApplyDefaults(job);
  ASSERT_EQ(job.replica_specs.size(), 1u);
  EXPECT_EQ(job.replica_specs.begin()->first, canonical);
  EXPECT_EQ(TFJobKind().CanonicalReplicaType(written), canonical);
}

INSTANTIATE_TEST_SUITE_P(
    Cases, ReplicaTypeCaseTest,
    ::testing::Values(std::make_pair("ps", "PS"), std::make_pair("Ps", "PS"),
                      std::make_pair("WORKER", "Worker"), std::make_pair("worker", "Worker"),
                      std::make_pair("chief", "Chief"), std::make_pair("MASTER", "Master"),
                      std::make_pair("evaluator", "Evaluator"), std::make_pair("PS", "PS"),
                      std::make_pair("Launcher", "Launcher"), std::make_pair("w", "w")));

TEST(ApplyDefaults, PositionsFollowRenamedReplicaTypes) {
  std::string text = Manifest("worker", "            - name: tensorflow\n");
  Job job = ParseOrDie(text);
  ApplyDefaults(job);
  SourcePosition replica = FindPosition(job, "spec.tfReplicaSpecs.Worker");
  EXPECT_EQ(replica.line, 7);
  EXPECT_EQ(replica.column, 5);
  // Messages after defaulting name the canonical type at the line as written.
  EXPECT_THAT(ValidationErrors(job),
              ElementsAre("job.yaml:11:15: spec.tfReplicaSpecs.Worker.template.spec."
                          "containers[0].image: is required"));
}

TEST(ApplyDefaults, TwoSpellingsOfOneTypeAreLeftForValidation) {
  std::string text = Manifest("ps", kTensorflowContainer) +
                     "    PS:\n"
                     "      template:\n"
                     "        spec:\n"
                     "          containers:\n" +
                     kTensorflowContainer;
  Job job = ParseOrDie(text);
  ApplyDefaults(job);
  EXPECT_EQ(job.replica_specs.size(), 2u);
  EXPECT_THAT(ValidationErrors(job),
              ElementsAre("job.yaml:7:5: spec.tfReplicaSpecs.ps: names the same replica type as "
                          "spec.tfReplicaSpecs.PS (replica types are case-insensitive)"));
}

TEST(ApplyDefaults, IsIdempotent) {
  Job job = ParseOrDie(Manifest("ps", kTensorflowContainer));
  ApplyDefaults(job);
  Job again = job;
  ApplyDefaults(again);
  EXPECT_EQ(again.replica_specs.at("PS").template_spec.containers[0].ports.size(), 1u);
  EXPECT_EQ(again.positions.size(), job.positions.size());
  EXPECT_EQ(FindPosition(again, "spec.tfReplicaSpecs.PS").line, 7);
}

// ---- Legacy run-policy fields directly under spec ----

std::string WithSpecFields(const std::string& fields) {
  std::string text = Manifest("Worker", kTensorflowContainer);
  const std::string marker = "spec:\n  tfReplicaSpecs:";
  text.replace(text.find(marker), marker.size(), "spec:\n" + fields + "  tfReplicaSpecs:");
  return text;
}

TEST(LegacyRunPolicy, SpecCleanPodPolicyMovesToRunPolicy) {
  std::vector<std::string> warnings;
  Job job = ParseOrDie(WithSpecFields("  cleanPodPolicy: All\n"), &warnings);
  EXPECT_EQ(job.run_policy.clean_pod_policy, CleanPodPolicy::kAll);
  EXPECT_THAT(warnings,
              ElementsAre("job.yaml:6:19: spec.cleanPodPolicy: read as "
                          "spec.runPolicy.cleanPodPolicy: this is where kubeflow.org/v1 manifests "
                          "put it before runPolicy existed, and the current Kubeflow operator "
                          "ignores it here"));
  // Later messages about the field point where it was written.
  EXPECT_EQ(FindPosition(job, "spec.runPolicy.cleanPodPolicy").line, 6);
}

TEST(LegacyRunPolicy, RunPolicyWinsWhenBothAreSet) {
  std::vector<std::string> warnings;
  Job job = ParseOrDie(
      WithSpecFields("  cleanPodPolicy: All\n  runPolicy:\n    cleanPodPolicy: Running\n"),
      &warnings);
  EXPECT_EQ(job.run_policy.clean_pod_policy, CleanPodPolicy::kRunning);
  EXPECT_THAT(warnings, ElementsAre("job.yaml:6:19: spec.cleanPodPolicy: ignored: "
                                    "spec.runPolicy.cleanPodPolicy is also set and takes "
                                    "precedence"));
}

TEST(LegacyRunPolicy, OtherFieldsMoveToo) {
  std::vector<std::string> warnings;
  Job job = ParseOrDie(WithSpecFields("  ttlSecondsAfterFinished: 60\n"
                                      "  activeDeadlineSeconds: 3600\n"
                                      "  backoffLimit: 2\n"
                                      "  runPolicy:\n"
                                      "    backoffLimit: 5\n"),
                       &warnings);
  EXPECT_EQ(job.run_policy.ttl_seconds_after_finished, 60);
  EXPECT_EQ(job.run_policy.active_deadline_seconds, 3600);
  EXPECT_EQ(job.run_policy.backoff_limit, 5);
  EXPECT_EQ(warnings.size(), 3u);
}

TEST(LegacyRunPolicy, ValidationErrorsPointAtTheLegacyLine) {
  Job job = ParseOrDie(WithSpecFields("  backoffLimit: -1\n"));
  ApplyDefaults(job);
  EXPECT_THAT(ValidationErrors(job),
              ElementsAre("job.yaml:6:17: spec.runPolicy.backoffLimit: must be greater than or "
                          "equal to 0, got -1"));
}

TEST(LegacyRunPolicy, TypeErrorsNameTheLegacyPath) {
  StatusOr<Job> job = ParseJob(WithSpecFields("  cleanPodPolicy: Sometimes\n"), "job.yaml");
  ASSERT_FALSE(job.ok());
  EXPECT_THAT(job.status().message(),
              HasSubstr("job.yaml:6:19: spec.cleanPodPolicy: \"Sometimes\" is not one of All"));
}

}  // namespace
}  // namespace cohort::job
