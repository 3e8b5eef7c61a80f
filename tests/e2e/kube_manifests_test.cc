// `cohort manifests` and `cohort crd` through the real binary: the YAML stream's order (the job's
// Secret, with a fresh secret at each print, first) and
// namespace, the gang scheduler's PodGroup, input errors, `cohort crd` with and without a kind,
// and deploy/kubernetes/crd.yaml being exactly what `cohort crd` prints (every kind's CRD).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

#include "testing/cohort_runner.h"
#include "testing/files.h"

namespace cohort::testing {
namespace {

using ::testing::HasSubstr;

const std::string kSourceDir = COHORT_SOURCE_DIR;

// The stream's documents, split at each "---" line.
std::vector<std::string> Documents(const std::string& stream) {
  std::vector<std::string> documents;
  std::istringstream lines(stream);
  for (std::string line; std::getline(lines, line);) {
    if (line == "---") {
      documents.emplace_back();
    } else if (!documents.empty()) {
      documents.back() += line + "\n";
    }
  }
  return documents;
}

// The job's Secret first (the pods read COHORT_JOB_SECRET from it), then pods, then services.
TEST(KubeManifestsTest, PrintsTheSecretPodsThenServicesInTheGivenNamespace) {
  CohortSandbox sandbox;
  CommandResult result =
      sandbox.Cohort({"manifests", kSourceDir + "/examples/hello/tfjob.yaml", "-n", "team-a"});
  ASSERT_EQ(result.exit_code, 0) << result.output;
  std::vector<std::string> documents = Documents(result.output);
  ASSERT_EQ(documents.size(), 7u) << result.output;
  EXPECT_THAT(documents[0], HasSubstr("\nkind: Secret\n"));
  EXPECT_THAT(documents[0], HasSubstr("  name: hello-tfjob-secret\n"));
  EXPECT_THAT(documents[0], HasSubstr("  namespace: team-a\n"));
  EXPECT_THAT(documents[0], HasSubstr("  COHORT_JOB_SECRET: "));
  const std::vector<std::string> names = {"hello-ps-0", "hello-worker-0", "hello-worker-1"};
  for (size_t i = 1; i < documents.size(); ++i) {
    EXPECT_THAT(documents[i], HasSubstr(i < 4 ? "\nkind: Pod\n" : "\nkind: Service\n"));
    EXPECT_THAT(documents[i], HasSubstr("  name: " + names[(i - 1) % 3] + "\n"));
    EXPECT_THAT(documents[i], HasSubstr("  namespace: team-a\n"));
  }
  EXPECT_THAT(documents[2], HasSubstr("hello-ps-0.team-a.svc:2222"));
  EXPECT_THAT(documents[2], HasSubstr("name: hello-tfjob-secret"));
  EXPECT_THAT(documents[4], HasSubstr("clusterIP: None"));
  // A fresh secret at each print.
  CommandResult again =
      sandbox.Cohort({"manifests", kSourceDir + "/examples/hello/tfjob.yaml", "-n", "team-a"});
  ASSERT_EQ(again.exit_code, 0) << again.output;
  EXPECT_NE(Documents(again.output)[0], documents[0]);
  EXPECT_EQ(Documents(again.output)[1], documents[1]);
}

TEST(KubeManifestsTest, GangSchedulingAddsThePodGroupLast) {
  CohortSandbox sandbox;
  CommandResult result =
      sandbox.Cohort({"manifests", kSourceDir + "/examples/mnist/tfjob.yaml", "--gang-scheduler",
                      "volcano", "--cluster-domain", "cluster.local"});
  ASSERT_EQ(result.exit_code, 0) << result.output;
  std::vector<std::string> documents = Documents(result.output);
  ASSERT_EQ(documents.size(), 8u) << result.output;
  EXPECT_THAT(documents.back(), HasSubstr("apiVersion: scheduling.volcano.sh/v1beta1\n"));
  EXPECT_THAT(documents.back(), HasSubstr("minMember: 3"));
  EXPECT_THAT(documents[1], HasSubstr("schedulerName: volcano"));
  EXPECT_THAT(documents[1], HasSubstr("mnist-worker-2.default.svc.cluster.local:2222"));
}

TEST(KubeManifestsTest, BadInputIsAnInputError) {
  CohortSandbox sandbox;
  CommandResult missing = sandbox.Cohort({"manifests", sandbox.root().string() + "/none.yaml"});
  EXPECT_EQ(missing.exit_code, 2) << missing.output;
  CommandResult invalid = sandbox.Cohort(
      {"manifests", kSourceDir + "/tests/data/specs/kubeflow/estimator-api-distributed.yaml", "-n",
       "elsewhere"});
  EXPECT_EQ(invalid.exit_code, 2) << "the file names another namespace: " << invalid.output;
}

TEST(KubeManifestsTest, CommittedCrdIsWhatCohortCrdPrints) {
  CohortSandbox sandbox;
  CommandResult result = sandbox.Cohort({"crd"});
  ASSERT_EQ(result.exit_code, 0) << result.output;
  EXPECT_EQ(result.output, ReadText(kSourceDir + "/deploy/kubernetes/crd.yaml"))
      << "regenerate it: build/apps/cohort/cohort crd > deploy/kubernetes/crd.yaml";
}

// Every kind's CRD, one document each, in the registry's order; one kind's alone by its name.
TEST(KubeManifestsTest, CrdPrintsEveryKindOrTheOneNamed) {
  CohortSandbox sandbox;
  CommandResult all = sandbox.Cohort({"crd"});
  ASSERT_EQ(all.exit_code, 0) << all.output;
  const std::vector<std::string> documents = Documents(all.output);
  ASSERT_EQ(documents.size(), 2u) << all.output;
  EXPECT_THAT(documents[0], HasSubstr("\n  name: tfjobs.kubeflow.org\n"));
  EXPECT_THAT(documents[1], HasSubstr("\n  name: pytorchjobs.kubeflow.org\n"));
  EXPECT_THAT(documents[1], HasSubstr("pytorchReplicaSpecs:"));
  for (const char* name : {"pytorchjob", "PyTorchJob", "pytorchjobs"}) {
    CommandResult one = sandbox.Cohort({"crd", name});
    ASSERT_EQ(one.exit_code, 0) << name << ": " << one.output;
    EXPECT_EQ("---\n" + one.output, all.output.substr(all.output.find("---\n", 1))) << name;
  }
  CommandResult tfjob = sandbox.Cohort({"crd", "TFJobs"});
  ASSERT_EQ(tfjob.exit_code, 0) << tfjob.output;
  EXPECT_EQ(all.output.substr(0, all.output.find("---\n", 1)), "---\n" + tfjob.output);
  CommandResult unknown = sandbox.Cohort({"crd", "mpijob"});
  EXPECT_EQ(unknown.exit_code, 2) << unknown.output;
  EXPECT_THAT(unknown.output,
              HasSubstr("crd KIND \"mpijob\": not a job kind Cohort runs (tfjob, pytorchjob)"));
}

}  // namespace
}  // namespace cohort::testing
