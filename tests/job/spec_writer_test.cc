#include "job/spec_writer.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "job/defaults.h"
#include "job/spec_parser.h"
#include "job/tfjob.h"

namespace cohort::job {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

std::string SpecPath(const std::string& name) {
  return std::string(COHORT_TEST_DATA_DIR) + "/specs/" + name;
}

Job LoadOrDie(const std::string& path) {
  StatusOr<Job> job = LoadJobFile(path);
  EXPECT_TRUE(job.ok()) << job.status().ToString();
  return job.ok() ? *job : Job{};
}

TEST(ToJson, WritesTheKubernetesShape) {
  json written = ToJson(LoadOrDie(SpecPath("kubeflow/simple.yaml")));
  json expected = json::parse(R"({
    "apiVersion": "kubeflow.org/v1",
    "kind": "TFJob",
    "metadata": {"name": "tfjob-simple", "namespace": "kubeflow"},
    "spec": {
      "runPolicy": {"cleanPodPolicy": "None"},
      "tfReplicaSpecs": {
        "Worker": {
          "replicas": 2,
          "restartPolicy": "OnFailure",
          "template": {
            "spec": {
              "containers": [{
                "name": "tensorflow",
                "image": "docker.io/kubeflowkatib/tf-mnist-with-summaries:latest",
                "command": ["python", "/opt/tf-mnist-with-summaries/mnist.py", "--epochs=1"],
                "ports": [{"name": "tfjob-port", "containerPort": 2222, "protocol": "TCP"}]
              }]
            }
          }
        }
      }
    }
  })");
  EXPECT_EQ(written, expected) << written.dump(2);
}

TEST(ToJson, KeepsKubernetesOnlyFieldsAndWritesEveryRunPolicyField) {
  json written = ToJson(LoadOrDie(SpecPath("full.yaml")));
  const json& spec = written["spec"];
  EXPECT_EQ(spec["runPolicy"], json::parse(R"({
    "cleanPodPolicy": "Running", "ttlSecondsAfterFinished": 600, "activeDeadlineSeconds": 7200,
    "backoffLimit": 3, "managedBy": "kubeflow.org/training-operator",
    "schedulingPolicy": {"minAvailable": 4, "queue": "research"}})"));
  EXPECT_EQ(spec["successPolicy"], "AllWorkers");
  EXPECT_EQ(written["metadata"]["labels"]["team"], "vision");
  const json& ps = spec["tfReplicaSpecs"]["PS"];
  EXPECT_EQ(ps["replicas"], 2);
  EXPECT_EQ(ps["restartPolicy"], "Always");
  const json& pod = ps["template"];
  EXPECT_EQ(pod["metadata"]["labels"]["app"], "full-job");
  EXPECT_EQ(pod["spec"]["nodeSelector"]["accelerator"], "nvidia-h100");
  const json& container = pod["spec"]["containers"][0];
  EXPECT_EQ(container["resources"]["limits"]["nvidia.com/gpu"], 1);
  EXPECT_EQ(container["env"][1]["valueFrom"]["secretKeyRef"]["name"], "aws");
  EXPECT_EQ(container["ports"].size(), 1u);  // tfjob-port was already there
  EXPECT_EQ(pod["spec"]["containers"][1]["name"], "log-shipper");
  EXPECT_EQ(spec["tfReplicaSpecs"]["Evaluator"]["replicas"], 1);
  EXPECT_EQ(spec["tfReplicaSpecs"]["Evaluator"]["restartPolicy"], "Never");
}

