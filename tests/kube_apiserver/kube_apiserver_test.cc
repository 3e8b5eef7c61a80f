// Smoke tests of the real Kubernetes control plane that tests/testing/kube_test_cluster.h starts:
// what Cohort's Kubernetes code will rely on works against it, with kubectl (and, for /status,
// a raw request) as the client. Each test works in a namespace of its own.
#include <gtest/gtest.h>

#include <chrono>
#include <nlohmann/json.hpp>
#include <string>

#include "base/file.h"
#include "testing/kube_test_cluster.h"
#include "testing/wait.h"

namespace cohort::testing {
namespace {

using std::chrono::seconds;

constexpr const char* kCrdName = "tfjobs.kubeflow.org";

// A namespace named after the running test, e.g. "kube-cluster-tfjobcreatedandreadback".
std::string NamespaceOfThisTest() {
  std::string name = ::testing::UnitTest::GetInstance()->current_test_info()->name();
  for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return "kube-cluster-" + name;
}

std::string TfJobManifest(const std::string& name, const std::string& worker_replicas) {
  return "apiVersion: kubeflow.org/v1\n"
         "kind: TFJob\n"
         "metadata:\n"
         "  name: " +
         name +
         "\n"
         "spec:\n"
         "  runPolicy:\n"
         "    cleanPodPolicy: None\n"
         "  tfReplicaSpecs:\n"
         "    Worker:\n"
         "      replicas: " +
         worker_replicas +
         "\n"
         "      restartPolicy: Never\n"
         "      template:\n"
         "        spec:\n"
         "          containers:\n"
         "          - name: tensorflow\n"
         "            image: cohort-test/none\n";
}

// A pod that needs no service-account token (there is no kubelet to mount one) and never runs.
std::string PodManifest(const std::string& name, const std::string& owner_references) {
  return "apiVersion: v1\n"
         "kind: Pod\n"
         "metadata:\n"
         "  name: " +
         name + "\n" + owner_references +
         "spec:\n"
         "  automountServiceAccountToken: false\n"
         "  restartPolicy: Never\n"
         "  containers:\n"
         "  - name: tensorflow\n"
         "    image: cohort-test/none\n";
}

class KubeClusterSmokeTest : public KubeClusterTest {
 protected:
  void SetUp() override {
    KubeClusterTest::SetUp();
    if (IsSkipped() || HasFailure()) return;
    namespace_ = NamespaceOfThisTest();
    Status created = cluster().CreateNamespace(namespace_);
    ASSERT_TRUE(created.ok()) << created.ToString();
  }

  // Applies tests/data/kube/tfjob-crd-minimal.yaml (idempotent) and waits until it is Established.
  void InstallTfJobCrd() {
    StatusOr<std::string> crd =
        ReadWholeFile(std::string(COHORT_TEST_DATA_DIR) + "/kube/tfjob-crd-minimal.yaml");
    ASSERT_TRUE(crd.ok()) << crd.status().ToString();
    KubectlResult applied = cluster().Kubectl("apply -f -", *crd);
    ASSERT_TRUE(applied.ok()) << applied.Describe();
    KubectlResult established = cluster().Kubectl(std::string("wait --for=condition=Established "
                                                              "--timeout=60s crd/") +
                                                  kCrdName);
    ASSERT_TRUE(established.ok()) << established.Describe();
  }

  KubectlResult InNamespace(const std::string& arguments, const std::string& stdin_text = "") {
    return cluster().Kubectl("-n " + namespace_ + " " + arguments, stdin_text);
  }

  nlohmann::json GetJson(const std::string& what) {
    KubectlResult got = InNamespace("get " + what + " -o json");
    EXPECT_TRUE(got.ok()) << got.Describe();
    if (!got.ok()) return nlohmann::json();
    return nlohmann::json::parse(got.out, nullptr, /*allow_exceptions=*/false);
  }

