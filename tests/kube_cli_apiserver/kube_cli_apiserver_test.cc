// `cohort ... --kubernetes` through the real binary against a real kube-apiserver
// (tests/testing/kube_test_cluster.h) with the CRD `cohort crd` prints: the server accepts the
// TFJobs Cohort writes (a manifest and a converted AI Platform spec), merge patches of
// spec.runPolicy.suspend, watches and deletes them. There is no operator and no kubelet: the test
// writes the TFJob's /status as an operator would.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <thread>

#include "testing/files.h"
#include "testing/kube_test_cluster.h"
#include "testing/processes.h"
#include "testing/scratch_directory.h"
#include "testing/wait.h"

namespace cohort::testing {
namespace {

using json = nlohmann::json;
using namespace std::chrono_literals;

const char kHelloManifest[] = R"(apiVersion: kubeflow.org/v1
kind: TFJob
metadata:
  name: hello
spec:
  tfReplicaSpecs:
    Worker:
      replicas: 2
      restartPolicy: OnFailure
      template:
        spec:
          containers:
            - name: tensorflow
              image: localhost/hello
)";

struct Result {
  int exit_code = -1;
  std::string out;
  std::string err;
};

class KubeCliClusterTest : public KubeClusterTest {
 protected:
  void SetUp() override {
    KubeClusterTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    // The CRD Cohort ships. The test server is v1.20, which predates the CEL rules
    // (x-kubernetes-validations) in it: kubectl's client-side validation would refuse them, and
    // the server drops them, so the schema is checked without them.
    Result crd = Cohort("crd");
    ASSERT_EQ(crd.exit_code, 0) << crd.err;
    KubectlResult applied = cluster().Kubectl("apply --validate=false -f -", crd.out);
    ASSERT_TRUE(applied.ok()) << applied.Describe();
    KubectlResult established =
        cluster().Kubectl("wait --for=condition=Established --timeout=60s crd/tfjobs.kubeflow.org");
    ASSERT_TRUE(established.ok()) << established.Describe();
    std::string name = ::testing::UnitTest::GetInstance()->current_test_info()->name();
    namespace_ = "cli-";
    for (char c : name)
      namespace_ += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    namespace_ = namespace_.substr(0, 60);
    ASSERT_TRUE(cluster().CreateNamespace(namespace_).ok());
  }

  // `cohort ARGS` with the admin kubeconfig (or `kubeconfig`).
  Result Cohort(const std::string& arguments, std::string kubeconfig = "") {
    if (kubeconfig.empty()) kubeconfig = cluster().admin_kubeconfig().string();
    const std::string dir = scratch_.path().string();
    CommandResult run =
        RunCommand("(KUBECONFIG=" + kubeconfig + " HOME=" + dir + " COHORT_HOME=" + dir +
                   "/home timeout 120 " COHORT_BINARY_DIR "/apps/cohort/cohort " + arguments +
                   " 2>" + dir + "/stderr)");
    return {run.exit_code, run.output, ReadText(scratch_.path() / "stderr")};
  }

  std::string Write(const std::string& name, const std::string& text) {
    WriteText(scratch_.path() / name, text);
    return (scratch_.path() / name).string();
  }

  json Get(const std::string& what) {
    KubectlResult got = cluster().Kubectl("get -n " + namespace_ + " " + what + " -o json");
    EXPECT_TRUE(got.ok()) << got.Describe();
    return got.ok() ? json::parse(got.out) : json();
  }

