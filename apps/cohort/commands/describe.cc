// `cohort describe [KIND] NAME... [-n NS] [--kubernetes]` (KIND: tfjob, pytorchjob...): each job's
// spec, status with conditions, replicas (a cluster's: its pods' phases, restarts and exit codes)
// and events, as the read model writes them (view::DescribeJob).
#include <iostream>

#include "apps/cohort/commands/command.h"
#include "apps/cohort/commands/commands.h"
#include "view/job_view.h"

namespace cohort::cli {
namespace {

struct DescribeFlags {
  std::vector<std::string> arguments;
  NamespaceFlag namespace_flag;
  TargetFlags target;
};

int Describe(const DescribeFlags& flags) {
  StatusOr<JobArguments> job_arguments = JobNames(flags.arguments);
  if (!job_arguments.ok()) return Fail(kExitInvalidInput, job_arguments.status().message());
  const std::vector<std::string>* names = &job_arguments->names;
  StatusOr<std::unique_ptr<view::JobClient>> client = ClientFactory(flags.target)();
  if (!client.ok()) return Fail(client.status());
  const std::string namespace_name = (*client)->Namespace(flags.namespace_flag.Given());
  for (const std::string& name : *names) {
    view::JobQuery query;
    query.namespace_name = namespace_name;
    query.names = {name};
    query.kind = job_arguments->kind;
    query.detail = view::JobDetail::kEvents;
    StatusOr<view::JobList> job = (*client)->GetJobs(query);
    if (!job.ok()) return Fail(job.status());
    StatusOr<std::string> text = view::DescribeJob(*job->store, {namespace_name, name});
    if (!text.ok()) return Fail(text.status());
    std::cout << (name == names->front() ? "" : "\n\n") << *text;
  }
  return kExitSucceeded;
}

}  // namespace

void AddDescribeCommand(CLI::App& app, int& exit_code) {
  auto flags = std::make_shared<DescribeFlags>();
  CLI::App* describe =
      app.add_subcommand("describe", "Show a job's spec, status, replicas and events");
  describe->add_option("JOB", flags->arguments, JobArgumentsHelp(true))->required();
  AddNamespace(describe, flags->namespace_flag);
  AddKubernetes(describe, flags->target);
  describe->callback([flags, &exit_code] { exit_code = Describe(*flags); });
}

}  // namespace cohort::cli