TEST(ToJson, TypedFieldsWinOverRaw) {
  Job job = LoadOrDie(SpecPath("kubeflow/dist-mnist.yaml"));
  PodTemplate& pod = job.replica_specs.at("Worker").template_spec;
  pod.containers[0].image = "other:2";
  pod.containers[0].env.push_back(EnvVar{"TF_CPP_MIN_LOG_LEVEL", "2", json()});
  pod.labels["extra"] = "yes";
  json written = PodTemplateToJson(pod);
  EXPECT_EQ(written["spec"]["containers"][0]["image"], "other:2");
  EXPECT_EQ(written["spec"]["containers"][0]["env"][0],
            json::parse(R"({"name": "TF_CPP_MIN_LOG_LEVEL", "value": "2"})"));
  EXPECT_EQ(written["metadata"]["labels"]["extra"], "yes");
}

TEST(ToJson, EnableDynamicWorkerOnlyWhenTrue) {
  Job job = LoadOrDie(SpecPath("kubeflow/dist-mnist.yaml"));
  EXPECT_FALSE(ToJson(job)["spec"].contains("enableDynamicWorker"));
  job.kind_spec[kEnableDynamicWorkerField] = true;
  job.run_policy.suspend = true;
  json written = ToJson(job);
  EXPECT_EQ(written["spec"]["enableDynamicWorker"], true);
  EXPECT_EQ(written["spec"]["runPolicy"]["suspend"], true);
}

// ---- Round trips ----

class RoundTripTest : public ::testing::TestWithParam<const char*> {};

TEST_P(RoundTripTest, JsonReadsBackToTheSameJob) {
  Job job = LoadOrDie(SpecPath(GetParam()));
  json written = ToJson(job);
  std::vector<std::string> warnings;
  StatusOr<Job> read_back = JobFromJson(written, &warnings);
  ASSERT_TRUE(read_back.ok()) << read_back.status().ToString();
  EXPECT_TRUE(warnings.empty());
  EXPECT_EQ(ToJson(*read_back), written);
  EXPECT_EQ(read_back->metadata.name, job.metadata.name);
  EXPECT_EQ(read_back->replica_specs.size(), job.replica_specs.size());
}

TEST_P(RoundTripTest, YamlReadsBackToTheSameJob) {
  json written = ToJson(LoadOrDie(SpecPath(GetParam())));
  std::string yaml = ToYaml(written);
  StatusOr<Job> read_back = LoadJob(yaml, "written.yaml");
  ASSERT_TRUE(read_back.ok()) << read_back.status().ToString() << "\n" << yaml;
  EXPECT_EQ(ToJson(*read_back), written) << yaml;
}

TEST_P(RoundTripTest, SavedSpecWithServerFieldsReadsBack) {
  json written = ToJson(LoadOrDie(SpecPath(GetParam())));
  json saved = written;
  saved["metadata"]["creationTimestamp"] = "2021-09-06T11:48:10Z";
  saved["status"] = json::parse(R"({"conditions": []})");
  std::vector<std::string> warnings;
  StatusOr<Job> read_back = JobFromJson(saved, &warnings);
  ASSERT_TRUE(read_back.ok()) << read_back.status().ToString();
  EXPECT_TRUE(warnings.empty());
  EXPECT_EQ(ToJson(*read_back), written);
}

INSTANTIATE_TEST_SUITE_P(Specs, RoundTripTest,
                         ::testing::Values("full.yaml", "kubeflow/simple.yaml",
                                           "kubeflow/dist-mnist.yaml",
                                           "kubeflow/estimator-api-distributed.yaml",
                                           "kubeflow/keras-multi-worker.yaml",
                                           "kubeflow/mnist-with-summaries.yaml",
                                           "kubeflow/dist-mnist-with-exithandler.yaml",
                                           "kubeflow/monitored-training-session.yaml",
                                           "kubeflow/v1-mnist-with-summaries.yaml"));

TEST(JobFromJson, ErrorsNameTheFieldPath) {
  json written = ToJson(LoadOrDie(SpecPath("kubeflow/simple.yaml")));
  written["spec"]["tfReplicaSpecs"]["Worker"]["replicas"] = "two";
  StatusOr<Job> job = JobFromJson(written);
  ASSERT_FALSE(job.ok());
  EXPECT_EQ(job.status().message(),
            "spec.tfReplicaSpecs.Worker.replicas: expected an integer, got \"two\"");
}

