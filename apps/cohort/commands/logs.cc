// `cohort logs [KIND] NAME|POD [--replica R] [-f] [--tail N] [--since D] [-p] [-c C]
// [--kubernetes]`: a job's replicas' logs, each line prefixed "[worker-0] " (one replica's with
// --replica), or a pod's log, through JobClient::Logs.
#include <iostream>

#include "apps/cohort/commands/command.h"
#include "apps/cohort/commands/commands.h"
#include "exec/log_selection.h"
#include "view/command_line.h"

namespace cohort::cli {
namespace {

struct LogsFlags {
  std::vector<std::string> arguments;  // [KIND] NAME, KIND/NAME, [pod] POD
  NamespaceFlag namespace_flag;
  std::string replica;
  std::string container;
  bool follow = false;
  bool previous = false;
  int tail = -1;
  std::string since;
  TargetFlags target;
};

int Logs(const LogsFlags& flags) {
  StatusOr<view::ResourceArguments> named = view::SplitResource(flags.arguments);
  if (!named.ok()) return Fail(kExitInvalidInput, named.status().message());
  if (named->names.size() != 1) {
    return Fail(kExitInvalidInput, "one job or pod only: " + JobArgumentsHelp(false) + " or POD");
  }
  view::LogRequest request;
  request.name = named->names.front();
  request.kind = named->kind;
  request.replica = flags.replica;
  request.container = flags.container;
  request.follow = flags.follow;
  request.previous = flags.previous;
  request.tail = flags.tail;
  if (!flags.since.empty()) {
    StatusOr<std::chrono::seconds> since = exec::ParseDuration(flags.since);
    if (!since.ok()) return Fail(kExitInvalidInput, since.status().message());
    request.since = *since;
  }
  StatusOr<std::unique_ptr<view::JobClient>> client = ClientFactory(flags.target)();
  if (!client.ok()) return Fail(client.status());
  return PrintLogs(**client, (*client)->Namespace(flags.namespace_flag.Given()), request);
}

}  // namespace

int PrintLogs(view::JobClient& client, const std::string& namespace_name,
              const view::LogRequest& request) {
  view::LogSink sink;
  sink.line = [](const std::string& replica, std::string_view line) {
    if (!replica.empty()) std::cout << "[" << replica << "] ";
    std::cout << line << "\n";
  };
  sink.flush = [] { std::cout.flush(); };
  Status read = client.Logs(namespace_name, request, sink);
  std::cout.flush();
  if (!read.ok()) return Fail(read);
  return kExitSucceeded;
}

void AddLogsCommand(CLI::App& app, int& exit_code) {
  auto flags = std::make_shared<LogsFlags>();
  CLI::App* logs =
      app.add_subcommand("logs", "Print a job's replica logs, or a pod's (job-worker-0)");
  logs->add_option("JOB", flags->arguments,
                   JobArgumentsHelp(false) + ", or a pod: one of its replicas (cohort get pods)")
      ->required();
  AddNamespace(logs, flags->namespace_flag);
  logs->add_option("--replica", flags->replica,
                   "one replica, e.g. worker-1 (default: all, prefixed)");
  logs->add_flag("-f,--follow", flags->follow, "keep printing until the job's supervisor exits");
  logs->add_option("--tail", flags->tail, "the last N lines of each replica");
  logs->add_option("--since", flags->since,
                   "the runs that wrote within DURATION (5s, 2m, 1h): log lines carry no time");
  logs->add_flag("-p,--previous", flags->previous, "the log of the run before the last restart");
  logs->add_option("-c,--container", flags->container,
                   "the container (the kind's: " + view::ContainerNames() + ")");
  AddKubernetes(logs, flags->target);
  logs->callback([flags, &exit_code] { exit_code = Logs(*flags); });
}

}  // namespace cohort::cli
