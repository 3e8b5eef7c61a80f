#include "ui/ui_command.h"

#include <pthread.h>
#include <signal.h>

#include <cstring>

#include "base/file.h"
#include "ui/dashboard_server.h"

namespace cohort::ui {
namespace {

constexpr size_t kMaxTokenFileBytes = 4096;

StatusOr<std::string> TokenFromFile(const std::string& path) {
  StatusOr<std::string> contents = ReadWholeFile(path, kMaxTokenFileBytes);
  if (!contents.ok())
    return Status::InvalidArgument("--token-file: " + contents.status().message());
  std::string token = contents->substr(0, contents->find('\n'));
  while (!token.empty() && (token.back() == '\r' || token.back() == ' ')) token.pop_back();
  if (token.empty())
    return Status::InvalidArgument("--token-file " + path + ": its first line is empty");
  return token;
}

}  // namespace

Status ServeDashboard(const UiFlags& flags, const DashboardJobs& jobs, std::ostream& out) {
  if (!flags.token.empty() && !flags.token_file.empty()) {
    return Status::InvalidArgument("give --token or --token-file, not both");
  }
  ServerOptions options;
  options.address = flags.address;
  options.port = flags.port;
  options.jobs = jobs.client;
  options.home = jobs.home;
  options.token = flags.token;
  if (!flags.token_file.empty()) {
    StatusOr<std::string> token = TokenFromFile(flags.token_file);
    if (!token.ok()) return token.status();
    options.token = *token;
  }
  // The signals are taken by sigwait below, on this thread; the server's threads inherit the mask.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  StatusOr<std::unique_ptr<DashboardServer>> server = DashboardServer::Start(options);
  if (!server.ok()) return server.status();
  out << "cohort ui: serving " << jobs.description << " at " << (*server)->Url();
  if (!(*server)->policy().loopback) out << " (open it with ?token=TOKEN)";
  out << std::endl;
  int received = 0;
  sigwait(&signals, &received);
  out << "cohort ui: stopping (" << strsignal(received) << ")" << std::endl;
  (*server)->Stop();
  return Status::OK();
}

}  // namespace cohort::ui
