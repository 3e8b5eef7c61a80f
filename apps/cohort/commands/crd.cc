// `cohort crd`: the TFJob CustomResourceDefinition (deploy/kubernetes/crd.yaml), generated from
// the job types (kube/objects/crd.h).
#include "kube/objects/crd.h"

#include <iostream>

#include "apps/cohort/commands/command.h"
#include "apps/cohort/commands/commands.h"
#include "job/spec_writer.h"
#include "job/tfjob.h"

namespace cohort::cli {

void AddCrdCommand(CLI::App& app, int& exit_code) {
  CLI::App* crd = app.add_subcommand("crd", "Print the TFJob CustomResourceDefinition");
  crd->callback([&exit_code] {
    std::cout << job::ToYaml(kube::CustomResourceDefinition(job::TFJobKind()));
    exit_code = kExitSucceeded;
  });
}

}  // namespace cohort::cli
