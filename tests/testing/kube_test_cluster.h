// KubeTestCluster: a real Kubernetes control plane on loopback for tests that talk to an API
// server: etcd, kube-apiserver and kube-controller-manager, started as child processes in a
// scratch directory and stopped with it.
//
// There is no scheduler and no kubelet: pods are stored but never run, and a test plays the
// kubelet by patching a pod's /status. The controller-manager runs the controllers that a client
// of the API relies on: service accounts and their token secrets, garbage collection of objects
// whose owner is gone, and namespace deletion.
//
// The servers are kube-apiserver and kube-controller-manager built from Debian's `kubernetes`
// source package by scripts/build-kube-apiserver.sh (v1.20: no CEL validation rules, no
// server-side strict field validation), found in $COHORT_KUBE_APISERVER_DIR or, when that is
// unset, in the script's cache; etcd is Debian's etcd-server, found on PATH.
//
// Starting one takes 5 to 15 seconds on a busy 2-core machine, so a test binary shares one: tests
// derive from KubeClusterTest, which starts the shared cluster at the first test and skips (outside
// CI) or fails (in CI) every test when the binaries are missing. Tests isolate themselves by
// namespace:
//
//   class PodTest : public cohort::testing::KubeClusterTest {};
//   TEST_F(PodTest, Created) {
//     ASSERT_TRUE(cluster().CreateNamespace("pod-created").ok());
//     CommandResult applied = cluster().Kubectl("apply -n pod-created -f -", pod_yaml);
//     ...
//   }
//
// Such a binary should run as one ctest test (cohort_test's WHOLE_BINARY), so that its tests
// really share the cluster. The children get PR_SET_PDEATHSIG, so they die with the thread that
// started them even when the test process crashes.
#pragma once

#include <gtest/gtest.h>
#include <sys/types.h>

#include <chrono>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "base/status.h"
#include "testing/host.h"
#include "testing/scratch_directory.h"

namespace cohort::testing {

// How a kubectl run ended.
struct KubectlResult {
  std::string arguments;  // what followed "kubectl --kubeconfig=..."
  int exit_code = -1;     // 128 + N when signal N ended it; 124 when it ran past its bound
  std::string out;        // standard output: the data asked for
  std::string err;        // standard error: warnings and errors
  bool ok() const { return exit_code == 0; }
  // "kubectl ARGUMENTS: exit N: <standard error>", for a test's failure message.
  std::string Describe() const;
};

// The answer to one raw HTTP request.
struct HttpAnswer {
  int status = 0;    // the HTTP status; 0 when no answer came (curl's message is in `body`)
  std::string body;  // the response body
};

// Where the three server binaries are.
struct KubeBinaries {
  std::filesystem::path etcd;
  std::filesystem::path kube_apiserver;
  std::filesystem::path kube_controller_manager;
};

// Finds the binaries: the two Kubernetes servers in $COHORT_KUBE_APISERVER_DIR, or when that is
// unset, in a version folder of scripts/build-kube-apiserver.sh's cache
// (${COHORT_KUBE_CACHE:-/var/cache/cohort/kube-apiserver}/<version>/); etcd on PATH. NotFound
// names what is missing and the script or package that provides it.
StatusOr<KubeBinaries> FindKubeBinaries();

class KubeTestCluster {
 public:
  // Starts etcd, kube-apiserver and kube-controller-manager on free loopback ports, waits up to
  // `timeout` in all for the API server's /readyz and for the `default` namespace's default
  // ServiceAccount, and writes the kubeconfigs. On failure everything started is stopped, and the
  // error says what was awaited and ends with the last lines of each server's log.
  static StatusOr<std::unique_ptr<KubeTestCluster>> Start(const KubeBinaries& binaries,
                                                          std::chrono::seconds timeout);

  // Stops the three servers (SIGTERM, then SIGKILL after a bound) and removes the scratch
  // directory.
  ~KubeTestCluster();
  KubeTestCluster(const KubeTestCluster&) = delete;
  KubeTestCluster& operator=(const KubeTestCluster&) = delete;

