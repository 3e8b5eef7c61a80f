// examples/mnist on a real Kubernetes cluster, for a person who has one: when
// COHORT_E2E_KUBECONFIG names a kubeconfig, the test submits examples/mnist/tfjob.yaml there with
// `cohort submit --kubernetes` (the kubeconfig's current context) and waits with `cohort wait`
// for the job to succeed; otherwise it is skipped, saying why. The cluster must run the Cohort
// operator (deploy/kubernetes) and be able to pull the example's image, cohort/mnist-train.
//
//   COHORT_E2E_KUBECONFIG=~/.kube/config ctest -R kube_e2e --output-on-failure
//
// COHORT_E2E_NAMESPACE (default "default") is where the job goes; COHORT_E2E_TIMEOUT_SECONDS
// (default 3600, at most 86400) bounds the wait. The job is deleted afterwards, whatever the
// outcome; a TFJob named mnist already in the namespace makes the submission fail.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "testing/processes.h"
#include "testing/scratch_directory.h"

namespace cohort::testing {
namespace {

std::string EnvironmentOr(const char* name, const std::string& fallback) {
  const char* value = std::getenv(name);
  return value != nullptr && *value != '\0' ? value : fallback;
}

class KubeE2eTest : public ::testing::Test {
 protected:
  void SetUp() override {
    kubeconfig_ = EnvironmentOr("COHORT_E2E_KUBECONFIG", "");
    if (kubeconfig_.empty()) {
      GTEST_SKIP() << "COHORT_E2E_KUBECONFIG is not set: it names the kubeconfig of a real "
                      "cluster running the Cohort operator, and there is none to run against";
    }
    namespace_ = EnvironmentOr("COHORT_E2E_NAMESPACE", "default");
    const std::string timeout = EnvironmentOr("COHORT_E2E_TIMEOUT_SECONDS", "3600");
    char* end = nullptr;
    const long seconds = std::strtol(timeout.c_str(), &end, 10);
    ASSERT_TRUE(*end == '\0' && seconds > 0 && seconds <= 86400)
        << "COHORT_E2E_TIMEOUT_SECONDS must be a number of seconds from 1 to 86400, not \""
        << timeout << "\"";
    timeout_seconds_ = seconds;
  }

  // `cohort ARGUMENTS --kubernetes -n NAMESPACE` with the kubeconfig, for at most `seconds`.
  CommandResult Cohort(const std::string& arguments, long seconds) {
    const std::string home = scratch_.path().string();
    return RunCommand("KUBECONFIG='" + kubeconfig_ + "' HOME=" + home + " COHORT_HOME=" + home +
                      "/home timeout " + std::to_string(seconds) +
                      " " COHORT_BINARY_DIR "/apps/cohort/cohort " + arguments +
                      " --kubernetes -n " + namespace_ + " 2>&1");
  }

  std::string kubeconfig_;
  std::string namespace_;
  long timeout_seconds_ = 0;
  ScratchDirectory scratch_{"cohort-kube-e2e"};
};

TEST_F(KubeE2eTest, TheMnistExampleSucceedsOnTheCluster) {
  CommandResult submitted =
      Cohort("submit " COHORT_TEST_DATA_DIR "/../../examples/mnist/tfjob.yaml", 120);
  ASSERT_EQ(submitted.exit_code, 0) << submitted.output;
  EXPECT_NE(submitted.output.find("mnist"), std::string::npos) << submitted.output;
  CommandResult waited =
      Cohort("wait mnist --timeout " + std::to_string(timeout_seconds_), timeout_seconds_ + 60);
  CommandResult described = Cohort("describe mnist", 120);
  CommandResult deleted = Cohort("delete mnist", 120);
  EXPECT_EQ(waited.exit_code, 0) << waited.output << "\n" << described.output;
  EXPECT_EQ(waited.output, "mnist Succeeded\n") << described.output;
  EXPECT_EQ(deleted.exit_code, 0) << deleted.output;
}

}  // namespace
}  // namespace cohort::testing
