// Test helpers: a cluster of processes on loopback.
//
// LocalCluster binds one listening socket per task on a free loopback port before any process
// starts, so that no other program can take the ports between choosing and using them; each
// forked task inherits its own socket (TransportOptions::listening_fd). RunProcesses forks one
// process per rank and collects what each reported through a pipe, killing any process that
// outlives the time limit, so that a hang fails the test instead of stalling it.
#pragma once

#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "cluster/cluster_spec.h"
#include "net/socket.h"

namespace cohort::testing {

class LocalCluster {
 public:
  // `workers` worker tasks, preceded by a chief when `with_chief`.
  LocalCluster(int workers, bool with_chief = false) {
    if (with_chief) tasks_.push_back({"chief", 0});
    for (int i = 0; i < workers; ++i) tasks_.push_back({"worker", i});
    for (const cluster::TaskId& task : tasks_) {
      auto listener = net::ListenTcp("127.0.0.1", 0, 128);
      if (!listener.ok()) {
        std::fprintf(stderr, "LocalCluster: %s\n", listener.status().ToString().c_str());
        std::abort();
      }
      uint16_t port = *net::LocalPort(listener->fd());
      spec_.jobs[task.type].push_back("127.0.0.1:" + std::to_string(port));
      listeners_.push_back(listener->Release());
    }
  }
  ~LocalCluster() {
    for (int fd : listeners_) {
      if (fd >= 0) close(fd);
    }
  }

  const cluster::ClusterSpec& spec() const { return spec_; }
  const cluster::TaskId& task(int rank) const { return tasks_[rank]; }
  int size() const { return static_cast<int>(tasks_.size()); }
  std::string endpoint(int rank) const { return spec_.Endpoint(tasks_[rank]); }

  // The listening socket of `rank`, to hand to that rank's transport. In a forked child, call it
  // once; CloseOthers() drops the sockets of the other ranks.
  int TakeListener(int rank) {
    int fd = listeners_[rank];
    listeners_[rank] = -1;
    return fd;
  }
  void CloseOthers(int rank) {
    for (int i = 0; i < size(); ++i) {
      if (i != rank && listeners_[i] >= 0) {
        close(listeners_[i]);
        listeners_[i] = -1;
      }
    }
  }

 private:
  std::vector<cluster::TaskId> tasks_;
  cluster::ClusterSpec spec_;
  std::vector<int> listeners_;
};

// What a child process ended with.
struct ChildOutcome {
  int exit_code = -1;  // -1 when killed by a signal
  int signal = 0;      // the signal that ended it, or 0
  bool timed_out = false;
  std::string report;  // lines the child wrote with Report()
};

// The pipe a child writes its report into (set in each child by RunProcesses).
inline int& ReportFd() {
  static int fd = -1;
  return fd;
}

// Appends one line to this child's report. Short writes to a pipe are atomic.
inline void Report(const std::string& line) {
  std::string text = line + "\n";
  [[maybe_unused]] ssize_t ignored = write(ReportFd(), text.data(), text.size());
}

// Forks `count` processes running body(rank), each exiting with what body returns. `on_started`
// runs in the parent once all have been forked (to signal or kill one of them, for example);
// it receives their pids. Waits up to `limit`, then kills what is left.
inline std::vector<ChildOutcome> RunProcesses(
    int count, const std::function<int(int rank)>& body, std::chrono::milliseconds limit,
    const std::function<void(const std::vector<pid_t>&, const std::vector<int>& report_fds)>&
        on_started = nullptr) {
  std::vector<pid_t> pids(count);
  std::vector<int> report_fds(count);
  std::fflush(stdout);
  std::fflush(stderr);
  for (int rank = 0; rank < count; ++rank) {
    int fds[2];
    if (pipe(fds) != 0) std::abort();
    pid_t pid = fork();
    if (pid == 0) {
      close(fds[0]);
      ReportFd() = fds[1];
      int code = body(rank);
      std::fflush(stdout);
      std::fflush(stderr);
      _exit(code);
    }
    close(fds[1]);
    fcntl(fds[0], F_SETFL, O_NONBLOCK);
    pids[rank] = pid;
    report_fds[rank] = fds[0];
  }
  if (on_started) on_started(pids, report_fds);

  std::vector<ChildOutcome> outcomes(count);
  std::vector<bool> finished(count, false);
  auto deadline = std::chrono::steady_clock::now() + limit;
  auto drain = [&](int rank) {
    char buffer[4096];
    ssize_t got;
    while ((got = read(report_fds[rank], buffer, sizeof(buffer))) > 0) {
      outcomes[rank].report.append(buffer, static_cast<size_t>(got));
    }
  };
  int remaining = count;
  while (remaining > 0) {
    for (int rank = 0; rank < count; ++rank) {
      if (finished[rank]) continue;
      drain(rank);
      int status = 0;
      if (waitpid(pids[rank], &status, WNOHANG) == pids[rank]) {
        finished[rank] = true;
        --remaining;
        drain(rank);
        if (WIFEXITED(status)) outcomes[rank].exit_code = WEXITSTATUS(status);
        if (WIFSIGNALED(status)) outcomes[rank].signal = WTERMSIG(status);
      }
    }
    if (remaining == 0) break;
    if (std::chrono::steady_clock::now() > deadline) {
      for (int rank = 0; rank < count; ++rank) {
        if (finished[rank]) continue;
        kill(pids[rank], SIGKILL);
        int status = 0;
        waitpid(pids[rank], &status, 0);
        drain(rank);
        outcomes[rank].timed_out = true;
        outcomes[rank].signal = SIGKILL;
        finished[rank] = true;
      }
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  for (int fd : report_fds) close(fd);
  return outcomes;
}

// "rank 1: exit 0, report: ..." for failure messages.
inline std::string Describe(const std::vector<ChildOutcome>& outcomes) {
  std::string text;
  for (size_t rank = 0; rank < outcomes.size(); ++rank) {
    const ChildOutcome& outcome = outcomes[rank];
    text += "rank " + std::to_string(rank) + ": exit " + std::to_string(outcome.exit_code) +
            (outcome.signal ? ", signal " + std::to_string(outcome.signal) : "") +
            (outcome.timed_out ? ", TIMED OUT" : "") + "\n" + outcome.report;
  }
  return text;
}

// In the parent (an on_started callback of RunProcesses): waits, at most 20 s, until the child
// whose report pipe is `report_fd` reports something, e.g. that it is under way. The bytes read
// are not kept in its report.
inline void WaitForFirstReport(int report_fd) {
  char buffer[64];
  for (int i = 0; i < 4000; ++i) {
    if (read(report_fd, buffer, sizeof(buffer)) > 0) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

// Monotonic time in seconds, comparable between processes on one host.
inline double MonotonicSeconds() {
  timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  return static_cast<double>(now.tv_sec) + static_cast<double>(now.tv_nsec) * 1e-9;
}

}  // namespace cohort::testing