  ScratchDirectory scratch_{"cohort-kube-cli-cluster"};
  std::string namespace_;
};

TEST_F(KubeCliClusterTest, SubmitGetDescribeSuspendWaitAndDelete) {
  Result submitted =
      Cohort("submit --kubernetes -n " + namespace_ + " " + Write("hello.yaml", kHelloManifest));
  ASSERT_EQ(submitted.exit_code, 0) << submitted.err;
  EXPECT_EQ(submitted.out, "hello\n");
  EXPECT_NE(submitted.err.find("no operator found"), std::string::npos) << submitted.err;
  json tfjob = Get("tfjob hello");
  EXPECT_EQ(tfjob["spec"]["tfReplicaSpecs"]["Worker"]["replicas"], 2);
  EXPECT_EQ(tfjob["spec"]["tfReplicaSpecs"]["Worker"]["restartPolicy"], "OnFailure");

  Result get = Cohort("get --kubernetes -n " + namespace_);
  ASSERT_EQ(get.exit_code, 0) << get.err;
  EXPECT_EQ(get.out.rfind("NAME    STATE   AGE\nhello", 0), 0u) << get.out;
  Result describe = Cohort("describe hello --kubernetes -n " + namespace_);
  ASSERT_EQ(describe.exit_code, 0) << describe.err;
  EXPECT_NE(describe.out.find("Namespace:    " + namespace_ + "\n"), std::string::npos)
      << describe.out;
  EXPECT_NE(describe.out.find("Replicas:\n  <none>\n"), std::string::npos) << describe.out;
  Result pods = Cohort("get pods --kubernetes -n " + namespace_);
  EXPECT_EQ(pods.exit_code, 0) << pods.err;
  EXPECT_EQ(pods.err, "No resources found in " + namespace_ + " namespace.\n");

  Result suspended = Cohort("suspend hello --kubernetes -n " + namespace_);
  ASSERT_EQ(suspended.exit_code, 0) << suspended.err;
  EXPECT_EQ(Get("tfjob hello")["spec"]["runPolicy"]["suspend"], true);
  ASSERT_EQ(Cohort("resume hello --kubernetes -n " + namespace_).exit_code, 0);
  EXPECT_EQ(Get("tfjob hello")["spec"]["runPolicy"]["suspend"], false);

  // wait: the operator's part played by a PATCH of /status (before or after the watch opens;
  // the fake server's test, tests/kube_cli, shows the watch itself).
  Result waited;
  std::thread waiter(
      [&] { waited = Cohort("wait hello --kubernetes --timeout 60 -n " + namespace_); });
  HttpAnswer patched = cluster().Request(
      "PATCH", "/apis/kubeflow.org/v1/namespaces/" + namespace_ + "/tfjobs/hello/status",
      "application/merge-patch+json",
      R"({"status":{"conditions":[{"type":"Created","status":"True","reason":"TFJobCreated",)"
      R"("message":"created","lastUpdateTime":"2026-01-01T00:00:00Z","lastTransitionTime":)"
      R"("2026-01-01T00:00:00Z"},{"type":"Succeeded","status":"True","reason":"TFJobSucceeded",)"
      R"("message":"done","lastUpdateTime":"2026-01-01T00:00:00Z","lastTransitionTime":)"
      R"("2026-01-01T00:00:00Z"}]}})");
  waiter.join();
  ASSERT_EQ(patched.status, 200) << patched.body;
  EXPECT_EQ(waited.exit_code, 0) << waited.err;
  EXPECT_EQ(waited.out, "hello Succeeded\n");

  Result deleted = Cohort("delete hello --kubernetes -n " + namespace_);
  ASSERT_EQ(deleted.exit_code, 0) << deleted.err;
  EXPECT_EQ(deleted.out, "tfjob.kubeflow.org \"hello\" deleted\n");
  EXPECT_TRUE(WaitUntil(
      [&] { return !cluster().Kubectl("get -n " + namespace_ + " tfjob hello").ok(); }, 30s));
}

TEST_F(KubeCliClusterTest, TheServerAcceptsAConvertedAiPlatformSpec) {
  Result submitted = Cohort("submit --kubernetes -n " + namespace_ +
                            " " COHORT_TEST_DATA_DIR "/../../examples/taxi/ai-platform.yaml");
  ASSERT_EQ(submitted.exit_code, 0) << submitted.err;
  json taxi = Get("tfjob taxi");
  EXPECT_EQ(taxi["spec"]["tfReplicaSpecs"]["Worker"]["replicas"], 3);
  EXPECT_EQ(taxi["spec"]["tfReplicaSpecs"]["PS"]["replicas"], 2);
}

TEST_F(KubeCliClusterTest, AUserWithoutRightsIsToldWhatWasForbidden) {
  Result result = Cohort("get tfjobs --kubernetes -n " + namespace_,
                         cluster().unprivileged_kubeconfig().string());
  EXPECT_EQ(result.exit_code, 3);
  EXPECT_NE(result.err.find("forbidden"), std::string::npos) << result.err;
  EXPECT_NE(result.err.find("namespace " + namespace_), std::string::npos) << result.err;
}

}  // namespace
}  // namespace cohort::testing
