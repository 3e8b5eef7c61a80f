// examples/mnist through the user's commands, end to end: `cohort submit --kubernetes` of
// examples/mnist/tfjob.yaml, `cohort wait` until the job succeeds, `cohort describe` and
// `cohort delete`, against a cluster that runs the Cohort operator.
//
// By default (./run-tests.sh, `ctest -R kube_e2e`: 600 s) the cluster is this machine: the control
// plane of kube_test_cluster.h with the shipped CRD (deploy/kubernetes/crd.yaml), the real
// `cohort operator` process for the test's namespace, and the test node agent (node_agent.h:
// root, network namespaces), which runs the pods' containers as local processes with the
// example's image mapped to cohort-train. The manifest is the example's with a shorter run (1
// epoch of 20 steps) writing under the test's scratch directory, so that 3 workers train and save
// a model in a minute or two on 2 cores.
//
// When COHORT_E2E_KUBECONFIG names a kubeconfig, the cluster is that one (its current context)
// instead, and the manifest is the example as written: the cluster must run the operator
// (deploy/kubernetes) and pull the example's image, localhost/mnist-train. Run the binary itself
// there, since a real cluster takes longer than ctest's 600 s:
//
//   COHORT_E2E_KUBECONFIG=~/.kube/config build/tests/kube_e2e_test
//
// COHORT_E2E_NAMESPACE (default "default") is where the job goes; COHORT_E2E_TIMEOUT_SECONDS
// (default 3600, at most 86400) bounds the wait. The job is deleted afterwards, whatever the
// outcome; a TFJob named mnist already in the namespace makes the submission fail.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "base/file.h"
#include "kube/client/http_api.h"
#include "kube/client/kubeconfig.h"
#include "testing/files.h"
#include "testing/host.h"
#include "testing/kube_test_cluster.h"
#include "testing/node_agent.h"
#include "testing/processes.h"
#include "testing/scratch_directory.h"

namespace cohort::testing {
namespace {

using namespace std::chrono_literals;

const std::string kSourceDir = std::string(COHORT_TEST_DATA_DIR) + "/../..";
const std::string kCohort = std::string(COHORT_BINARY_DIR) + "/apps/cohort/cohort";
const std::string kCohortTrain = std::string(COHORT_BINARY_DIR) + "/apps/cohort-train/cohort-train";

std::string EnvironmentOr(const char* name, const std::string& fallback) {
  const char* value = std::getenv(name);
  return value != nullptr && *value != '\0' ? value : fallback;
}

// `text` with every `from` replaced by `to`; *found says whether there was one.
std::string ReplaceAll(std::string text, const std::string& from, const std::string& to,
                       bool* found) {
  *found = false;
  for (size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size())) {
    text.replace(at, from.size(), to);
    *found = true;
  }
  return text;
}

class KubeE2eTest : public ::testing::Test {
 protected:
  void SetUp() override {
    kubeconfig_ = EnvironmentOr("COHORT_E2E_KUBECONFIG", "");
    if (kubeconfig_.empty()) {
      StartClusterOnThisMachine();
      return;
    }
    manifest_ = kSourceDir + "/examples/mnist/tfjob.yaml";
    namespace_ = EnvironmentOr("COHORT_E2E_NAMESPACE", "default");
    const std::string timeout = EnvironmentOr("COHORT_E2E_TIMEOUT_SECONDS", "3600");
    char* end = nullptr;
    const long seconds = std::strtol(timeout.c_str(), &end, 10);
    ASSERT_TRUE(*end == '\0' && seconds > 0 && seconds <= 86400)
        << "COHORT_E2E_TIMEOUT_SECONDS must be a number of seconds from 1 to 86400, not \""
        << timeout << "\"";
    timeout_seconds_ = seconds;
  }

  void TearDown() override {
    if (operator_pid_ > 0) {
      kill(operator_pid_, SIGTERM);
      WaitForChildOrSignal(operator_pid_, 30000ms, SIGKILL);
    }
    agent_.reset();
  }

