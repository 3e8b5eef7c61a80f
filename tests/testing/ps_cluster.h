// Test helpers for parameter-server tests: a loopback cluster of ps tasks and child processes
// that can be killed and restarted one at a time.
//
// PsCluster binds one listening socket per ps task before any process starts, so the ports are
// known and nobody else can take them. The first process of each ps adopts its socket; the test
// then closes its own copy, so that killing the ps really frees the port and a restarted ps binds
// it again from its endpoint, as a restarted pod would. Workers and the chief do not listen, so
// their endpoints are placeholders.
#pragma once

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "cluster/cluster_spec.h"
#include "net/socket.h"
#include "ps/parameter_server.h"
#include "ps/parameter_server_client.h"
#include "testing/multi_process.h"

namespace cohort::testing {

class Child;

inline constexpr char kTestSecret[] = "parameter server test secret";
inline constexpr char kTestJob[] = "ps-test-job";

class PsCluster {
 public:
  PsCluster(int num_ps, int num_workers) {
    for (int i = 0; i < num_ps; ++i) {
      auto listener = net::ListenTcp("127.0.0.1", 0, 128);
      if (!listener.ok()) std::abort();
      spec_.jobs["ps"].push_back("127.0.0.1:" + std::to_string(*net::LocalPort(listener->fd())));
      listeners_.push_back(listener->Release());
    }
    for (int i = 0; i < num_workers; ++i) spec_.jobs["worker"].push_back("127.0.0.1:1");
    spec_.jobs["chief"].push_back("127.0.0.1:1");
  }
  ~PsCluster() {
    for (int fd : listeners_) {
      if (fd >= 0) close(fd);
    }
  }

  const cluster::ClusterSpec& spec() const { return spec_; }

  // Server options for ps `index`: its bound socket until CloseHandedOver, then none (a restarted
  // server binds its endpoint's port itself).
  ps::ParameterServerOptions ServerOptions(int index) {
    ps::ParameterServerOptions options;
    options.job_name = kTestJob;
    options.cluster = spec_;
    options.ps_index = index;
    options.secret = net::JobSecret(kTestSecret);
    options.listening_fd = listeners_[index];
    options.log = [](const std::string& line) { Report("log: " + line); };
    return options;
  }

  // Closes the parent's copy of every socket already handed to a child.
  void CloseHandedOver(std::vector<int> indices) {
    for (int index : indices) {
      if (listeners_[index] >= 0) close(listeners_[index]);
      listeners_[index] = -1;
    }
  }

  // Forks a task of this cluster. The child closes every listening socket the test still holds
  // except `keep_fd` (a server's own): a forked child inherits them all, and a stray copy would
  // keep a killed server's port open.
  Child Spawn(const std::function<int()>& body, int keep_fd = -1) const;

  ps::ParameterServerClientOptions ClientOptions(const cluster::TaskId& self) const {
    ps::ParameterServerClientOptions options;
    options.cluster = spec_;
    options.connection.job_name = kTestJob;
    options.connection.self = self;
    options.connection.secret = net::JobSecret(kTestSecret);
    options.connection.retry_timeout = std::chrono::seconds(20);
    options.connection.request_timeout = std::chrono::seconds(30);
    options.connection.log = [](const std::string& line) { Report("log: " + line); };
    return options;
  }

 private:
  cluster::ClusterSpec spec_;
  std::vector<int> listeners_;
};

// A forked child process running `body`; its exit code is what body returns.
class Child {
 public:
  static Child Spawn(const std::function<int()>& body) {
    int fds[2];
    if (pipe(fds) != 0) std::abort();
    std::fflush(stdout);
    std::fflush(stderr);
    pid_t pid = fork();
    if (pid == 0) {
      close(fds[0]);
      ReportFd() = fds[1];
      int code = body();
      std::fflush(stdout);
      std::fflush(stderr);
      _exit(code);
    }
    close(fds[1]);
    fcntl(fds[0], F_SETFL, O_NONBLOCK);
    Child child;
    child.pid_ = pid;
    child.report_fd_ = fds[0];
    return child;
  }

