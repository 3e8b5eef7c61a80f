// `cohort operator`: runs jobs of every kind (or those --enable-scheme names) on a Kubernetes
// cluster, as Kubeflow's training operator
// (kube/operator/operator.h), until SIGTERM or SIGINT; then stops cleanly (releasing the Lease).
// The cluster is the kubeconfig's (--kubeconfig, else $KUBECONFIG or ~/.kube/config; --context,
// else its current context) or, in a pod without a kubeconfig, the pod's service account.
#include <atomic>
#include <csignal>
#include <cstdlib>

#include "apps/cohort/commands/command.h"
#include "apps/cohort/commands/commands.h"
#include "job/job_kind.h"
#include "kube/client/http_api.h"
#include "kube/operator/operator_command.h"

namespace cohort::cli {
namespace {

std::atomic<int> operator_stop_requested{0};  // lock-free: set from the signal handler
static_assert(std::atomic<int>::is_always_lock_free);

void RequestOperatorStop(int) { operator_stop_requested.store(1); }

struct OperatorCommandFlags {
  kube::OperatorFlags operator_flags;
  std::string kubeconfig;
  std::string context;
};

int RunOperator(const OperatorCommandFlags& flags) {
  StatusOr<kube::OperatorOptions> options =
      kube::MakeOperatorOptions(flags.operator_flags, [](const std::string& name) {
        const char* value = std::getenv(name.c_str());
        return value ? std::string(value) : std::string();
      });
  if (!options.ok()) return Fail(kExitInvalidInput, options.status().message());
  if (!flags.kubeconfig.empty()) setenv("KUBECONFIG", flags.kubeconfig.c_str(), 1);
  StatusOr<std::unique_ptr<kube::Api>> api = kube::Connect(flags.context);
  if (!api.ok()) return Fail(kExitError, api.status().message());
  struct sigaction action = {};
  action.sa_handler = RequestOperatorStop;
  sigemptyset(&action.sa_mask);
  sigaction(SIGTERM, &action, nullptr);
  sigaction(SIGINT, &action, nullptr);
  kube::Operator op(**api, kube::KubeObjectBuilders(), *options);
  kube::RunOperatorUntil(op, operator_stop_requested);
  return kExitSucceeded;
}

}  // namespace

void AddOperatorCommand(CLI::App& app, int& exit_code) {
  auto flags = std::make_shared<OperatorCommandFlags>();
  kube::OperatorFlags& operator_flags = flags->operator_flags;
  CLI::App* command = app.add_subcommand(
      "operator", "Run training jobs (" + job::KindRegistry::Default().Names(", ") +
                      ") on a Kubernetes cluster, as Kubeflow's training operator (until SIGTERM)");
  command->add_option("--kubeconfig", flags->kubeconfig,
                      "kubeconfig file (default: $KUBECONFIG, ~/.kube/config; in a pod "
                      "without one: the service account)");
  command->add_option("--context", flags->context, "kubeconfig context (default: current)");
  command->add_option("--namespace", operator_flags.namespace_name,
                      "only this namespace's jobs (default: every namespace)");
  command->add_option("--enable-scheme", operator_flags.enabled_kinds,
                      "run this job kind (" +
                          job::LowerCase(job::KindRegistry::Default().Names(", ")) +
                          "; repeat for several; default: every kind)");
  command->add_flag("--leader-elect", operator_flags.leader_elect,
                    "act only while holding the Lease, so one of several operators acts");
  command->add_option("--lease-name", operator_flags.lease_name, "the Lease's name")
      ->capture_default_str();
  command->add_option("--lease-namespace", operator_flags.lease_namespace,
                      "the Lease's namespace (default: $POD_NAMESPACE, else default)");
  command->add_option("--cluster-domain", operator_flags.cluster_domain,
                      "appended to TF_CONFIG's hosts (<pod>.<ns>.svc.DOMAIN)");
  command->add_option("--gang-scheduler", operator_flags.gang_scheduler,
                      "volcano, or a scheduler-plugins scheduler name: PodGroups");
  command->add_option("--workers", operator_flags.workers, "jobs synced at once (1-64)")
      ->capture_default_str();
  command
      ->add_option("--resync-period", operator_flags.resync_period_seconds,
                   "seconds between syncs of every job from the cache, changed or "
                   "not (0: never)")
      ->capture_default_str();
  command->callback([flags, &exit_code] { exit_code = RunOperator(*flags); });
}

}  // namespace cohort::cli
