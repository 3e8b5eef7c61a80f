// `cohort ui [--address A] [--port P] [--token T | --token-file F] [--kubernetes ...]`: serves
// the web dashboard (ui/ui_command.h) of the jobs here, or with --kubernetes of a cluster's
// jobs of every kind, through the same JobClient the other commands use.
#include <iostream>

#include "apps/cohort/commands/command.h"
#include "apps/cohort/commands/commands.h"
#include "exec/job_store.h"
#include "ui/ui_command.h"
#include "view/command_line.h"
#include "view/local_job_client.h"

namespace cohort::cli {
namespace {

// How often the dashboard's listings tidy every local job (supervisor lost, TTL): pages poll.
constexpr std::chrono::seconds kTidyEvery{2};

struct UiCommandFlags {
  ui::UiFlags ui;
  TargetFlags target;
};

int Serve(const UiCommandFlags& flags) {
  std::unique_ptr<view::JobClient> client;
  ui::DashboardJobs jobs;
  if (flags.target.kubernetes) {
    StatusOr<std::unique_ptr<kube::KubeJobClient>> cluster =
        kube::ConnectJobClient(KubeOptions(flags.target));
    if (!cluster.ok()) return Fail(cluster.status());
    jobs.description = "the jobs of " + (*cluster)->Description();
    client = std::move(*cluster);
  } else {
    jobs.home = exec::DefaultCohortHome();
    jobs.description = "the jobs of " + jobs.home.string();
    client =
        std::make_unique<view::LocalJobClient>(view::LocalJobClientOptions{jobs.home, kTidyEvery});
  }
  jobs.client = client.get();
  Status served = ui::ServeDashboard(flags.ui, jobs, std::cout);
  return served.ok() ? kExitSucceeded : Fail(served);
}

}  // namespace

void AddUiCommand(CLI::App& app, int& exit_code) {
  auto flags = std::make_shared<UiCommandFlags>();
  ui::UiFlags& ui_flags = flags->ui;
  CLI::App* ui_command = app.add_subcommand(
      "ui", "Serve the web dashboard of the jobs here (loopback; elsewhere with a token)");
  ui_command->add_option("--address", ui_flags.address, "the address to listen on")
      ->capture_default_str();
  ui_command->add_option("--port", ui_flags.port, "the port (0: any free one)")
      ->check(CLI::Range(0, 65535))
      ->capture_default_str();
  ui_command->add_option("--token", ui_flags.token,
                         "the token every request must carry (required off loopback)");
  ui_command->add_option("--token-file", ui_flags.token_file,
                         "a file whose first line is the token");
  AddKubernetes(ui_command, flags->target,
                "serve the jobs (" + view::JobPlurals("and") +
                    ") of the kubeconfig context's cluster instead");
  ui_command->footer(
      "Serves until interrupted (SIGINT or SIGTERM: exit status 0). Exit status: 2 invalid flags "
      "(an address off loopback without a token), 3 the port cannot be bound (taken? --port "
      "another, or 0 for any), or the cluster's connection cannot be read.");
  ui_command->callback([flags, &exit_code] { exit_code = Serve(*flags); });
}

}  // namespace cohort::cli