  Child() = default;
  Child(Child&& other) noexcept { *this = std::move(other); }
  Child& operator=(Child&& other) noexcept {
    std::swap(pid_, other.pid_);
    std::swap(report_fd_, other.report_fd_);
    std::swap(done_, other.done_);
    std::swap(outcome_, other.outcome_);
    return *this;
  }
  // A child not awaited (a test that stopped at a failed ASSERT) is killed, never left running.
  ~Child() {
    if (pid_ > 0 && !done_) Kill();
    if (report_fd_ >= 0) close(report_fd_);
  }

  pid_t pid() const { return pid_; }

  // Everything the child reported so far (also kept for Await).
  const std::string& Report() {
    char buffer[4096];
    ssize_t got;
    while (report_fd_ >= 0 && (got = read(report_fd_, buffer, sizeof(buffer))) > 0) {
      outcome_.report.append(buffer, static_cast<size_t>(got));
    }
    return outcome_.report;
  }

  // Waits until the report contains `text`, the child exits, or `limit` passes.
  bool WaitForReport(const std::string& text, std::chrono::milliseconds limit) {
    auto deadline = std::chrono::steady_clock::now() + limit;
    while (std::chrono::steady_clock::now() < deadline) {
      if (Report().find(text) != std::string::npos) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return false;
  }

  void Kill() {
    kill(pid_, SIGKILL);
    int status = 0;
    waitpid(pid_, &status, 0);
    Report();
    outcome_.signal = SIGKILL;
    done_ = true;
  }

  // Waits for the child to exit, killing it when `limit` passes first.
  ChildOutcome Await(std::chrono::milliseconds limit) {
    auto deadline = std::chrono::steady_clock::now() + limit;
    while (!done_) {
      int status = 0;
      if (waitpid(pid_, &status, WNOHANG) == pid_) {
        if (WIFEXITED(status)) outcome_.exit_code = WEXITSTATUS(status);
        if (WIFSIGNALED(status)) outcome_.signal = WTERMSIG(status);
        done_ = true;
        break;
      }
      if (std::chrono::steady_clock::now() > deadline) {
        Kill();
        outcome_.timed_out = true;
        break;
      }
      Report();
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    Report();
    if (report_fd_ >= 0) close(report_fd_);
    report_fd_ = -1;
    return outcome_;
  }

 private:
  pid_t pid_ = -1;
  int report_fd_ = -1;
  bool done_ = false;
  ChildOutcome outcome_;
};

// "exit 0, report: ..." for failure messages.
inline std::string Describe(const ChildOutcome& outcome) {
  return "exit " + std::to_string(outcome.exit_code) +
         (outcome.signal ? ", signal " + std::to_string(outcome.signal) : "") +
         (outcome.timed_out ? ", TIMED OUT" : "") + "\n" + outcome.report;
}

inline Child PsCluster::Spawn(const std::function<int()>& body, int keep_fd) const {
  std::vector<int> open_fds;
  for (int fd : listeners_) {
    if (fd >= 0 && fd != keep_fd) open_fds.push_back(fd);
  }
  return Child::Spawn([open_fds, body] {
    for (int fd : open_fds) close(fd);
    return body();
  });
}

// Runs a parameter server until the job ends; the exit code says how it ended.
inline int ServeUntilShutdown(ps::ParameterServerOptions options) {
  auto server = ps::ParameterServer::Start(std::move(options));
  if (!server.ok()) {
    Report("start failed: " + server.status().ToString());
    return 2;
  }
  Report("serving; restored step " + std::to_string((*server)->restored_step()));
  Status waited = (*server)->Wait(net::Deadline::After(std::chrono::seconds(120)));
  (*server)->Stop();
  if (!waited.ok()) {
    Report("wait failed: " + waited.ToString());
    return 3;
  }
  return 0;
}

}  // namespace cohort::testing
