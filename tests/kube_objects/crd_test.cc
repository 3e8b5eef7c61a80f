// The TFJob CRD: Kubeflow's names, version, subresource and columns, a structural schema built
// from the job types that also keeps spec.cleanPodPolicy, and deploy/kubernetes/crd.yaml in step
// with `cohort crd`.
#include "kube/objects/crd.h"

#include <gtest/gtest.h>

#include <functional>
#include <string>

#include "base/file.h"
#include "job/spec_writer.h"
#include "job/tfjob.h"

namespace cohort::kube {
namespace {

using nlohmann::json;

const json kCrd = CustomResourceDefinition(job::TFJobKind());

const json& Version() { return kCrd["spec"]["versions"][0]; }
const json& SpecSchema() { return Version()["schema"]["openAPIV3Schema"]["properties"]["spec"]; }

TEST(CrdTest, NamesAndVersionAreKubeflows) {
  EXPECT_EQ(kCrd["apiVersion"], "apiextensions.k8s.io/v1");
  EXPECT_EQ(kCrd["kind"], "CustomResourceDefinition");
  EXPECT_EQ(kCrd["metadata"]["name"], "tfjobs.kubeflow.org");
  EXPECT_EQ(kCrd["spec"]["group"], "kubeflow.org");
  EXPECT_EQ(kCrd["spec"]["scope"], "Namespaced");
  EXPECT_EQ(kCrd["spec"]["names"], json({{"kind", "TFJob"},
                                         {"listKind", "TFJobList"},
                                         {"plural", "tfjobs"},
                                         {"singular", "tfjob"}}));
  ASSERT_EQ(kCrd["spec"]["versions"].size(), 1u);
  EXPECT_EQ(Version()["name"], "v1");
  EXPECT_EQ(Version()["served"], true);
  EXPECT_EQ(Version()["storage"], true);
  EXPECT_EQ(Version()["subresources"], json({{"status", json::object()}}));
  EXPECT_EQ(
      Version()["additionalPrinterColumns"],
      json::array(
          {{{"name", "State"}, {"type", "string"}, {"jsonPath", ".status.conditions[-1:].type"}},
           {{"name", "Age"}, {"type", "date"}, {"jsonPath", ".metadata.creationTimestamp"}}}));
}

TEST(CrdTest, SpecHasEveryFieldOfKubeflowsV1AndTheOlderCleanPodPolicy) {
  const json& properties = SpecSchema()["properties"];
  EXPECT_EQ(SpecSchema()["required"], json::array({"tfReplicaSpecs"}));
  for (const char* field :
       {"runPolicy", "successPolicy", "enableDynamicWorker", "tfReplicaSpecs", "cleanPodPolicy"}) {
    EXPECT_TRUE(properties.contains(field)) << field;
  }
  EXPECT_EQ(properties["enableDynamicWorker"]["type"], "boolean");
  EXPECT_EQ(properties["cleanPodPolicy"]["type"], "string");
  const json& run_policy = properties["runPolicy"]["properties"];
  for (const char* field : {"activeDeadlineSeconds", "backoffLimit", "cleanPodPolicy", "managedBy",
                            "schedulingPolicy", "suspend", "ttlSecondsAfterFinished"}) {
    EXPECT_TRUE(run_policy.contains(field)) << field;
  }
  EXPECT_EQ(run_policy["suspend"]["default"], false);
  EXPECT_EQ(run_policy["activeDeadlineSeconds"]["format"], "int64");
  const json& scheduling = run_policy["schedulingPolicy"]["properties"];
  EXPECT_EQ(scheduling["queue"]["x-kubernetes-validations"][0]["rule"], "self == oldSelf");
  for (const char* field :
       {"minAvailable", "minResources", "priorityClass", "queue", "scheduleTimeoutSeconds"}) {
    EXPECT_TRUE(scheduling.contains(field)) << field;
  }
  const json& replica = properties["tfReplicaSpecs"]["additionalProperties"]["properties"];
  EXPECT_EQ(replica["replicas"]["format"], "int32");
  EXPECT_EQ(replica["restartPolicy"]["type"], "string");
  EXPECT_EQ(replica["template"]["properties"]["spec"]["x-kubernetes-preserve-unknown-fields"],
            true);
  EXPECT_TRUE(replica["template"]["properties"]["metadata"]["properties"].contains("labels"));
}

// Structural: every schema node says its type, or keeps unknown fields, or is an int-or-string.
TEST(CrdTest, SchemaIsStructural) {
  int nodes = 0;
  std::function<void(const json&, const std::string&)> check = [&](const json& schema,
                                                                   const std::string& path) {
    ++nodes;
    bool typed = schema.contains("type") || schema.contains("x-kubernetes-int-or-string") ||
                 schema.contains("x-kubernetes-preserve-unknown-fields");
    EXPECT_TRUE(typed) << path;
    if (schema.contains("properties")) {
      for (const auto& [name, child] : schema["properties"].items())
        check(child, path + "." + name);
    }
    if (schema.contains("additionalProperties") && schema["additionalProperties"].is_object()) {
      check(schema["additionalProperties"], path + ".*");
    }
    if (schema.contains("items")) check(schema["items"], path + "[]");
  };
  check(Version()["schema"]["openAPIV3Schema"], "");
  EXPECT_GT(nodes, 40);
}

// deploy/kubernetes/crd.yaml holds every kind's CRD, one document each, TFJob's first.
TEST(CrdTest, CommittedManifestIsWhatCohortCrdPrints) {
  const std::string path = std::string(COHORT_TEST_DATA_DIR) + "/../../deploy/kubernetes/crd.yaml";
  StatusOr<std::string> committed = ReadWholeFile(path);
  ASSERT_TRUE(committed.ok()) << committed.status().message();
  std::string expected = "---\n" + job::ToYaml(kCrd);
  for (const job::JobKind* kind : job::KindRegistry::Default().kinds()) {
    if (kind != &job::TFJobKind())
      expected += "---\n" + job::ToYaml(CustomResourceDefinition(*kind));
  }
  EXPECT_EQ(*committed, expected)
      << "regenerate it: build/apps/cohort/cohort crd > deploy/kubernetes/crd.yaml";
}

}  // namespace
}  // namespace cohort::kube