TEST(JobFromJson, RejectsOtherKinds) {
  StatusOr<Job> job = JobFromJson(json::parse(R"({"apiVersion": "v1", "kind": "Pod"})"));
  ASSERT_FALSE(job.ok());
  EXPECT_THAT(job.status().message(), HasSubstr("kind: \"Pod\" is not supported"));
  EXPECT_FALSE(JobFromJson(json::array()).ok());
  EXPECT_FALSE(JobFromJson(json()).ok());
}

// ---- YAML output ----

TEST(ToYaml, QuotesTextThatWouldReadAsSomethingElse) {
  json value = json::parse(R"({
    "bool": "true", "yes": "yes", "number": "2", "version": "1.0", "empty": "", "null": "null",
    "tilde": "~", "plain": "tf:2.15", "octal": "0123", "negative": "-1", "colon": "a: b",
    "hash": "# not a comment", "newline": "two\nlines", "int": 2, "float": 0.1, "big": 1e20,
    "really": true, "nothing": null, "list": [], "map": {}, "nested": [{"a": [1, "2"]}]})");
  std::string yaml = ToYaml(value);
  EXPECT_THAT(yaml, HasSubstr("bool: \"true\"\n"));
  EXPECT_THAT(yaml, HasSubstr("\"yes\": \"yes\"\n"));
  EXPECT_THAT(yaml, HasSubstr("empty: \"\"\n"));
  EXPECT_THAT(yaml, HasSubstr("plain: tf:2.15\n"));
  EXPECT_THAT(yaml, HasSubstr("int: 2\n"));
  EXPECT_THAT(yaml, HasSubstr("nothing: null\n"));
  EXPECT_THAT(yaml, HasSubstr("list: []\n"));
  EXPECT_THAT(yaml, HasSubstr("map: {}\n"));
}

TEST(ToYaml, ReadsBackToTheSameJson) {
  json value = json::parse(R"({
    "bool": "true", "yes": "yes", "number": "2", "version": "1.0", "empty": "", "null": "null",
    "tilde": "~", "plain": "tf:2.15", "octal": "0123", "negative": "-1", "colon": "a: b",
    "hash": "# not a comment", "newline": "two\nlines", "trailing": "x\n", "int": 2,
    "float": 0.1, "big": 1e20, "really": true, "nothing": null, "list": [], "map": {},
    "unicode": "caf\u00e9 \u2603", "control": "a\u0001b", "spaces": "  padded  ",
    "nested": [{"a": [1, "2", [3]]}]})");
  json object = json::parse(R"({"apiVersion": "kubeflow.org/v1", "kind": "TFJob",
                                "metadata": {"name": "x"}})");
  object["metadata"]["annotations"] = json::object();
  for (const auto& [key, item] : value.items()) {
    if (item.is_string()) object["metadata"]["annotations"][key] = item;
  }
  object["spec"] = {{"tfReplicaSpecs", {{"Worker", {{"template", {{"raw", value}}}}}}}};
  StatusOr<Job> job = ParseJob(ToYaml(object), "round.yaml");
  ASSERT_TRUE(job.ok()) << job.status().ToString() << "\n" << ToYaml(object);
  EXPECT_EQ(job->replica_specs.at("Worker").template_spec.raw["raw"], value) << ToYaml(object);
  EXPECT_EQ(job->metadata.annotations.size(), 17u);
  EXPECT_EQ(job->metadata.annotations.at("newline"), "two\nlines");
  EXPECT_EQ(job->metadata.annotations.at("spaces"), "  padded  ");
}

TEST(ToYaml, EndsWithANewline) {
  EXPECT_EQ(ToYaml(json("x")), "x\n");
  EXPECT_EQ(ToYaml(json::object()), "{}\n");
}

}  // namespace
}  // namespace cohort::job
