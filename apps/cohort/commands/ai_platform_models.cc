// `cohort ai-platform models create|list|describe|delete` and `cohort ai-platform versions
// create|list|describe|delete|set-default`: gcloud's model registry, kept on this machine in
// $COHORT_HOME/models (exec/model_registry.h). Listings are gcloud's columns (models: NAME
// DEFAULT_VERSION_NAME; versions: NAME DEPLOYMENT_URI STATE), describe prints the resource as
// YAML, and progress lines go to standard error as gcloud's do.
#include <cctype>
#include <iostream>
#include <memory>

#include "apps/cohort/commands/command.h"
#include "apps/cohort/commands/commands.h"
#include "exec/job_store.h"
#include "exec/model_registry.h"
#include "job/spec_writer.h"
#include "view/table.h"

namespace cohort::cli {
namespace {

struct ModelFlags {
  std::string model;    // MODEL, or --model for versions
  std::string version;  // VERSION
  std::string description;
  std::vector<std::string> regions;
  std::string origin;
  std::string runtime_version;
  std::string python_version;
  std::string framework;
};

exec::ModelRegistry Registry() { return exec::ModelRegistry(exec::DefaultCohortHome() / "models"); }

int ModelsCreate(const ModelFlags& flags) {
  exec::ModelRecord model;
  model.name = flags.model;
  model.description = flags.description;
  model.regions = flags.regions;
  model.create_time = Clock::now();
  if (Status created = Registry().CreateModel(model); !created.ok()) return Fail(created);
  std::cerr << "Created ai platform model [" << flags.model << "].\n";
  return kExitSucceeded;
}

int ModelsList(const ModelFlags&) {
  StatusOr<std::vector<exec::ModelRecord>> models = Registry().ListModels();
  if (!models.ok()) return Fail(models.status());
  if (models->empty()) {
    std::cerr << "Listed 0 items.\n";
    return kExitSucceeded;
  }
  std::vector<view::Row> rows = {{"NAME", "DEFAULT_VERSION_NAME"}};
  for (const exec::ModelRecord& model : *models)
    rows.push_back({model.name, model.default_version});
  std::cout << view::FormatTable(rows, "", 2);
  return kExitSucceeded;
}

int ModelsDescribe(const ModelFlags& flags) {
  exec::ModelRegistry registry = Registry();
  StatusOr<exec::ModelRecord> model = registry.GetModel(flags.model);
  if (!model.ok()) return Fail(model.status());
  std::optional<exec::VersionRecord> default_version;
  if (!model->default_version.empty()) {
    StatusOr<exec::VersionRecord> version =
        registry.GetVersion(model->name, model->default_version);
    if (!version.ok()) return Fail(version.status());
    default_version = *version;
  }
  std::cout << job::ToYaml(exec::ModelObject(*model, default_version));
  return kExitSucceeded;
}

int ModelsDelete(const ModelFlags& flags) {
  if (Status deleted = Registry().DeleteModel(flags.model); !deleted.ok()) return Fail(deleted);
  std::cerr << "Deleted model [" << flags.model << "].\n";
  return kExitSucceeded;
}

// gcloud writes frameworks as scikit-learn; the API as SCIKIT_LEARN.
std::string FrameworkName(std::string value) {
  for (char& c : value) c = c == '-' ? '_' : static_cast<char>(std::toupper(c));
  return value;
}

int VersionsCreate(const ModelFlags& flags) {
  StatusOr<exec::VersionRecord> version = exec::ReadSavedModelOrigin(flags.origin);
  if (!version.ok()) return Fail(version.status());
  version->name = flags.version;
  version->runtime_version = flags.runtime_version;
  version->python_version = flags.python_version;
  version->create_time = Clock::now();
  if (!flags.framework.empty()) version->framework = FrameworkName(flags.framework);
  StatusOr<exec::ModelRecord> model = Registry().CreateVersion(flags.model, *version);
  if (!model.ok()) return Fail(model.status());
  std::cerr << "Created version [" << flags.version << "] of model [" << flags.model << "]"
            << (model->default_version == flags.version ? ", its default" : "") << ".\n";
  return kExitSucceeded;
}

int VersionsList(const ModelFlags& flags) {
  StatusOr<std::vector<exec::VersionRecord>> versions = Registry().ListVersions(flags.model);
  if (!versions.ok()) return Fail(versions.status());
  if (versions->empty()) {
    std::cerr << "Listed 0 items.\n";
    return kExitSucceeded;
  }
  std::vector<view::Row> rows = {{"NAME", "DEPLOYMENT_URI", "STATE"}};
  for (const exec::VersionRecord& version : *versions) {
    rows.push_back({version.name, version.deployment_uri, "READY"});
  }
  std::cout << view::FormatTable(rows, "", 2);
  return kExitSucceeded;
}

// The version as describe prints it, isDefault included.
int PrintVersion(exec::ModelRegistry& registry, const ModelFlags& flags) {
  StatusOr<exec::VersionRecord> version = registry.GetVersion(flags.model, flags.version);
  if (!version.ok()) return Fail(version.status());
  StatusOr<exec::ModelRecord> model = registry.GetModel(flags.model);
  if (!model.ok()) return Fail(model.status());
  std::cout << job::ToYaml(exec::VersionObject(*version, model->default_version == flags.version));
  return kExitSucceeded;
}

int VersionsDescribe(const ModelFlags& flags) {
  exec::ModelRegistry registry = Registry();
  return PrintVersion(registry, flags);
}

int VersionsDelete(const ModelFlags& flags) {
  if (Status deleted = Registry().DeleteVersion(flags.model, flags.version); !deleted.ok()) {
    return Fail(deleted);
  }
  std::cerr << "Deleted version [" << flags.version << "] of model [" << flags.model << "].\n";
  return kExitSucceeded;
}

int VersionsSetDefault(const ModelFlags& flags) {
  exec::ModelRegistry registry = Registry();
  if (Status set = registry.SetDefaultVersion(flags.model, flags.version); !set.ok()) {
    return Fail(set);
  }
  return PrintVersion(registry, flags);
}

using Run = int (*)(const ModelFlags&);

CLI::App* AddCommand(CLI::App* parent, const std::string& name, const std::string& help,
                     int& exit_code, Run run, const std::shared_ptr<ModelFlags>& flags) {
  CLI::App* command = parent->add_subcommand(name, help);
  command->callback([flags, run, &exit_code] { exit_code = run(*flags); });
  return command;
}

}  // namespace

void AddAiPlatformModelCommands(CLI::App* ai_platform, int& exit_code) {
  CLI::App* models = ai_platform->add_subcommand("models", "AI Platform models, kept here");
  models->require_subcommand(1);
  auto create_flags = std::make_shared<ModelFlags>();
  CLI::App* create = AddCommand(models, "create", "Create a model (no versions yet)", exit_code,
                                ModelsCreate, create_flags);
  create->add_option("MODEL", create_flags->model, "its name: letters, digits, '_'")->required();
  create->add_option("--description", create_flags->description, "a text kept with it");
  create->add_option("--regions", create_flags->regions, "kept for gcloud's sake")->delimiter(',');
  AddCommand(models, "list", "List models: NAME DEFAULT_VERSION_NAME", exit_code, ModelsList,
             std::make_shared<ModelFlags>());
  for (auto [name, help, run] :
       {std::tuple{"describe", "Show a model and its default version", &ModelsDescribe},
        std::tuple{"delete", "Delete a model that has no versions", &ModelsDelete}}) {
    auto flags = std::make_shared<ModelFlags>();
    AddCommand(models, name, help, exit_code, run, flags)
        ->add_option("MODEL", flags->model)
        ->required();
  }

  CLI::App* versions = ai_platform->add_subcommand("versions", "A model's versions, kept here");
  versions->require_subcommand(1);
  auto version_create = std::make_shared<ModelFlags>();
  CLI::App* create_version =
      AddCommand(versions, "create", "Create a version from a saved model directory", exit_code,
                 VersionsCreate, version_create);
  create_version->add_option("VERSION", version_create->version)->required();
  create_version->add_option("--model", version_create->model, "the model")->required();
  create_version
      ->add_option("--origin", version_create->origin,
                   "the saved model's directory (its manifest.json gives framework and signature)")
      ->required();
  create_version->add_option("--runtime-version", version_create->runtime_version,
                             "kept with the version");
  create_version->add_option("--python-version", version_create->python_version,
                             "kept with the version");
  create_version->add_option("--framework", version_create->framework,
                             "instead of the manifest's (tensorflow, scikit-learn...)");
  auto list_flags = std::make_shared<ModelFlags>();
  AddCommand(versions, "list", "List a model's versions: NAME DEPLOYMENT_URI STATE", exit_code,
             VersionsList, list_flags)
      ->add_option("--model", list_flags->model, "the model")
      ->required();
  for (auto [name, help, run] :
       {std::tuple{"describe", "Show a version", &VersionsDescribe},
        std::tuple{"delete", "Delete a version (the default only when it is the last)",
                   &VersionsDelete},
        std::tuple{"set-default", "Make a version its model's default", &VersionsSetDefault}}) {
    auto flags = std::make_shared<ModelFlags>();
    CLI::App* command = AddCommand(versions, name, help, exit_code, run, flags);
    command->add_option("VERSION", flags->version)->required();
    command->add_option("--model", flags->model, "the model")->required();
  }
}

}  // namespace cohort::cli
