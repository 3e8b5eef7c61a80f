// The `cohort` commands, one file each (as kubectl's), registered by main.cc in this order. Each
// AddXCommand adds its subcommand and flags to `app` and sets `exit_code` when it runs
// (command.h). What two commands share is declared here beside them.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <string>
#include <vector>

#include "apps/cohort/commands/command.h"

namespace cohort::cli {

// Jobs, on this machine or (--kubernetes) a cluster, through view::JobClient.
void AddSubmitCommand(CLI::App& app, int& exit_code);    // submit.cc
void AddApplyCommand(CLI::App& app, int& exit_code);     // apply.cc
void AddCreateCommand(CLI::App& app, int& exit_code);    // create.cc
void AddGetCommand(CLI::App& app, int& exit_code);       // get.cc
void AddDescribeCommand(CLI::App& app, int& exit_code);  // describe.cc
void AddLogsCommand(CLI::App& app, int& exit_code);      // logs.cc
void AddWaitCommand(CLI::App& app, int& exit_code);      // wait.cc
void AddDeleteCommand(CLI::App& app, int& exit_code);    // delete.cc
void AddSuspendCommand(CLI::App& app, int& exit_code);   // suspend.cc
void AddResumeCommand(CLI::App& app, int& exit_code);    // resume.cc
void AddUiCommand(CLI::App& app, int& exit_code);        // ui.cc: the dashboard, either client
// This machine's only.
void AddRunCommand(CLI::App& app, int& exit_code);         // run.cc
void AddSuperviseCommand(CLI::App& app, int& exit_code);   // supervise.cc (internal)
void AddAiPlatformCommand(CLI::App& app, int& exit_code);  // ai_platform.cc
// ai_platform_models.cc: `ai-platform models|versions`, added by AddAiPlatformCommand.
void AddAiPlatformModelCommands(CLI::App* ai_platform, int& exit_code);
// serve.cc: `ai-platform predict`, added by AddAiPlatformCommand; both run cohort-serve.
void AddAiPlatformPredictCommand(CLI::App* ai_platform, int& exit_code);
void AddServeCommand(CLI::App& app, int& exit_code);  // serve.cc: the prediction server
// Job files, without running them.
void AddValidateCommand(CLI::App& app, int& exit_code);   // validate.cc
void AddEnvCommand(CLI::App& app, int& exit_code);        // env.cc
void AddTfConfigCommand(CLI::App& app, int& exit_code);   // tfconfig.cc
void AddConvertCommand(CLI::App& app, int& exit_code);    // convert.cc
void AddManifestsCommand(CLI::App& app, int& exit_code);  // manifests.cc
// Kubernetes.
void AddCrdCommand(CLI::App& app, int& exit_code);       // crd.cc
void AddOperatorCommand(CLI::App& app, int& exit_code);  // operator.cc

// create.cc: what submit, create and apply take, and creating the job a file describes.
struct CreateFlags {
  JobFileFlags job_file;
  std::vector<std::string> image_flags;
  NamespaceFlag namespace_flag;
  TargetFlags target;
};
void AddCreateFlags(CLI::App* command, CreateFlags& flags);  // --image, -n, --kubernetes...
view::CreateRequest CreateRequestFor(const LoadedJob& loaded, const CreateFlags& flags);
// Loads the file, creates the job through the flags' client and calls `on_created` to print it;
// the client's note follows on standard error.
int CreateFromFile(const CreateFlags& flags,
                   const std::function<void(const view::Created&)>& on_created);
// "pytorchjob.kubeflow.org/NAME created" (the job's kind's resource), as kubectl's create.
void PrintCreated(const view::Created& created);

// logs.cc: prints a job's or pod's logs ("[worker-0] LINE" when several replicas' come).
int PrintLogs(view::JobClient& client, const std::string& namespace_name,
              const view::LogRequest& request);

// env.cc: a replica of a job and the environment it gets, for env and tfconfig.
struct ReplicaId {
  std::string type;  // as keyed in Job::replica_specs ("Worker")
  int index = 0;
};
// The replica `replica` ("worker-1") names; InvalidArgument listing the job's replicas otherwise.
StatusOr<ReplicaId> FindReplica(const job::Job& job, const std::string& replica);
struct EnvironmentOptions {
  bool kubernetes = false;     // the operator's pod's form, else this machine's
  std::string cluster_domain;  // with kubernetes: appended to the hosts
  std::string container;       // with kubernetes: another container of the pod; "": the kind's
};
struct ReplicaVariables {
  std::vector<job::EnvVar> variables;  // in the order they are set
  bool live = true;  // locally: whether the ports are a live job's (else chosen now)
};
// The environment `replica` of `job` gets (env.cc says which variables, in which order).
StatusOr<ReplicaVariables> ReplicaEnvironmentOf(const job::Job& job, const ReplicaId& replica,
                                                const EnvironmentOptions& options);
// "cohort: job NS/NAME is not running; showing freshly chosen local ports" on standard error.
void PrintNotRunning(const job::Job& job);

// suspend.cc: what suspend and resume take, and carrying them out.
struct SuspendFlags {
  std::vector<std::string> arguments;  // [KIND] NAME
  NamespaceFlag namespace_flag;
  TargetFlags target;
};
void AddSuspendFlags(CLI::App* command, SuspendFlags& flags);
int SetSuspended(const SuspendFlags& flags, bool suspended);

}  // namespace cohort::cli
