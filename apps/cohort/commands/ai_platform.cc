// `cohort ai-platform jobs submit training|list|describe|cancel|stream-logs`: gcloud's forms,
// for users who come from AI Platform: the same local jobs, in gcloud's words and columns
// (view/ai_platform_view.h), read and changed through the local JobClient.
#include <iostream>

#include "apps/cohort/commands/command.h"
#include "apps/cohort/commands/commands.h"
#include "job/ai_platform_job.h"
#include "job/reconciler.h"
#include "job/spec_writer.h"
#include "view/ai_platform_view.h"
#include "view/command_line.h"

namespace cohort::cli {
namespace {

// What every `ai-platform jobs` command takes.
struct AiJobFlags {
  std::string name;
  std::string region;  // accepted for gcloud's sake
  NamespaceFlag namespace_flag;
  std::string config;
  bool stream_logs = false;
  std::vector<std::string> image_flags;
};

StatusOr<std::unique_ptr<view::JobClient>> LocalClient() { return ClientFactory({})(); }

// `submit training [JOB] --config FILE`: JOB names the job (as gcloud's job ID), else the file's
// jobId, else the file's name.
int Submit(const AiJobFlags& flags) {
  CreateFlags create;
  create.job_file.file = flags.config;
  create.image_flags = flags.image_flags;
  create.namespace_flag = flags.namespace_flag;
  if (!flags.name.empty()) {
    StatusOr<std::string> name = job::JobNameForJobId(flags.name);
    if (!name.ok())
      return Fail(kExitInvalidInput, "JOB " + flags.name + ": " + name.status().message());
    create.job_file.options.job_name = *name;
  } else if (StatusOr<std::string> name = view::JobNameFromFileName(flags.config); name.ok()) {
    create.job_file.options.name_without_job_id = *name;
  }
  exec::JobKey key;
  int submitted = CreateFromFile(create, [&key](const view::Created& created) {
    key = created.key;
    std::cout << "Job [" << key.name << "] submitted successfully.\n"
              << "Its status: cohort ai-platform jobs describe " << key.name << "\n"
              << "Its logs:   cohort ai-platform jobs stream-logs " << key.name << "\n"
              << "jobId: " << key.name << "\nstate: QUEUED\n"
              << std::flush;
  });
  if (submitted != kExitSucceeded || !flags.stream_logs) return submitted;
  StatusOr<std::unique_ptr<view::JobClient>> client = LocalClient();
  if (!client.ok()) return Fail(client.status());
  view::LogRequest request;
  request.name = key.name;
  request.follow = true;
  return PrintLogs(**client, key.namespace_name, request);
}

int List(const AiJobFlags& flags) {
  StatusOr<std::unique_ptr<view::JobClient>> client = LocalClient();
  if (!client.ok()) return Fail(client.status());
  view::JobQuery query;
  query.namespace_name = flags.namespace_flag.value;
  StatusOr<view::JobList> jobs = (*client)->GetJobs(query);
  if (!jobs.ok()) return Fail(jobs.status());
  if (jobs->keys.empty()) {
    std::cerr << "Listed 0 items.\n";
    return kExitSucceeded;
  }
  std::cout << view::AiPlatformJobTable(*jobs->store, jobs->keys);
  return kExitSucceeded;
}

StatusOr<view::JobList> OneJob(view::JobClient& client, const AiJobFlags& flags) {
  view::JobQuery query;
  query.namespace_name = flags.namespace_flag.value;
  query.names = {flags.name};
  return client.GetJobs(query);
}

int Describe(const AiJobFlags& flags) {
  StatusOr<std::unique_ptr<view::JobClient>> client = LocalClient();
  if (!client.ok()) return Fail(client.status());
  StatusOr<view::JobList> found = OneJob(**client, flags);
  if (!found.ok()) return Fail(found.status());
  StatusOr<nlohmann::json> object = view::AiPlatformJobObject(*found->store, found->keys.front());
  if (!object.ok()) return Fail(kExitError, object.status().message());
  std::cout << job::ToYaml(*object);
  return kExitSucceeded;
}

// `jobs cancel`: a cancelled job stops and stays listed (CANCELLED), so cancel suspends it.
int Cancel(const AiJobFlags& flags) {
  StatusOr<std::unique_ptr<view::JobClient>> client = LocalClient();
  if (!client.ok()) return Fail(client.status());
  StatusOr<view::JobList> found = OneJob(**client, flags);
  if (!found.ok()) return Fail(found.status());
  StatusOr<job::JobStatus> status = found->store->ReadStatus(found->keys.front());
  if (status.ok() && job::IsFinished(*status)) {
    return Fail(kExitInvalidInput, "job " + flags.name + " is already in terminal state " +
                                       view::AiPlatformState(*status) + "; nothing to cancel");
  }
  StatusOr<job::Job> spec = found->store->ReadSpec(found->keys.front());
  StatusOr<std::string> suspended =
      (*client)->SetSuspended(found->keys.front(), spec.ok() ? spec->job_kind : nullptr, true);
  if (!suspended.ok()) return Fail(suspended.status());
  std::cout << "Cancelled job [" << flags.name << "].\n";
  return kExitSucceeded;
}

int StreamLogs(const AiJobFlags& flags) {
  StatusOr<std::unique_ptr<view::JobClient>> client = LocalClient();
  if (!client.ok()) return Fail(client.status());
  view::LogRequest request;
  request.name = flags.name;
  request.follow = true;
  return PrintLogs(**client, flags.namespace_flag.value, request);
}

// A subcommand of `jobs` with --region and -n, run by `run`.
CLI::App* AddJobsCommand(CLI::App* jobs, const std::string& name, const std::string& help,
                         int& exit_code, int (*run)(const AiJobFlags&),
                         std::shared_ptr<AiJobFlags> flags) {
  CLI::App* command = jobs->add_subcommand(name, help);
  command->add_option("--region", flags->region,
                      "accepted for gcloud's sake; jobs run on this machine");
  AddNamespace(command, flags->namespace_flag);
  command->callback([flags, run, &exit_code] { exit_code = run(*flags); });
  return command;
}

}  // namespace

void AddAiPlatformCommand(CLI::App& app, int& exit_code) {
  CLI::App* ai_platform =
      app.add_subcommand("ai-platform", "gcloud ai-platform's forms: ai-platform jobs ...");
  ai_platform->require_subcommand(1);
  CLI::App* jobs = ai_platform->add_subcommand("jobs", "AI Platform training jobs, run here");
  jobs->require_subcommand(1);

  CLI::App* submit = jobs->add_subcommand("submit", "Submit a job");
  submit->require_subcommand(1);
  auto training_flags = std::make_shared<AiJobFlags>();
  CLI::App* training = submit->add_subcommand("training", "Start a training job in the background");
  training->add_option("JOB", training_flags->name,
                       "the job's ID (default: the config's jobId, else its file name)");
  training->add_option("--config", training_flags->config, "the job spec (gcloud's config.yaml)")
      ->required();
  training->add_flag("--stream-logs", training_flags->stream_logs,
                     "then print its logs until it finishes");
  AddImages(training, training_flags->image_flags);
  training->add_option("--region", training_flags->region,
                       "accepted for gcloud's sake; jobs run on this machine");
  AddNamespace(training, training_flags->namespace_flag);
  training->callback([training_flags, &exit_code] { exit_code = Submit(*training_flags); });

  AddJobsCommand(jobs, "list", "List jobs: JOB_ID STATUS CREATED", exit_code, List,
                 std::make_shared<AiJobFlags>());
  for (auto [name, help, run] :
       {std::tuple{"describe", "Show a job as AI Platform's Job", &Describe},
        std::tuple{"cancel", "Cancel a job: stop it, keep it listed (suspended)", &Cancel},
        std::tuple{"stream-logs", "Print a job's logs as it runs", &StreamLogs}}) {
    auto flags = std::make_shared<AiJobFlags>();
    CLI::App* command = AddJobsCommand(jobs, name, help, exit_code, run, flags);
    command->add_option("JOB", flags->name)->required();
  }
}

}  // namespace cohort::cli