  // https://127.0.0.1:<port>, the API server's address.
  const std::string& server() const { return server_; }
  // The CA certificate (PEM) that signed the API server's serving certificate.
  const std::filesystem::path& ca_file() const { return ca_file_; }
  // A kubeconfig for a user in system:masters (every right), with the CA data and a bearer token.
  const std::filesystem::path& admin_kubeconfig() const { return admin_kubeconfig_; }
  const std::string& admin_token() const { return admin_token_; }
  // A kubeconfig for an authenticated user with no role at all: every request but discovery gets
  // 403 Forbidden.
  const std::filesystem::path& unprivileged_kubeconfig() const { return unprivileged_kubeconfig_; }
  // How long Start took, from the first fork to a ready API server with a default ServiceAccount.
  std::chrono::milliseconds startup_duration() const { return startup_duration_; }

  // Runs `kubectl --kubeconfig=<admin kubeconfig> ARGUMENTS` (ARGUMENTS as a shell would split
  // them; `stdin_text` is its standard input, for "-f -") for at most 120 s.
  KubectlResult Kubectl(const std::string& arguments, const std::string& stdin_text = "") const;
  // The same as the unprivileged user.
  KubectlResult KubectlUnprivileged(const std::string& arguments) const;

  // Sends one request to the API server as the admin user (with curl, verifying the server's
  // certificate), for what kubectl cannot say in every version, e.g. a kubelet's PATCH of a pod's
  // /status: `method` `path` ("/api/v1/namespaces/ns/pods/p/status") with `body` as
  // `content_type` ("application/merge-patch+json"). At most 60 s.
  HttpAnswer Request(const std::string& method, const std::string& path,
                     const std::string& content_type = "", const std::string& body = "") const;

  // Creates the namespace and waits (60 s at most) until the controller-manager has made its
  // default ServiceAccount, without which the API server admits no pod.
  Status CreateNamespace(const std::string& name) const;

  // The last `lines` lines of each server's log, headed by the server's name.
  std::string LogTails(int lines = 20) const;

 private:
  struct Server {
    std::string name;
    pid_t pid = -1;      // -1 once reaped
    int exit_code = -1;  // how it ended, once it did (128 + N for signal N)
    std::filesystem::path log;
  };

  KubeTestCluster();
  Status StartServers(const KubeBinaries& binaries, std::chrono::steady_clock::time_point deadline);
  Status WriteCredentials();
  Status Launch(const std::string& name, const std::vector<std::string>& argv);
  Status WaitUntilReady(std::chrono::steady_clock::time_point deadline);
  Status CheckServersRunning();
  KubectlResult RunKubectl(const std::filesystem::path& kubeconfig, const std::string& arguments,
                           const std::string& stdin_text) const;
  void StopServers();

  ScratchDirectory scratch_;
  std::vector<Server> servers_;  // in start order; stopped in reverse
  std::string server_;
  int secure_port_ = 0;
  std::filesystem::path ca_file_;
  std::filesystem::path admin_kubeconfig_;
  std::filesystem::path unprivileged_kubeconfig_;
  std::filesystem::path controller_manager_kubeconfig_;
  std::string admin_token_;
  std::chrono::milliseconds startup_duration_{0};
};

// The cluster this test binary shares, started at the first call (at most 180 s) and stopped when
// the process exits. A failed start is remembered, so later callers get the same error at once.
// NotFound: a binary is missing (see FindKubeBinaries).
StatusOr<KubeTestCluster*> SharedKubeTestCluster();

// A gtest fixture for tests against the shared cluster: SetUp starts it (once per binary), or
// skips the test where the binaries are missing, except in CI, where that fails it (a CI machine
// that cannot run these tests must never pass them silently).
class KubeClusterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    StatusOr<KubeTestCluster*> shared = SharedKubeTestCluster();
    if (!shared.ok()) {
      if (shared.status().code() == Status::Code::kNotFound) {
        COHORT_SKIP_OR_FAIL_IN_CI(shared.status().ToString());
      }
      FAIL() << shared.status().ToString();
    }
    cluster_ = shared.value();
  }

  const KubeTestCluster& cluster() const { return *cluster_; }

 private:
  KubeTestCluster* cluster_ = nullptr;
};

}  // namespace cohort::testing
