// `cohort get [KINDS|pods] [NAME...] [-n NS | -A] [-o FORMAT] [-w] [--kubernetes]`: jobs as
// NAME STATE AGE (the read model's table, view/job_view.h), or their replicas as pods, or their
// objects as -o json|yaml|jsonpath prints them; with -w, a row for each change. KINDS is a kind's
// plural (or any form view::SplitResource reads): without one every kind is listed.
#include <iostream>

#include "apps/cohort/commands/command.h"
#include "apps/cohort/commands/commands.h"
#include "apps/cohort/commands/output.h"
#include "view/command_line.h"
#include "view/job_view.h"

namespace cohort::cli {
namespace {

struct GetFlags {
  std::vector<std::string> arguments;
  NamespaceFlag namespace_flag;
  bool all_namespaces = false;
  std::string output;
  bool watch = false;
  double timeout_seconds = 3600;
  TargetFlags target;
};

std::chrono::milliseconds WatchTimeout(const GetFlags& flags) {
  return std::chrono::milliseconds(static_cast<int64_t>(flags.timeout_seconds * 1000));
}

int WatchTimedOut() { return Fail(kExitError, "watch timed out; the jobs are still running"); }

int GetPods(view::JobClient& client, const std::vector<std::string>& names, const GetFlags& flags,
            const view::OutputFormat& format) {
  using Kind = view::OutputFormat::Kind;
  const std::string namespace_name = client.Namespace(flags.namespace_flag.Given());
  view::JobQuery query;
  query.namespace_name = namespace_name;
  query.all_namespaces = flags.all_namespaces;
  StatusOr<view::PodList> pods = client.GetPods(query, names);
  if (!pods.ok()) return Fail(pods.status());
  if (IsObjectFormat(format))
    return PrintObject(format, ObjectOrList(pods->objects, names.size() == 1));
  if (pods->objects.empty()) {
    PrintNoResourcesFound(namespace_name, flags.all_namespaces);
    return kExitSucceeded;
  }
  if (format.kind == Kind::kName) {
    for (const nlohmann::json& pod : pods->objects) {
      std::cout << "pod/" << pod["metadata"].value("name", "") << "\n";
    }
    return kExitSucceeded;
  }
  const bool wide = format.kind == Kind::kWide;
  std::vector<size_t> every(pods->objects.size());
  for (size_t i = 0; i < every.size(); ++i) every[i] = i;
  std::cout << pods->table(every, wide, flags.all_namespaces) << std::flush;
  if (!flags.watch) return kExitSucceeded;
  std::vector<exec::JobKey> jobs;
  for (const exec::JobKey& key : pods->jobs) {
    if (jobs.empty() || jobs.back().ToString() != key.ToString()) jobs.push_back(key);
  }
  StatusOr<bool> done = client.Watch(jobs, WatchTimeout(flags), [&](const view::JobList& changed) {
    std::vector<size_t> of_job;
    for (size_t i = 0; i < pods->jobs.size(); ++i) {
      if (pods->jobs[i].ToString() == changed.keys.front().ToString()) of_job.push_back(i);
    }
    std::cout << WithoutHeader(pods->table(of_job, wide, flags.all_namespaces)) << std::flush;
  });
  if (!done.ok()) return Fail(done.status());
  return *done ? kExitSucceeded : WatchTimedOut();
}

int Get(const GetFlags& flags) {
  using Kind = view::OutputFormat::Kind;
  StatusOr<view::OutputFormat> format = view::ParseOutputFormat(flags.output);
  if (!format.ok()) return Fail(kExitInvalidInput, format.status().message());
  StatusOr<view::ResourceArguments> resource = view::SplitResource(flags.arguments);
  if (!resource.ok()) return Fail(kExitInvalidInput, resource.status().message());
  StatusOr<std::unique_ptr<view::JobClient>> client = ClientFactory(flags.target)();
  if (!client.ok()) return Fail(client.status());
  if (flags.watch) {
    if (Status watchable = (*client)->CanWatch(); !watchable.ok()) return Fail(watchable);
  }
  if (resource->resource == view::Resource::kPod) {
    return GetPods(**client, resource->names, flags, *format);
  }
  const std::vector<std::string>& names = resource->names;
  const bool wide = format->kind == Kind::kWide;
  view::JobQuery query;
  query.namespace_name = (*client)->Namespace(flags.namespace_flag.Given());
  query.all_namespaces = flags.all_namespaces;
  query.names = names;
  query.kind = resource->kind;
  query.objects = IsObjectFormat(*format);
  query.detail = wide ? view::JobDetail::kReplicas : view::JobDetail::kStatus;
  StatusOr<view::JobList> jobs = (*client)->GetJobs(query);
  if (!jobs.ok()) return Fail(jobs.status());
  PrintWarnings(jobs->warnings);
  if (query.objects) return PrintObject(*format, ObjectOrList(jobs->objects, names.size() == 1));
  if (jobs->keys.empty()) {
    PrintNoResourcesFound(query.namespace_name, flags.all_namespaces);
    return kExitSucceeded;
  }
  if (format->kind == Kind::kName) {
    for (const exec::JobKey& key : jobs->keys) {
      std::cout << view::ResourceName(*jobs->store, key) << "/" << key.name << "\n";
    }
    return kExitSucceeded;
  }
  std::cout << view::JobTable(*jobs->store, jobs->keys, wide, flags.all_namespaces) << std::flush;
  if (!flags.watch) return kExitSucceeded;
  StatusOr<bool> done =
      (*client)->Watch(jobs->keys, WatchTimeout(flags), [&](const view::JobList& changed) {
        std::cout << WithoutHeader(
                         view::JobTable(*changed.store, changed.keys, wide, flags.all_namespaces))
                  << std::flush;
      });
  if (!done.ok()) return Fail(done.status());
  return *done ? kExitSucceeded : WatchTimedOut();
}

}  // namespace

void AddGetCommand(CLI::App& app, int& exit_code) {
  auto flags = std::make_shared<GetFlags>();
  CLI::App* get = app.add_subcommand(
      "get", "List jobs (NAME STATE AGE) or show some; `get pods` lists their replicas as pods");
  get->add_option("ARGS", flags->arguments,
                  "[" + view::JobTypeChoices("|", true) +
                      "|pods] [NAME...] (default: all jobs of every kind of the namespace)");
  AddNamespace(get, flags->namespace_flag, "the jobs' namespace");
  get->add_flag("-A,--all-namespaces", flags->all_namespaces, "list jobs of every namespace");
  get->add_option("-o,--output", flags->output, "name, wide, json, yaml or jsonpath=TEMPLATE");
  get->add_flag("-w,--watch", flags->watch,
                "then print a row on each change, until the jobs finish (or --timeout)");
  get->add_option("--timeout", flags->timeout_seconds, "seconds to watch at most")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  AddKubernetes(get, flags->target);
  get->callback([flags, &exit_code] { exit_code = Get(*flags); });
}

}  // namespace cohort::cli
