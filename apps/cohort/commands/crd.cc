// `cohort crd [KIND]`: the CustomResourceDefinitions of the job kinds, generated from the job types
// (kube/objects/crd.h). Without KIND, every kind's, as one multi-document YAML stream that
// `kubectl apply -f` takes (deploy/kubernetes/crd.yaml is this output); with KIND (its kind or
// plural in any case: tfjob, PyTorchJob, pytorchjobs), that kind's alone.
#include "kube/objects/crd.h"

#include <iostream>

#include "apps/cohort/commands/command.h"
#include "apps/cohort/commands/commands.h"
#include "job/job_kind.h"
#include "job/spec_writer.h"

namespace cohort::cli {
namespace {

int PrintCrds(const std::string& kind_name) {
  const job::KindRegistry& registry = job::KindRegistry::Default();
  if (kind_name.empty()) {
    for (const job::JobKind* kind : registry.kinds()) {
      std::cout << "---\n" << job::ToYaml(kube::CustomResourceDefinition(*kind));
    }
    return kExitSucceeded;
  }
  const job::JobKind* kind = registry.FindByUserName(kind_name);
  if (kind == nullptr) {
    return Fail(kExitInvalidInput, "crd KIND \"" + kind_name + "\": not a job kind Cohort runs (" +
                                       job::LowerCase(registry.Names(", ")) + ")");
  }
  std::cout << job::ToYaml(kube::CustomResourceDefinition(*kind));
  return kExitSucceeded;
}

}  // namespace

void AddCrdCommand(CLI::App& app, int& exit_code) {
  auto kind_name = std::make_shared<std::string>();
  CLI::App* crd = app.add_subcommand(
      "crd", "Print the CustomResourceDefinitions of the job kinds (" +
                 job::KindRegistry::Default().Names(", ") + "), or of KIND alone");
  crd->add_option("KIND", *kind_name,
                  "one kind: " + job::LowerCase(job::KindRegistry::Default().Names(" or ")) +
                      " (any case, plural too)");
  crd->callback([kind_name, &exit_code] { exit_code = PrintCrds(*kind_name); });
}

}  // namespace cohort::cli
