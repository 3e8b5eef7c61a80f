// NodeAgent: a Kubernetes node for tests, on this machine: it plays the scheduler and the kubelet
// against a real API server (kube_test_cluster.h, which has neither), so that pods created there
// run for real as local processes. It lives in tests/, never in the product.
//
// What it plays:
//   - the scheduler, for the pods it is told to take (a namespace and a label selector): every
//     such pod without spec.nodeName is bound to the agent's node (POST pods/NAME/binding);
//   - the kubelet, for every pod bound to its node (the field selector spec.nodeName=NODE; both
//     this watch and the scheduler's are the operator's kube::Informer, which lists again when
//     the watch's version expires):
//       * each container runs as a local process: the image names a command through the same
//         ImageMap as `cohort run --image IMG=COMMAND` (exec/image_map.h; a container's own
//         command wins), with its args, its env (plain values, and valueFrom.secretKeyRef read
//         from the Secret on the server, as the job secret reaches a replica; a missing Secret or
//         key fails the pod, NodeAgentError, where the kubelet would keep it waiting) and its
//         workingDir (default: a folder of the pod's own under the work dir); stdout and stderr go
//         to one log file per container run (LogPath);
//       * each pod gets its own network namespace with an IP of a private /24, joined by a veth
//         pair to a bridge that lives in a network namespace of the agent's own, so that every
//         pod can listen on the same port (2222) and reach the others, and nothing of the host's
//         network is touched; its processes also get a mount namespace in which /etc/hosts is the
//         agent's hosts file (each pod's name and each service's names,
//         <svc>.<ns>.svc[.cluster.local], mapped to the IPs of the agent's pods its selector
//         picks, but for pods being deleted; services are listed again every 0.5 s and the file
//         rewritten in place when it changes) and a UTS namespace whose
//         hostname is the pod's name (spec.hostname when set);
//       * status as the kubelet reports it (PATCH pods/NAME/status): Running with
//         containerStatuses (state.running.startedAt, ready, restartCount), podIP and conditions;
//         on exit, with restartPolicy Never, phase Succeeded or Failed and state.terminated
//         (exitCode, signal when a signal ended it, reason Completed or Error, startedAt,
//         finishedAt; message, with terminationMessagePolicy FallbackToLogsOnError, from the end
//         of a failed run's log); with OnFailure (after a failure) or Always, a restart in place
//         after a short back-off, with restartCount + 1 and lastState.terminated;
//       * deletion: a pod with a deletionTimestamp gets SIGTERM, SIGKILL after its
//         terminationGracePeriodSeconds, its final status, then the kubelet's final delete
//         (gracePeriodSeconds 0); a pod deleted outright is killed at once.
// What it does not: no images (no filesystem of the image's own: processes see the host's files),
// no volumes, no probes, no resources or OOM kills, no init or sidecar containers, no valueFrom
// env but secretKeyRef, no terminationMessagePath files, no Node object and no node heartbeats, no
// pod logs served through the API (the files are there for a test to read), no ports other than the
// pod's IP.
//
// Network and mount namespaces need root and iproute2: CheckNodeAgentSupported says why not
// (tests skip outside CI, fail in CI). The network namespaces are named
// cohort-node-agent-<pid>-<n>-...; SweepLeftoverNetworks (also run by Start) removes those whose
// pid is gone. The processes get PR_SET_PDEATHSIG: they die with the agent's threads, so with the
// agent or its process. The hosts file is rewritten in place (a bind mount follows the inode), so a
// process may rarely read it half-written; a client that retries its connections sees the next
// version.
//
//   NodeAgentOptions options;
//   options.node_name = "node-1";
//   options.images.AddFlag("localhost/hello=" + replica_script);
//   options.work_dir = scratch.path() / "node-1";
//   options.schedule_namespace = "hello";
//   StatusOr<std::unique_ptr<NodeAgent>> agent = NodeAgent::Start(*api, std::move(options));
//   ... create pods; wait for their phase ...
//   (*agent)->Kill("hello", "hello-worker-0");  // the container's exit code becomes 137
#pragma once

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "base/status.h"
#include "exec/image_map.h"
#include "kube/client/api.h"
#include "kube/operator/informer.h"

