// `cohort ai-platform jobs submit training|list|describe|cancel|stream-logs`: gcloud's forms,
// for users who come from AI Platform: the same local jobs, in gcloud's words and columns
// (view/ai_platform_view.h), read and changed through the local JobClient. A job is found by the
// ID it was submitted under (train_taxi_1), whatever name its TFJob got (train-taxi-1).
#include <algorithm>
#include <cctype>
#include <filesystem>
#include <iostream>
#include <map>

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
  std::string name;    // the job's ID, as gcloud's JOB argument
  std::string region;  // accepted for gcloud's sake
  NamespaceFlag namespace_flag;
  std::string config;
  bool stream_logs = false;
  std::vector<std::string> image_flags;
};

// gcloud's submit flags that set trainingInput fields, by flag: the field path each sets.
struct TrainingInputFlag {
  const char* flag;
  const char* field;  // under trainingInput; "masterConfig.imageUri" for a nested one
  const char* help;
};
constexpr TrainingInputFlag kTrainingInputFlags[] = {
    {"--job-dir", "jobDir",
     "the job's output directory, passed to the trainer as --job-dir (its model_dir); a local "
     "path is made absolute and created"},
    {"--runtime-version", "runtimeVersion", "accepted for gcloud's sake; the image decides"},
    {"--python-version", "pythonVersion", "accepted for gcloud's sake; the image decides"},
    {"--scale-tier", "scaleTier",
     "basic, basic-gpu, basic-tpu, standard-1, premium-1 or custom: the cluster's shape"},
    {"--module-name", "pythonModule",
     "a Python module for AI Platform's runtime; here the trainer needs --master-image-uri"},
    {"--package-path", "packageUris",
     "the trainer's Python package for AI Platform's runtime; here the trainer needs "
     "--master-image-uri"},
    {"--master-image-uri", "masterConfig.imageUri", "the master's image (map it with --image)"},
    {"--worker-image-uri", "workerConfig.imageUri", "the workers' image (default: the master's)"},
    {"--parameter-server-image-uri", "parameterServerConfig.imageUri",
     "the parameter servers' image (default: the master's)"},
};

// `submit training`'s flags beyond AiJobFlags: values by flag, and the trainer's arguments.
struct SubmitFlags {
  AiJobFlags common;
  std::map<std::string, std::string> training_input;  // "--job-dir" -> its value
  std::vector<std::string> user_args;                 // the words after `--`
};

StatusOr<std::unique_ptr<view::JobClient>> LocalClient() { return ClientFactory({})(); }

// gcloud writes scale tiers as basic-gpu; the API as BASIC_GPU.
std::string ScaleTierName(std::string value) {
  for (char& c : value) c = c == '-' ? '_' : static_cast<char>(std::toupper(c));
  return value;
}

// A --job-dir on this machine (not a storage URL) is made absolute, since replicas run in their
// own working directories, and created, as AI Platform checks that the path can be written.
StatusOr<std::string> LocalJobDir(const std::string& value) {
  if (value.find("://") != std::string::npos) return value;
  std::error_code error;
  std::filesystem::path path = std::filesystem::absolute(value, error);
  if (!error) std::filesystem::create_directories(path, error);
  if (error) {
    return Status::InvalidArgument("--job-dir " + value + ": cannot create it: " + error.message());
  }
  return path.lexically_normal().string();
}

// The command line's trainingInput fields and trainer arguments, as the converter takes them.
StatusOr<job::AiPlatformCommandLine> CommandLineOf(const SubmitFlags& flags) {
  job::AiPlatformCommandLine command_line;
  command_line.user_args = flags.user_args;
  if (!flags.common.region.empty()) {
    command_line.training_input["region"] = flags.common.region;
    command_line.flag_of_field["trainingInput.region"] = "--region";
  }
  for (const TrainingInputFlag& spec : kTrainingInputFlags) {
    auto given = flags.training_input.find(spec.flag);
    if (given == flags.training_input.end()) continue;
    std::string value = given->second;
    std::string field = spec.field;
    if (field == "jobDir") {
      StatusOr<std::string> directory = LocalJobDir(value);
      if (!directory.ok()) return directory.status();
      value = *directory;
    }
    if (field == "scaleTier") value = ScaleTierName(value);
    nlohmann::json json_value = value;
    if (field == "packageUris") json_value = nlohmann::json::array({value});
    size_t dot = field.find('.');
    if (dot == std::string::npos) {
      command_line.training_input[field] = json_value;
    } else {
      command_line.training_input[field.substr(0, dot)][field.substr(dot + 1)] = json_value;
    }
    command_line.flag_of_field["trainingInput." + field] = spec.flag;
  }
  return command_line;
}

// The job that `id` names: the one submitted under that ID, else the one of that name.
StatusOr<exec::JobKey> FindJob(view::JobClient& client, const AiJobFlags& flags) {
  view::JobQuery query;
  query.namespace_name = flags.namespace_flag.value;
  StatusOr<view::JobList> jobs = client.GetJobs(query);
  if (!jobs.ok()) return jobs.status();
  for (const exec::JobKey& key : jobs->keys) {
    if (view::AiPlatformJobId(*jobs->store, key) == flags.name) return key;
  }
  for (const exec::JobKey& key : jobs->keys) {
    if (key.name == flags.name) return key;
  }
  return Status::NotFound("job " + flags.name + " not found in namespace " + query.namespace_name +
                          " (cohort ai-platform jobs list shows its jobs)");
}

