#include "kube/client/exec_credential.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <nlohmann/json.hpp>
#include <thread>
#include <vector>

#include "base/file.h"
#include "kube/client/base64.h"

extern char** environ;

namespace cohort::kube {
namespace {

using std::chrono::steady_clock;

std::string PluginName(const ExecPluginConfig& plugin) {
  return "exec credential plugin \"" + plugin.command + "\" of user \"" + plugin.user_name + "\"";
}

std::string ExecInfo(const ExecPluginConfig& plugin, const ClusterConfig& cluster) {
  nlohmann::json info = {{"apiVersion", plugin.api_version},
                         {"kind", "ExecCredential"},
                         {"spec", {{"interactive", false}}}};
  if (plugin.provide_cluster_info) {
    nlohmann::json described = {{"server", cluster.server}};
    if (!cluster.tls_server_name.empty()) described["tls-server-name"] = cluster.tls_server_name;
    if (cluster.insecure_skip_tls_verify) described["insecure-skip-tls-verify"] = true;
    if (!cluster.certificate_authority_pem.empty()) {
      described["certificate-authority-data"] = EncodeBase64(cluster.certificate_authority_pem);
    }
    info["spec"]["cluster"] = described;
  }
  return info.dump();
}

// Our environment without the names `plugin` sets, then the plugin's entries.
std::vector<std::string> PluginEnvironment(const ExecPluginConfig& plugin,
                                           const ClusterConfig& cluster) {
  std::vector<std::pair<std::string, std::string>> overrides = plugin.env;
  overrides.emplace_back("KUBERNETES_EXEC_INFO", ExecInfo(plugin, cluster));
  std::vector<std::string> environment;
  for (char** entry = environ; *entry != nullptr; ++entry) {
    std::string text(*entry);
    std::string name = text.substr(0, text.find('='));
    bool overridden = false;
    for (const auto& [key, value] : overrides) overridden = overridden || key == name;
    if (!overridden) environment.push_back(std::move(text));
  }
  for (const auto& [key, value] : overrides) environment.push_back(key + "=" + value);
  return environment;
}

struct PluginRun {
  int exit_code = -1;  // 128 + N when signal N ended it
  std::string output;
  std::string errors;
  bool timed_out = false;
  bool too_much_output = false;
  int exec_error = 0;  // errno of an exec that failed: the command is missing or not runnable
};

StatusOr<PluginRun> Run(const ExecPluginConfig& plugin, const ClusterConfig& cluster,
                        std::chrono::milliseconds timeout) {
  std::vector<std::string> arguments = {plugin.command};
  arguments.insert(arguments.end(), plugin.args.begin(), plugin.args.end());
  std::vector<std::string> environment = PluginEnvironment(plugin, cluster);
  std::vector<char*> argv, envp;
  for (std::string& argument : arguments) argv.push_back(argument.data());
  argv.push_back(nullptr);
  for (std::string& entry : environment) envp.push_back(entry.data());
  envp.push_back(nullptr);

  int out_pipe[2], err_pipe[2];
  if (pipe2(out_pipe, O_CLOEXEC) != 0) {
    return Status::IOError("cannot create a pipe for " + PluginName(plugin) + ": " +
                           ErrnoMessage(errno));
  }
  if (pipe2(err_pipe, O_CLOEXEC) != 0) {
    int error = errno;
    close(out_pipe[0]);
    close(out_pipe[1]);
    return Status::IOError("cannot create a pipe for " + PluginName(plugin) + ": " +
                           ErrnoMessage(error));
  }
  // Closed by a successful exec; carries errno when the exec fails.
  int exec_pipe[2];
  if (pipe2(exec_pipe, O_CLOEXEC) != 0) {
    int error = errno;
    for (int fd : {out_pipe[0], out_pipe[1], err_pipe[0], err_pipe[1]}) close(fd);
    return Status::IOError("cannot create a pipe for " + PluginName(plugin) + ": " +
                           ErrnoMessage(error));
  }
  int null_input = open("/dev/null", O_RDONLY | O_CLOEXEC);
  pid_t pid = fork();
  if (pid == 0) {
    // Its own process group, so that a timeout kills whatever the plugin started too.
    setpgid(0, 0);
    if (null_input >= 0) dup2(null_input, 0);
    dup2(out_pipe[1], 1);
    dup2(err_pipe[1], 2);
    execvpe(argv[0], argv.data(), envp.data());
    int error = errno;
    (void)!write(exec_pipe[1], &error, sizeof(error));
    _exit(127);
  }
  int fork_error = errno;
  if (null_input >= 0) close(null_input);
  close(out_pipe[1]);
  close(err_pipe[1]);
  close(exec_pipe[1]);
  if (pid < 0) {
    close(out_pipe[0]);
    close(err_pipe[0]);
    close(exec_pipe[0]);
    return Status::IOError("cannot start " + PluginName(plugin) + ": " + ErrnoMessage(fork_error));
  }
  setpgid(pid, pid);

  PluginRun run;
  steady_clock::time_point deadline = steady_clock::now() + timeout;
  // Did the exec succeed? Its answer comes at once; the deadline bounds the wait all the same.
  pollfd exec_fd = {exec_pipe[0], POLLIN, 0};
  int exec_error = 0;
  if (poll(&exec_fd, 1, static_cast<int>(timeout.count()) + 1) > 0 &&
      read(exec_pipe[0], &exec_error, sizeof(exec_error)) == sizeof(exec_error)) {
    run.exec_error = exec_error;
  }
  close(exec_pipe[0]);
  if (run.exec_error != 0) {
    close(out_pipe[0]);
    close(err_pipe[0]);
    int wait_status = 0;
    waitpid(pid, &wait_status, 0);  // it has called _exit already
    return run;
  }
  pollfd fds[2] = {{out_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0}};
  std::string* buffers[2] = {&run.output, &run.errors};
  int open_pipes = 2;
  while (open_pipes > 0 && !run.too_much_output) {
    auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - steady_clock::now());
    if (left.count() <= 0) {
      run.timed_out = true;
      break;
    }
    int ready = poll(fds, 2, static_cast<int>(left.count()) + 1);
    if (ready < 0 && errno == EINTR) continue;
    if (ready < 0) break;
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || fds[i].revents == 0) continue;
      char chunk[4096];
      ssize_t n = read(fds[i].fd, chunk, sizeof(chunk));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        close(fds[i].fd);
        fds[i].fd = -1;
        --open_pipes;
        continue;
      }
      buffers[i]->append(chunk, static_cast<size_t>(n));
      if (buffers[i]->size() > kMaxPluginOutputBytes) run.too_much_output = true;
    }
  }
  for (pollfd& fd : fds) {
    if (fd.fd >= 0) close(fd.fd);
  }
  // Both pipes are closed: the plugin is done or has handed them on; give it until the deadline
  // to exit.
  int wait_status = 0;
  pid_t reaped = 0;
  while (!run.timed_out && !run.too_much_output) {
    reaped = waitpid(pid, &wait_status, WNOHANG);
    if (reaped != 0) break;
    if (steady_clock::now() >= deadline) {
      run.timed_out = true;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  if (reaped == 0) {
    kill(-pid, SIGKILL);
    waitpid(pid, &wait_status, 0);
  }
  if (WIFEXITED(wait_status)) run.exit_code = WEXITSTATUS(wait_status);
  if (WIFSIGNALED(wait_status)) run.exit_code = 128 + WTERMSIG(wait_status);
  return run;
}

std::string Trimmed(std::string text, size_t limit = 4096) {
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  if (text.size() > limit) text = "..." + text.substr(text.size() - limit);
  return text;
}

}  // namespace