namespace cohort::testing {

// OK when this process can run a NodeAgent (root, `ip` and network namespaces); else
// FailedPrecondition saying what is missing.
Status CheckNodeAgentSupported();

// Deletes the network namespaces of agents whose process is gone (a crashed test binary).
void SweepLeftoverNetworks();

struct NodeAgentOptions {
  std::string node_name = "node-1";
  exec::ImageMap images;
  // Logs, the hosts file and the pods' default working directories; created when missing.
  std::filesystem::path work_dir;
  // The unbound pods it binds to its node: those in this namespace ("" binds none) that match
  // the label selector ("" for all of them).
  std::string schedule_namespace;
  std::string schedule_label_selector;
  // A restart in place waits this long, doubled for each earlier restart, at most 8 times this.
  std::chrono::milliseconds restart_backoff{500};
  // The pods' /24 (".1" is unused, pods get .2 to .254), private to the agent's namespaces.
  std::string subnet = "10.88.0";
};

class NodeAgent {
 public:
  // Creates the bridge namespace and starts watching. Errors name the command or call that failed.
  static StatusOr<std::unique_ptr<NodeAgent>> Start(kube::Api& api, NodeAgentOptions options);

  // Stops watching, kills every process the agent started (SIGKILL) and removes its network
  // namespaces. Statuses on the server stay as they were last reported.
  ~NodeAgent();
  NodeAgent(const NodeAgent&) = delete;
  NodeAgent& operator=(const NodeAgent&) = delete;

  // SIGKILLs the running processes of the pod's containers, as the kernel would kill a
  // container; the agent then reports the exit (137) as the kubelet would. NotFound when the pod
  // has no running container here.
  Status Kill(const std::string& namespace_name, const std::string& pod);

  // The log of a container's run number `restart_count` (0 for the first).
  std::filesystem::path LogPath(const std::string& namespace_name, const std::string& pod,
                                const std::string& container, int restart_count) const;

  // The pod's IP while it runs here, "" otherwise.
  std::string PodIp(const std::string& namespace_name, const std::string& pod) const;

 private:
  struct ContainerRun;
  struct PodRun;

  NodeAgent(kube::Api& api, NodeAgentOptions options);
  Status CreateBridge();
  void BindToThisNode(const nlohmann::json& pod);
  void SuperviseLoop();
  void OnPod(const nlohmann::json& pod, bool deleted);
  Status StartPod(const nlohmann::json& pod);
  void StartContainer(PodRun& pod, ContainerRun& container);
  void OnContainerExit(PodRun& pod, ContainerRun& container, int wait_status);
  void RemovePodNetwork(PodRun& pod);
  void RefreshHosts();
  nlohmann::json StatusPatch(const PodRun& pod) const;
  void ReportStatus(const std::string& namespace_name, const std::string& name,
                    const nlohmann::json& patch);

  kube::Api& api_;
  const NodeAgentOptions options_;
  const std::string netns_prefix_;  // cohort-node-agent-<pid>-<agent number>-
  const std::filesystem::path hosts_file_;
  std::atomic<bool> stopping_{false};

  mutable std::mutex mu_;
  std::map<std::string, std::unique_ptr<PodRun>> pods_;  // by uid, while the agent runs them
  std::set<std::string> finished_uids_;                  // pods it ran to the end (or deleted)
  std::set<int> used_addresses_;                         // host numbers in the subnet
  std::string hosts_contents_;

  std::unique_ptr<kube::Informer> unbound_pods_;  // with a schedule_namespace
  std::unique_ptr<kube::Informer> bound_pods_;
  std::thread schedule_thread_;  // runs unbound_pods_
  std::thread kubelet_thread_;   // runs bound_pods_
  std::thread supervise_thread_;
};

}  // namespace cohort::testing
