// run_on_hosts: runs one command per emulated host (tests/testing/emulated_cluster.h), for
// benchmark scripts and by hand, and removes the hosts when the commands end.
//
//   run_on_hosts [--rate BITS_PER_S] [--alias I=NAME]... [--timeout S] -- CMD_0 CMD_1 ...
//
// Command i runs with /bin/sh on host-i (address 10.77.0.<i+1>; every host resolves host-<j> and
// the aliases), in the caller's working directory and environment, all at once. When all have
// ended, each one's output is printed under a line "== host-<i> (exit N)". Exit status: 0 when
// every command exited 0; 1 when one did not, ran past --timeout (then all are killed) or this
// program was interrupted; 2 for bad arguments; 3 when the hosts could not be set up (the message
// names what is missing or what failed). SIGINT, SIGTERM and SIGHUP stop the commands and remove
// the hosts; after a SIGKILL, the next run sweeps what was left.
#include <signal.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "testing/emulated_cluster.h"

namespace {

using cohort::testing::EmulatedCluster;
using cohort::testing::EmulatedClusterOptions;
using cohort::testing::HostProcess;

volatile sig_atomic_t interrupted = 0;

void OnSignal(int) { interrupted = 1; }

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "run_on_hosts: runs command i on emulated host-i (network, PID and mount "
      "namespaces on a bridge; needs root, ip, tc and nft) and removes the hosts after",
      "run_on_hosts"};
  uint64_t rate = EmulatedClusterOptions().rate_bits_per_second;
  std::vector<std::string> aliases;
  double timeout_s = 3600;
  std::vector<std::string> commands;
  app.add_option("--rate", rate, "each link's rate in each direction, bits per second")
      ->capture_default_str();
  app.add_option("--alias", aliases, "I=NAME: host-I is also called NAME (repeatable)");
  app.add_option("--timeout", timeout_s, "seconds the commands may run")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("commands", commands, "one shell command per host")->required();
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& error) {
    return app.exit(error) == 0 ? 0 : 2;
  }

  EmulatedClusterOptions options;
  options.hosts = static_cast<int>(commands.size());
  options.rate_bits_per_second = rate;
  for (const std::string& alias : aliases) {
    const size_t equals = alias.find('=');
    int host = -1;
    try {
      host = equals == std::string::npos ? -1 : std::stoi(alias.substr(0, equals));
    } catch (const std::exception&) {
    }
    if (host < 0) {
      std::fprintf(stderr, "run_on_hosts: --alias %s: expected I=NAME\n", alias.c_str());
      return 2;
    }
    options.aliases[host].push_back(alias.substr(equals + 1));
  }

  for (int signal : {SIGINT, SIGTERM, SIGHUP}) {
    struct sigaction action {};
    action.sa_handler = OnSignal;
    sigaction(signal, &action, nullptr);
  }
  auto cluster = EmulatedCluster::Create(options);
  if (!cluster.ok()) {
    std::fprintf(stderr, "run_on_hosts: %s\n", cluster.status().ToString().c_str());
    return cluster.status().code() == cohort::Status::Code::kInvalidArgument ? 2 : 3;
  }
  std::vector<std::unique_ptr<HostProcess>> processes;
  for (int host = 0; host < options.hosts; ++host) {
    auto process = (*cluster)->Start(host, commands[host]);
    if (!process.ok()) {
      std::fprintf(stderr, "run_on_hosts: %s\n", process.status().ToString().c_str());
      return 3;
    }
    processes.push_back(std::move(process).value());
  }

  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  bool all_ended = false;
  while (!all_ended && !interrupted && std::chrono::steady_clock::now() < deadline) {
    all_ended = true;
    for (const auto& process : processes) all_ended = all_ended && !process->Running();
    if (!all_ended) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  if (!all_ended) {
    std::fprintf(stderr, "run_on_hosts: %s; stopping every command\n",
                 interrupted ? "interrupted" : "the commands ran past --timeout");
    for (const auto& process : processes) process->Signal(SIGKILL);
  }
  bool all_succeeded = all_ended;
  for (int host = 0; host < options.hosts; ++host) {
    const int exit_code = processes[host]->Wait(std::chrono::seconds(10));
    all_succeeded = all_succeeded && exit_code == 0;
    std::printf("== %s (exit %d)\n%s", (*cluster)->HostName(host).c_str(), exit_code,
                processes[host]->Output().c_str());
  }
  return all_succeeded ? 0 : 1;
}
