#include "apps/cohort/commands/command.h"

#include <iostream>
#include <map>

#include "base/names.h"
#include "exec/job_store.h"
#include "job/job_kind.h"
#include "view/command_line.h"
#include "view/local_job_client.h"

namespace cohort::cli {

namespace {

std::map<const CLI::App*, std::vector<std::string>*>& SeparatorDestinations() {
  static std::map<const CLI::App*, std::vector<std::string>*> destinations;
  return destinations;
}

}  // namespace

void AcceptArgumentsAfterSeparator(const CLI::App* command, std::vector<std::string>* destination) {
  SeparatorDestinations()[command] = destination;
}

std::vector<std::string>* ArgumentsAfterSeparatorOf(const CLI::App* command) {
  auto found = SeparatorDestinations().find(command);
  return found == SeparatorDestinations().end() ? nullptr : found->second;
}

int Fail(int exit_code, const std::string& message) {
  std::cerr << "cohort: " << message << "\n";
  return exit_code;
}

int Fail(const Status& status) { return Fail(ExitCodeFor(status), status.message()); }

std::optional<std::string> NamespaceFlag::Given() const {
  if (option == nullptr || option->count() == 0) return std::nullopt;
  return value;
}

void AddNamespace(CLI::App* command, NamespaceFlag& flag, const std::string& help) {
  // Checked before any command runs: a namespace becomes a directory of $COHORT_HOME (and a path
  // of the API server), so "../../x" must never reach either (base/names.h).
  flag.option = command->add_option("-n,--namespace", flag.value, help)
                    ->capture_default_str()
                    ->check(CLI::Validator(
                        [](std::string& value) -> std::string {
                          Status valid = CheckName(value, "namespace", "-n/--namespace");
                          return valid.ok() ? std::string() : valid.message();
                        },
                        "NAMESPACE"));
}

void AddKubernetes(CLI::App* command, TargetFlags& flags, const std::string& help) {
  CLI::Option* cluster_flag =
      command->add_flag("--kubernetes", flags.kubernetes,
                        help.empty() ? "on the cluster of the kubeconfig's context, as a " +
                                           job::KindRegistry::Default().Names(" or ") +
                                           " (the job's kind), not on this machine"
                                     : help);
  command
      ->add_option("--context", flags.context,
                   "with --kubernetes: the kubeconfig context (default: current-context)")
      ->needs(cluster_flag);
  command
      ->add_option("--kubeconfig", flags.kubeconfig,
                   "with --kubernetes: the kubeconfig file (default: $KUBECONFIG, else "
                   "~/.kube/config)")
      ->needs(cluster_flag);
  command
      ->add_option("--request-timeout", flags.request_timeout_seconds,
                   "with --kubernetes: seconds each request to the API server may take")
      ->check(CLI::PositiveNumber)
      ->capture_default_str()
      ->needs(cluster_flag);
}

kube::KubeClientOptions KubeOptions(const TargetFlags& flags) {
  kube::KubeClientOptions options;
  options.context = flags.context;
  options.kubeconfig = flags.kubeconfig;
  options.request_timeout =
      std::chrono::milliseconds(static_cast<int64_t>(flags.request_timeout_seconds * 1000));
  return options;
}

view::JobClientFactory ClientFactory(const TargetFlags& flags) {
  if (!flags.kubernetes) {
    return []() -> StatusOr<std::unique_ptr<view::JobClient>> {
      return std::unique_ptr<view::JobClient>(std::make_unique<view::LocalJobClient>(
          view::LocalJobClientOptions{exec::DefaultCohortHome()}));
    };
  }
  kube::KubeClientOptions options = KubeOptions(flags);
  return [options]() -> StatusOr<std::unique_ptr<view::JobClient>> {
    StatusOr<std::unique_ptr<kube::KubeJobClient>> client = kube::ConnectJobClient(options);
    if (!client.ok()) return client.status();
    return std::unique_ptr<view::JobClient>(std::move(*client));
  };
}

void AddJobName(CLI::App* command, JobFileFlags& flags) {
  command->add_option("--name", flags.options.job_name,
                      "the job's name, for an AI Platform job spec (default: its jobId)");
}

void AddJobFile(CLI::App* command, JobFileFlags& flags, const std::string& what) {
  command
      ->add_option("FILE", flags.file, what + ": " + ManifestHelp() + " or an AI Platform job spec")
      ->required();
  AddJobName(command, flags);
}

void AddImages(CLI::App* command, std::vector<std::string>& image_flags) {
  command->add_option("--image", image_flags,
                      "NAME=COMMAND: run containers of image NAME as COMMAND (repeatable)");
}

StatusOr<LoadedJob> LoadJobFor(const view::JobClient& client, const std::string& file,
                               const job::JobFileOptions& options,
                               const NamespaceFlag& namespace_flag) {
  StatusOr<LoadedJob> loaded = LoadJobFile(file, options, namespace_flag.Given());
  if (!loaded.ok()) return loaded.status();
  std::string& namespace_name = loaded->job.metadata.namespace_name;
  if (!namespace_flag.Given() && namespace_name == "default") {
    namespace_name = client.Namespace(std::nullopt);
  }
  return loaded;
}

StatusOr<JobArguments> JobNames(const std::vector<std::string>& arguments) {
  StatusOr<view::ResourceArguments> resource = view::SplitResource(arguments);
  if (!resource.ok()) return resource.status();
  if (resource->resource == view::Resource::kPod) {
    return Status::InvalidArgument("this command takes " + view::JobPlurals("or") +
                                   "; a pod is a replica of its job (cohort get pods)");
  }
  if (resource->names.empty()) return Status::InvalidArgument("a job name is required");
  return JobArguments{resource->kind, resource->names};
}

StatusOr<JobArguments> OneJobName(const std::vector<std::string>& arguments) {
  StatusOr<JobArguments> job = JobNames(arguments);
  if (!job.ok()) return job.status();
  if (job->names.size() > 1) {
    return Status::InvalidArgument("one job only: " + JobArgumentsHelp(false) + " (got " +
                                   std::to_string(job->names.size()) + " names)");
  }
  return job;
}

std::string JobArgumentsHelp(bool several) {
  return "[" + view::JobTypeChoices("|", false) + "] NAME" + (several ? "..." : "");
}

std::string ManifestHelp() {
  return "a " + job::KindRegistry::Default().Names(" or ") + " manifest";
}

void PrintWarnings(const std::vector<std::string>& warnings) {
  for (const std::string& warning : warnings) std::cerr << "cohort: warning: " << warning << "\n";
}

}  // namespace cohort::cli