  // The control plane, the CRD, a node agent and `cohort operator` for namespace kube-e2e, and a
  // shortened copy of the example's manifest.
  void StartClusterOnThisMachine() {
    if (Status supported = CheckNodeAgentSupported(); !supported.ok()) {
      COHORT_SKIP_OR_FAIL_IN_CI(supported.ToString());
    }
    StatusOr<KubeTestCluster*> shared = SharedKubeTestCluster();
    if (!shared.ok()) {
      if (shared.status().code() == Status::Code::kNotFound) {
        COHORT_SKIP_OR_FAIL_IN_CI(shared.status().ToString());
      }
      FAIL() << shared.status().ToString();
    }
    KubeTestCluster& cluster = **shared;
    namespace_ = "kube-e2e";
    kubeconfig_ = cluster.admin_kubeconfig().string();
    timeout_seconds_ = 420;
    ASSERT_TRUE(cluster.CreateNamespace(namespace_).ok());
    // The CRD Cohort ships (--validate=false: this 1.20 server does not know its CEL rule).
    KubectlResult crd =
        cluster.Kubectl("apply --validate=false -f " + kSourceDir + "/deploy/kubernetes/crd.yaml");
    ASSERT_TRUE(crd.ok()) << crd.Describe();
    KubectlResult established =
        cluster.Kubectl("wait --for=condition=Established --timeout=60s crd/tfjobs.kubeflow.org");
    ASSERT_TRUE(established.ok()) << established.Describe();

    StatusOr<kube::ConnectionConfig> config = kube::LoadKubeconfig({kubeconfig_}, "");
    ASSERT_TRUE(config.ok()) << config.status().ToString();
    api_ = std::make_unique<kube::HttpApi>(*config, kube::HttpApiOptions{});
    NodeAgentOptions agent_options;
    agent_options.node_name = "kube-e2e-node";
    ASSERT_TRUE(agent_options.images.AddFlag("localhost/mnist-train=" + kCohortTrain).ok());
    agent_options.work_dir = scratch_.path() / "node";
    agent_options.schedule_namespace = namespace_;
    StatusOr<std::unique_ptr<NodeAgent>> agent = NodeAgent::Start(*api_, std::move(agent_options));
    ASSERT_TRUE(agent.ok()) << agent.status().ToString();
    agent_ = std::move(*agent);
    StartOperator();

    StatusOr<std::string> example = ReadWholeFile(kSourceDir + "/examples/mnist/tfjob.yaml");
    ASSERT_TRUE(example.ok()) << example.status().ToString();
    std::string manifest = *example;
    const std::string out = (scratch_.path() / "mnist").string();
    for (const auto& [from, to] : std::vector<std::pair<std::string, std::string>>{
             {"--epochs=3", "--epochs=1"},
             {"--steps_per_epoch=312", "--steps_per_epoch=20"},
             {"/tmp/cohort-mnist", out}}) {
      bool found = false;
      manifest = ReplaceAll(manifest, from, to, &found);
      ASSERT_TRUE(found) << "examples/mnist/tfjob.yaml has no \"" << from
                         << "\" any more: update this test's shortening";
    }
    manifest_ = (scratch_.path() / "tfjob.yaml").string();
    WriteText(manifest_, manifest);
  }

  // `cohort operator` as a child process watching namespace_, its standard error in
  // operator.log; it dies with the test (PR_SET_PDEATHSIG), or in TearDown.
  void StartOperator() {
    operator_log_ = (scratch_.path() / "operator.log").string();
    const std::string kubeconfig = "--kubeconfig=" + kubeconfig_;
    const std::string watched = "--namespace=" + namespace_;
    operator_pid_ = fork();
    ASSERT_GE(operator_pid_, 0);
    if (operator_pid_ == 0) {
      prctl(PR_SET_PDEATHSIG, SIGKILL);
      const int fd = open(operator_log_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      if (fd >= 0) dup2(fd, STDERR_FILENO);
      execl(kCohort.c_str(), kCohort.c_str(), "operator", kubeconfig.c_str(), watched.c_str(),
            static_cast<char*>(nullptr));
      _exit(127);
    }
  }

  // `cohort ARGUMENTS --kubernetes -n NAMESPACE` with the kubeconfig, for at most `seconds`.
  CommandResult Cohort(const std::string& arguments, long seconds) {
    const std::string home = scratch_.path().string();
    return RunCommand("KUBECONFIG='" + kubeconfig_ + "' HOME=" + home + " COHORT_HOME=" + home +
                      "/home timeout " + std::to_string(seconds) + " " + kCohort + " " + arguments +
                      " --kubernetes -n " + namespace_ + " 2>&1");
  }

  // What the operator and, on this machine, worker 0 wrote: for a failure's message.
  std::string Logs() const {
    if (operator_pid_ <= 0) return "";
    std::string logs = "the operator's log:\n" + ReadText(operator_log_);
    if (agent_) {
      logs += "\nworker 0's log:\n" +
              ReadText(agent_->LogPath(namespace_, "mnist-worker-0", "tensorflow", 0));
    }
    return logs;
  }

  ScratchDirectory scratch_{"cohort-kube-e2e"};
  std::string kubeconfig_;
  std::string namespace_;
  std::string manifest_;
  long timeout_seconds_ = 0;
  std::unique_ptr<kube::HttpApi> api_;
  std::unique_ptr<NodeAgent> agent_;
  pid_t operator_pid_ = -1;
  std::string operator_log_;
};

TEST_F(KubeE2eTest, TheMnistExampleSucceedsOnTheCluster) {
  CommandResult submitted = Cohort("submit " + manifest_, 120);
  ASSERT_EQ(submitted.exit_code, 0) << submitted.output << "\n" << Logs();
  EXPECT_NE(submitted.output.find("mnist"), std::string::npos) << submitted.output;
  CommandResult waited =
      Cohort("wait mnist --timeout " + std::to_string(timeout_seconds_), timeout_seconds_ + 60);
  CommandResult described = Cohort("describe mnist", 120);
  CommandResult deleted = Cohort("delete mnist", 120);
  EXPECT_EQ(waited.exit_code, 0) << waited.output << "\n" << described.output << "\n" << Logs();
  EXPECT_EQ(waited.output, "mnist Succeeded\n") << described.output << "\n" << Logs();
  EXPECT_EQ(deleted.exit_code, 0) << deleted.output;
}

}  // namespace
}  // namespace cohort::testing