StatusOr<ExecCredential> ParseExecCredential(const std::string& output,
                                             const ExecPluginConfig& plugin) {
  nlohmann::json document = nlohmann::json::parse(output, nullptr, /*allow_exceptions=*/false);
  auto invalid = [&](const std::string& problem) {
    return Status::FailedPrecondition(PluginName(plugin) +
                                      " printed no valid ExecCredential: " + problem);
  };
  if (document.is_discarded() || !document.is_object()) return invalid("its output is not JSON");
  if (document.value("kind", "") != "ExecCredential") return invalid("kind is not ExecCredential");
  if (document.value("apiVersion", "") != plugin.api_version) {
    return invalid("apiVersion is \"" + document.value("apiVersion", "") + "\", not the \"" +
                   plugin.api_version + "\" it was asked for");
  }
  const nlohmann::json& status = document["status"];
  if (!status.is_object()) return invalid("it has no status");
  ExecCredential credential;
  auto text = [&](const char* key) -> std::string {
    auto found = status.find(key);
    return found != status.end() && found->is_string() ? found->get<std::string>() : "";
  };
  credential.token = text("token");
  credential.client_certificate_pem = text("clientCertificateData");
  credential.client_key_pem = text("clientKeyData");
  if (credential.client_certificate_pem.empty() != credential.client_key_pem.empty()) {
    return invalid("status.clientCertificateData and status.clientKeyData must come together");
  }
  if (credential.token.empty() && credential.client_certificate_pem.empty()) {
    return invalid("status has neither a token nor clientCertificateData");
  }
  std::string expiration = text("expirationTimestamp");
  if (!expiration.empty()) {
    credential.expiration = ParseTime(expiration);
    if (!credential.expiration) {
      return invalid("status.expirationTimestamp \"" + expiration + "\" is not an RFC 3339 time");
    }
  }
  return credential;
}

StatusOr<ExecCredential> RunExecPlugin(const ExecPluginConfig& plugin, const ClusterConfig& cluster,
                                       std::chrono::milliseconds timeout) {
  StatusOr<PluginRun> run = Run(plugin, cluster, timeout);
  if (!run.ok()) return run.status();
  if (run->exec_error != 0) {
    std::string hint = plugin.install_hint.empty() ? "" : "\n" + plugin.install_hint;
    return Status::FailedPrecondition(
        "cannot run " + PluginName(plugin) + ": " + ErrnoMessage(run->exec_error) +
        (run->exec_error == ENOENT ? " (not found on PATH)" : "") + hint);
  }
  std::string errors = Trimmed(run->errors);
  std::string said = errors.empty() ? "" : "; its standard error: " + errors;
  if (run->timed_out) {
    return Status::DeadlineExceeded(PluginName(plugin) + " did not finish within " +
                                    std::to_string(timeout.count()) + " ms and was killed" + said);
  }
  if (run->too_much_output) {
    return Status::FailedPrecondition(PluginName(plugin) + " printed more than " +
                                      std::to_string(kMaxPluginOutputBytes) + " bytes");
  }
  if (run->exit_code != 0) {
    return Status::FailedPrecondition(PluginName(plugin) + " failed with exit code " +
                                      std::to_string(run->exit_code) + said);
  }
  return ParseExecCredential(run->output, plugin);
}

}  // namespace cohort::kube
