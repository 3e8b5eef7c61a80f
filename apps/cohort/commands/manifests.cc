// `cohort manifests FILE [--cluster-domain D] [--gang-scheduler S]`: the objects Cohort's operator
// creates for the job (kube/objects/objects.h), as a YAML stream: the job's Secret, with a job
// secret made fresh at each print (job::NewJobSecret), then the pods, services (and PodGroup)
// Kubeflow's operator would create, whose containers read COHORT_JOB_SECRET from that Secret.
// The operator names the namespace in the request path only; here each object carries it, so
// that `kubectl apply -f -` puts it where TF_CONFIG's hosts point. Without a job on a server the
// objects have no owner: `kubectl delete` them together (the job-name label selects them all).
#include <iostream>

#include "apps/cohort/commands/command.h"
#include "apps/cohort/commands/commands.h"
#include "job/job_secret.h"
#include "job/spec_writer.h"
#include "kube/objects/objects.h"

namespace cohort::cli {
namespace {

struct ManifestsFlags {
  JobFileFlags job_file;
  NamespaceFlag namespace_flag;
  kube::ObjectOptions object_options;
};

int Manifests(const ManifestsFlags& flags) {
  StatusOr<LoadedJob> loaded =
      LoadJobFile(flags.job_file.file, flags.job_file.options, flags.namespace_flag.Given());
  if (!loaded.ok()) return Fail(kExitInvalidInput, loaded.status().message());
  const job::Job& job = loaded->job;
  kube::Owner owner;
  owner.api_version = job.api_version;
  owner.kind = job.kind;
  owner.name = job.metadata.name;
  StatusOr<std::string> secret = job::NewJobSecret();
  if (!secret.ok()) return Fail(kExitError, secret.status().message());
  StatusOr<std::vector<nlohmann::json>> objects =
      kube::BuildJobObjects(job, owner, flags.object_options, *secret);
  if (!objects.ok()) return Fail(kExitInvalidInput, objects.status().message());
  for (nlohmann::json& object : *objects) {
    object["metadata"]["namespace"] = job.metadata.namespace_name;
    std::cout << "---\n" << job::ToYaml(object);
  }
  return kExitSucceeded;
}

}  // namespace

void AddManifestsCommand(CLI::App& app, int& exit_code) {
  auto flags = std::make_shared<ManifestsFlags>();
  CLI::App* manifests = app.add_subcommand(
      "manifests",
      "Print the job's Secret, pods, services (and PodGroup) the operator would create");
  AddJobFile(manifests, flags->job_file, "the job");
  AddNamespace(manifests, flags->namespace_flag);
  manifests->add_option(
      "--cluster-domain", flags->object_options.cluster_domain,
      "appended to TF_CONFIG's hosts (<pod>.<ns>.svc.DOMAIN), e.g. cluster.local");
  manifests->add_option("--gang-scheduler", flags->object_options.gang_scheduler,
                        "volcano, or a scheduler-plugins scheduler name: add a PodGroup");
  manifests->callback([flags, &exit_code] { exit_code = Manifests(*flags); });
}

}  // namespace cohort::cli
