// replica_on_host: what a kubelet on an emulated host would be for a replica that a local `cohort`
// supervisor starts, so that a whole job (the supervisor, its controller and restart policies)
// runs with each replica on a host of its own (tests/testing/emulated_cluster.h). The network
// fault tests map the job's image to it:
//
//   cohort run job.yaml --image cohort/train="replica_on_host HOSTS_FILE cohort-train"
//
// HOSTS_FILE has one line per replica, "<type>-<index> <host pid>" (EmulatedCluster::HostPid),
// written by the test. The replica is COHORT_REPLICA_TYPE-COHORT_REPLICA_INDEX, as the
// supervisor set them. Its command runs on its host with TF_CONFIG's endpoints "localhost:<port>"
// renamed "<type>-<index>:<port>" (each host resolves those names, the cluster's aliases, to the
// replica's host), as Kubernetes gives each replica a service name instead of localhost. The
// port stays the one the supervisor reserved. Everything else is the supervisor's: the
// environment, the working directory, the process group (so its SIGTERM and SIGKILL reach the
// command), the termination-message file (the hosts share the file system).
//
// Exit status: the command's (128 + N for signal N); 125 when the replica could not be put on
// its host (the message says why).
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "testing/emulated_cluster.h"

namespace {

constexpr int kExitNotPlaced = 125;

[[noreturn]] void Fail(const std::string& message) {
  std::fprintf(stderr, "replica_on_host: %s\n", message.c_str());
  std::exit(kExitNotPlaced);
}

std::string Variable(const char* name) {
  const char* value = std::getenv(name);
  if (value == nullptr || *value == '\0') Fail(std::string(name) + " is not set");
  return value;
}

// The host pid HOSTS_FILE gives `replica`.
pid_t HostPidOf(const std::string& hosts_file, const std::string& replica) {
  std::ifstream file(hosts_file);
  if (!file) Fail("cannot read " + hosts_file);
  for (std::string line; std::getline(file, line);) {
    std::istringstream words(line);
    std::string name;
    long pid = 0;
    if (words >> name >> pid && name == replica && pid > 0) return static_cast<pid_t>(pid);
  }
  Fail(hosts_file + " names no host for " + replica);
}

// TF_CONFIG with every "localhost:<port>" endpoint of cluster[type][i] renamed "<type>-<i>:<port>".
std::string EndpointsByName(const std::string& tf_config) {
  nlohmann::json config = nlohmann::json::parse(tf_config, nullptr, /*allow_exceptions=*/false);
  if (config.is_discarded() || !config.contains("cluster") || !config["cluster"].is_object()) {
    Fail("TF_CONFIG is not an object with a cluster: " + tf_config);
  }
  for (auto& [type, endpoints] : config["cluster"].items()) {
    if (!endpoints.is_array()) continue;
    for (size_t i = 0; i < endpoints.size(); ++i) {
      const std::string endpoint = endpoints[i].is_string() ? endpoints[i].get<std::string>() : "";
      const std::string local = "localhost:";
      if (endpoint.rfind(local, 0) != 0) continue;
      endpoints[i] = type + "-" + std::to_string(i) + ":" + endpoint.substr(local.size());
    }
  }
  return config.dump();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) Fail("usage: replica_on_host HOSTS_FILE COMMAND [ARGS...]");
  const std::string replica =
      Variable("COHORT_REPLICA_TYPE") + "-" + Variable("COHORT_REPLICA_INDEX");
  const pid_t host_pid = HostPidOf(argv[1], replica);
  if (const char* tf_config = std::getenv("TF_CONFIG")) {
    setenv("TF_CONFIG", EndpointsByName(tf_config).c_str(), 1);
  }
  if (cohort::Status entered = cohort::testing::EnterEmulatedHost(host_pid); !entered.ok()) {
    Fail("putting " + replica + " on its host: " + entered.ToString());
  }
  const pid_t parent = getpid();
  const pid_t command = fork();
  if (command < 0) Fail("fork: " + std::string(std::strerror(errno)));
  if (command == 0) {
    // Dies with this process, as the supervisor's replicas die with it.
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent && getppid() != 0) _exit(kExitNotPlaced);
    execvp(argv[2], argv + 2);
    std::fprintf(stderr, "replica_on_host: cannot run %s: %s\n", argv[2], std::strerror(errno));
    _exit(127);
  }
  // The supervisor signals the whole process group, the command included: this process only
  // waits for the command and passes its end on.
  for (int signal : {SIGTERM, SIGINT, SIGHUP}) std::signal(signal, SIG_IGN);
  int status = 0;
  while (waitpid(command, &status, 0) < 0) {
    if (errno != EINTR) Fail("waiting for " + std::string(argv[2]) + ": " + std::strerror(errno));
  }
  if (WIFSIGNALED(status)) {
    std::signal(WTERMSIG(status), SIG_DFL);
    kill(getpid(), WTERMSIG(status));
    return 128 + WTERMSIG(status);
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}