// `submit training [JOB] --config FILE [gcloud's flags] [-- TRAINER ARGS]`: JOB names the job
// (as gcloud's job ID), else the file's jobId, else the file's name.
int Submit(const SubmitFlags& submit) {
  const AiJobFlags& flags = submit.common;
  CreateFlags create;
  create.job_file.file = flags.config;
  create.image_flags = flags.image_flags;
  create.namespace_flag = flags.namespace_flag;
  StatusOr<job::AiPlatformCommandLine> command_line = CommandLineOf(submit);
  if (!command_line.ok()) return Fail(command_line.status());
  create.job_file.options.ai_platform = *command_line;
  if (flags.config.empty() && command_line->training_input.empty()) {
    return Fail(kExitInvalidInput,
                "the job needs --config FILE, or gcloud's flags for it (--master-image-uri "
                "IMAGE, --scale-tier...)");
  }
  if (!flags.name.empty()) {
    StatusOr<std::string> name = job::JobNameForJobId(flags.name);
    if (!name.ok())
      return Fail(kExitInvalidInput, "JOB " + flags.name + ": " + name.status().message());
    create.job_file.options.job_name = *name;
    create.job_file.options.job_id = flags.name;
  } else if (flags.config.empty()) {
    return Fail(kExitInvalidInput, "JOB is required: the job's ID, e.g. train_taxi_1");
  } else if (StatusOr<std::string> name = view::JobNameFromFileName(flags.config); name.ok()) {
    create.job_file.options.name_without_job_id = *name;
  }
  exec::JobKey key;
  int submitted =
      CreateFromFile(create, [&key](const view::Created& created) { key = created.key; });
  if (submitted != kExitSucceeded) return submitted;
  StatusOr<std::unique_ptr<view::JobClient>> client = LocalClient();
  if (!client.ok()) return Fail(client.status());
  std::string id = key.name;
  view::JobQuery query;
  query.namespace_name = key.namespace_name;
  query.names = {key.name};
  if (StatusOr<view::JobList> created = (*client)->GetJobs(query); created.ok()) {
    id = view::AiPlatformJobId(*created->store, key);
  }
  std::cout << "Job [" << id << "] submitted successfully.\n"
            << "Its status: cohort ai-platform jobs describe " << id << "\n"
            << "Its logs:   cohort ai-platform jobs stream-logs " << id << "\n"
            << "jobId: " << id << "\nstate: QUEUED\n"
            << std::flush;
  if (!flags.stream_logs) return kExitSucceeded;
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
  StatusOr<exec::JobKey> key = FindJob(client, flags);
  if (!key.ok()) return key.status();
  view::JobQuery query;
  query.namespace_name = key->namespace_name;
  query.names = {key->name};
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

// Until the job ends, as gcloud's stream-logs: its supervisor exits when the job is finished.
int StreamLogs(const AiJobFlags& flags) {
  StatusOr<std::unique_ptr<view::JobClient>> client = LocalClient();
  if (!client.ok()) return Fail(client.status());
  StatusOr<exec::JobKey> key = FindJob(**client, flags);
  if (!key.ok()) return Fail(key.status());
  view::LogRequest request;
  request.name = key->name;
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
  CLI::App* ai_platform = app.add_subcommand(
      "ai-platform", "gcloud ai-platform's forms: jobs, models, versions, predict");
  ai_platform->require_subcommand(1);
  CLI::App* jobs = ai_platform->add_subcommand("jobs", "AI Platform training jobs, run here");
  jobs->require_subcommand(1);

  CLI::App* submit = jobs->add_subcommand("submit", "Submit a job");
  submit->require_subcommand(1);
  auto submit_flags = std::make_shared<SubmitFlags>();
  AiJobFlags& training_flags = submit_flags->common;
  CLI::App* training = submit->add_subcommand(
      "training", "Start a training job in the background; words after -- go to the trainer");
  training->add_option("JOB", training_flags.name,
                       "the job's ID (default: the config's jobId, else its file name)");
  training->add_option("--config", training_flags.config,
                       "the job spec (gcloud's config.yaml); without it, the flags are the spec");
  training->add_flag("--stream-logs", training_flags.stream_logs,
                     "then print its logs until it finishes");
  AddImages(training, training_flags.image_flags);
  training->add_option("--region", training_flags.region,
                       "accepted for gcloud's sake; jobs run on this machine");
  for (const TrainingInputFlag& spec : kTrainingInputFlags) {
    const std::string flag = spec.flag;
    training->add_option_function<std::string>(
        flag,
        [submit_flags, flag](const std::string& value) {
          submit_flags->training_input[flag] = value;
        },
        spec.help);
  }
  AcceptArgumentsAfterSeparator(training, &submit_flags->user_args);
  AddNamespace(training, training_flags.namespace_flag);
  training->callback([submit_flags, &exit_code] { exit_code = Submit(*submit_flags); });

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
  AddAiPlatformModelCommands(ai_platform, exit_code);
  AddAiPlatformPredictCommand(ai_platform, exit_code);
}

}  // namespace cohort::cli