  std::string namespace_;
};

TEST_F(KubeClusterSmokeTest, AppliedNamespaceIsActive) {
  const std::string name = namespace_ + "-applied";
  KubectlResult applied = cluster().Kubectl(
      "apply -f -", "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: " + name + "\n");
  ASSERT_TRUE(applied.ok()) << applied.Describe();
  KubectlResult phase = cluster().Kubectl("get namespace " + name + " -o jsonpath={.status.phase}");
  ASSERT_TRUE(phase.ok()) << phase.Describe();
  EXPECT_EQ(phase.out, "Active");
  // Applying the same manifest again changes nothing and succeeds.
  applied = cluster().Kubectl("apply -f -",
                              "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: " + name + "\n");
  EXPECT_TRUE(applied.ok()) << applied.Describe();
}

TEST_F(KubeClusterSmokeTest, TfJobCrdBecomesEstablishedAndServed) {
  ASSERT_NO_FATAL_FAILURE(InstallTfJobCrd());
  KubectlResult resources = cluster().Kubectl("api-resources --api-group=kubeflow.org -o name");
  ASSERT_TRUE(resources.ok()) << resources.Describe();
  EXPECT_EQ(resources.out, "tfjobs.kubeflow.org\n");
}

TEST_F(KubeClusterSmokeTest, TfJobCreatedAndReadBackWithUnknownFieldsPruned) {
  ASSERT_NO_FATAL_FAILURE(InstallTfJobCrd());
  std::string manifest = TfJobManifest("mnist", "2");
  manifest += "  notInTheSchema: dropped\n";
  KubectlResult created = InNamespace("create --validate=false -f -", manifest);
  ASSERT_TRUE(created.ok()) << created.Describe();

  const nlohmann::json job = GetJson("tfjob mnist");
  ASSERT_TRUE(job.is_object());
  EXPECT_EQ(job["metadata"]["namespace"], namespace_);
  EXPECT_FALSE(job["metadata"]["uid"].get<std::string>().empty());
  EXPECT_EQ(job["spec"]["tfReplicaSpecs"]["Worker"]["replicas"], 2);
  EXPECT_EQ(job["spec"]["tfReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]["image"],
            "cohort-test/none");
  EXPECT_EQ(job["spec"]["runPolicy"]["cleanPodPolicy"], "None");
  EXPECT_FALSE(job["spec"].contains("notInTheSchema")) << job.dump();

  KubectlResult listed = InNamespace("get tfjobs -o name");
  ASSERT_TRUE(listed.ok()) << listed.Describe();
  EXPECT_EQ(listed.out, "tfjob.kubeflow.org/mnist\n");
}

TEST_F(KubeClusterSmokeTest, SchemaRejectsStringReplicaCount) {
  ASSERT_NO_FATAL_FAILURE(InstallTfJobCrd());
  // --validate=false: the API server, not kubectl, judges the manifest.
  KubectlResult created = InNamespace("create --validate=false -f -", TfJobManifest("bad", "two"));
  EXPECT_NE(created.exit_code, 0) << created.out;
  EXPECT_NE(created.err.find("spec.tfReplicaSpecs.Worker.replicas"), std::string::npos)
      << created.err;
  EXPECT_NE(created.err.find("must be of type integer"), std::string::npos) << created.err;
  KubectlResult got = InNamespace("get tfjob bad");
  EXPECT_NE(got.exit_code, 0) << "the rejected TFJob was stored: " << got.out;
}

TEST_F(KubeClusterSmokeTest, StatusSubresourceTakesOnlyStatus) {
  ASSERT_NO_FATAL_FAILURE(InstallTfJobCrd());
  KubectlResult created = InNamespace("create -f -", TfJobManifest("status", "1"));
  ASSERT_TRUE(created.ok()) << created.Describe();

  const std::string path = "/apis/kubeflow.org/v1/namespaces/" + namespace_ + "/tfjobs/status";
  // Through /status the status changes and the spec does not.
  HttpAnswer patched = cluster().Request(
      "PATCH", path + "/status", "application/merge-patch+json",
      R"({"spec":{"runPolicy":{"cleanPodPolicy":"All"}},)"
      R"("status":{"conditions":[{"type":"Created","status":"True","reason":"TFJobCreated"}]}})");
  ASSERT_EQ(patched.status, 200) << patched.body;
  // Through the object itself, the other way round.
  KubectlResult main_patch = InNamespace(
      R"(patch tfjob status --type=merge -p '{"status":{"conditions":[]},"spec":{"runPolicy":{"backoffLimit":3}}}')");
  ASSERT_TRUE(main_patch.ok()) << main_patch.Describe();

  const nlohmann::json job = GetJson("tfjob status");
  ASSERT_TRUE(job.is_object());
  ASSERT_EQ(job["status"]["conditions"].size(), 1u) << job.dump();
  EXPECT_EQ(job["status"]["conditions"][0]["type"], "Created");
  EXPECT_EQ(job["spec"]["runPolicy"]["cleanPodPolicy"], "None");
  EXPECT_EQ(job["spec"]["runPolicy"]["backoffLimit"], 3);
}

TEST_F(KubeClusterSmokeTest, PodStatusPatchedAsAKubeletWould) {
  KubectlResult created = InNamespace("create -f -", PodManifest("worker-0", ""));
  ASSERT_TRUE(created.ok()) << created.Describe();
  KubectlResult phase = InNamespace("get pod worker-0 -o jsonpath={.status.phase}");
  ASSERT_TRUE(phase.ok()) << phase.Describe();
  EXPECT_EQ(phase.out, "Pending");

  HttpAnswer patched =
      cluster().Request("PATCH", "/api/v1/namespaces/" + namespace_ + "/pods/worker-0/status",
                        "application/strategic-merge-patch+json",
                        R"({"status":{"phase":"Running","podIP":"10.0.0.7",)"
                        R"("conditions":[{"type":"Ready","status":"True"}]}})");
  ASSERT_EQ(patched.status, 200) << patched.body;

  const nlohmann::json pod = GetJson("pod worker-0");
  ASSERT_TRUE(pod.is_object());
  EXPECT_EQ(pod["status"]["phase"], "Running");
  EXPECT_EQ(pod["status"]["podIP"], "10.0.0.7");
  EXPECT_FALSE(pod["spec"]["automountServiceAccountToken"].get<bool>());
}

TEST_F(KubeClusterSmokeTest, PodOfDeletedTfJobIsGarbageCollected) {
  ASSERT_NO_FATAL_FAILURE(InstallTfJobCrd());
  KubectlResult created = InNamespace("create -f -", TfJobManifest("owner", "1"));
  ASSERT_TRUE(created.ok()) << created.Describe();
  KubectlResult uid = InNamespace("get tfjob owner -o jsonpath={.metadata.uid}");
  ASSERT_TRUE(uid.ok() && !uid.out.empty()) << uid.Describe();
  const std::string owner_references =
      "  ownerReferences:\n"
      "  - apiVersion: kubeflow.org/v1\n"
      "    kind: TFJob\n"
      "    name: owner\n"
      "    uid: " +
      uid.out +
      "\n"
      "    controller: true\n"
      "    blockOwnerDeletion: true\n";
  created = InNamespace("create -f -", PodManifest("owner-worker-0", owner_references));
  ASSERT_TRUE(created.ok()) << created.Describe();
  // A pod without an owner stays: the collector deletes only dependents.
  created = InNamespace("create -f -", PodManifest("bystander", ""));
  ASSERT_TRUE(created.ok()) << created.Describe();

  KubectlResult deleted = InNamespace("delete tfjob owner --wait=true --timeout=60s");
  ASSERT_TRUE(deleted.ok()) << deleted.Describe();

  // The controller-manager's garbage collector learns the new kind from discovery (every 30 s)
  // and then deletes the dependent.
  KubectlResult pod;
  EXPECT_TRUE(WaitUntil(
      [&] {
        pod = InNamespace("get pod owner-worker-0 -o name");
        return !pod.ok() && pod.err.find("NotFound") != std::string::npos;
      },
      seconds(120), std::chrono::milliseconds(500)))
      << "the pod of the deleted TFJob was not collected in 120 s: " << pod.Describe() << pod.out;
  KubectlResult bystander = InNamespace("get pod bystander -o name");
  EXPECT_TRUE(bystander.ok()) << bystander.Describe();
}

TEST_F(KubeClusterSmokeTest, UserWithoutRolesIsForbidden) {
  KubectlResult listed = cluster().KubectlUnprivileged("get pods -n " + namespace_);
  EXPECT_NE(listed.exit_code, 0) << listed.out;
  EXPECT_NE(listed.err.find("forbidden"), std::string::npos) << listed.err;
  HttpAnswer readyz = cluster().Request("GET", "/readyz");
  EXPECT_EQ(readyz.status, 200) << readyz.body;
  EXPECT_EQ(readyz.body, "ok");
}

// `kubectl apply -k deploy/kubernetes` as the README says: the server accepts the shipped CRD,
// namespace, ServiceAccount, RBAC and the operator's Deployment (--validate=false: this 1.20
// server does not know the CRD's CEL rule). Last in this file: it replaces the minimal CRD.
TEST_F(KubeClusterSmokeTest, DeployKustomizationIsAcceptedByTheServer) {
  const std::string deploy = std::string(COHORT_TEST_DATA_DIR) + "/../../deploy/kubernetes";
  KubectlResult applied = cluster().Kubectl("apply --validate=false -k " + deploy);
  ASSERT_TRUE(applied.ok()) << applied.Describe();
  for (const std::string& object : {std::string("-n cohort-system deployment/cohort-operator"),
                                    std::string("-n cohort-system serviceaccount/cohort-operator"),
                                    std::string("clusterrole/cohort-operator"),
                                    std::string("clusterrolebinding/cohort-operator"),
                                    std::string("crd/tfjobs.kubeflow.org")}) {
    KubectlResult got = cluster().Kubectl("get " + object + " -o name");
    EXPECT_TRUE(got.ok()) << got.Describe();
  }
}

}  // namespace
}  // namespace cohort::testing
