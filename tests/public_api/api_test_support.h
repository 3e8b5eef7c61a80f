// What the public API's tests share. They include only include/cohort (and libtorch, gtest and
// the system): the API is tested as its users see it.
//
// Workers(n) forks n processes, each a task of one TF_CONFIG cluster on loopback ports (Job: tasks
// of any types, ps and evaluator too), runs the body in each and collects what each reported; a
// process still running after the limit is killed, so a hang fails the test instead of stalling it.
#pragma once

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "cohort/cluster.h"
#include "cohort/strategy.h"

namespace cohort::api_testing {

// Loopback ports that were free a moment ago (the kernel gives each listener its own).
inline std::vector<int> FreePorts(int count) {
  std::vector<int> sockets, ports;
  for (int i = 0; i < count; ++i) {
    const int fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    address.sin_port = 0;
    socklen_t length = sizeof(address);
    if (fd < 0 || bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0 ||
        getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
      std::perror("FreePorts");
      std::abort();
    }
    sockets.push_back(fd);
    ports.push_back(ntohs(address.sin_port));
  }
  for (int fd : sockets) close(fd);
  return ports;
}

// The TF_CONFIG of worker `index` of a cluster of workers at `ports`.
inline std::string WorkerTfConfig(const std::vector<int>& ports, int index) {
  std::string workers;
  for (int port : ports) {
    workers +=
        (workers.empty() ? "\"" : ",\"") + std::string("127.0.0.1:") + std::to_string(port) + "\"";
  }
  return "{\"cluster\":{\"worker\":[" + workers +
         "]},\"task\":{\"type\":\"worker\",\"index\":" + std::to_string(index) + "}}";
}

// A strategy for tests: one compute thread, short timeouts.
inline StrategyOptions TestStrategyOptions() {
  StrategyOptions options;
  options.startup_timeout = std::chrono::seconds(60);
  options.peer_timeout = std::chrono::seconds(10);
  options.compute_threads = 1;
  return options;
}

struct WorkerOutcome {
  int exit_code = -1;  // -1: killed by a signal
  std::string report;  // what the worker wrote with Report
};

inline int& ReportFd() {
  static int fd = -1;
  return fd;
}

// Appends a line to this worker's report.
inline void Report(const std::string& line) {
  const std::string text = line + "\n";
  [[maybe_unused]] ssize_t ignored = write(ReportFd(), text.data(), text.size());
}

// The TF_CONFIG of task `index` of `tasks` (types, in order; an "evaluator" is left out of the
// cluster, as the taxi job has it), the training and ps tasks at `ports`.
inline std::string JobTfConfig(const std::vector<std::string>& tasks, const std::vector<int>& ports,
                               size_t index) {
  std::vector<std::string> types;
  std::vector<std::string> addresses;
  int my_index = 0;
  for (size_t i = 0; i < tasks.size(); ++i) {
    if (i == index) {
      my_index = 0;
      for (size_t j = 0; j < i; ++j) my_index += tasks[j] == tasks[i] ? 1 : 0;
    }
    if (tasks[i] == "evaluator") continue;
    size_t slot = 0;
    while (slot < types.size() && types[slot] != tasks[i]) ++slot;
    if (slot == types.size()) {
      types.push_back(tasks[i]);
      addresses.emplace_back();
    }
    addresses[slot] += (addresses[slot].empty() ? "\"" : ",\"") + std::string("127.0.0.1:") +
                       std::to_string(ports[i]) + "\"";
  }
  std::string cluster;
  for (size_t slot = 0; slot < types.size(); ++slot) {
    cluster += (slot == 0 ? "\"" : ",\"") + types[slot] + "\":[" + addresses[slot] + "]";
  }
  return "{\"cluster\":{" + cluster + "},\"task\":{\"type\":\"" + tasks[index] +
         "\",\"index\":" + std::to_string(my_index) + "}}";
}

// Runs body(cluster) in a forked process for each task of `tasks` (types, as JobTfConfig); each
// exits with what body returns (an exception it throws: its message reported, exit 1). Waits up
// to `limit`. The outcomes are in the order of `tasks`.
inline std::vector<WorkerOutcome> Job(const std::vector<std::string>& tasks,
                                      const std::function<int(const Cluster&)>& body,
                                      std::chrono::seconds limit = std::chrono::seconds(240)) {
  const int count = static_cast<int>(tasks.size());
  const std::vector<int> ports = FreePorts(count);
  std::vector<pid_t> pids(count);
  std::vector<int> fds(count);
  std::fflush(stdout);
  std::fflush(stderr);
  for (int rank = 0; rank < count; ++rank) {
    int pipe_fds[2];
    if (pipe(pipe_fds) != 0) std::abort();
    const pid_t pid = fork();
    if (pid == 0) {
      close(pipe_fds[0]);
      ReportFd() = pipe_fds[1];
      int code = 1;
      try {
        code = body(Cluster::FromTfConfig(JobTfConfig(tasks, ports, rank)));
      } catch (const std::exception& error) {
        Report(std::string("exception: ") + error.what());
      }
      std::fflush(stdout);
      std::fflush(stderr);
      _exit(code);
    }
    close(pipe_fds[1]);
    pids[rank] = pid;
    fds[rank] = pipe_fds[0];
  }
  std::vector<WorkerOutcome> outcomes(count);
  const auto deadline = std::chrono::steady_clock::now() + limit;
  for (int rank = 0; rank < count; ++rank) {
    std::string& report = outcomes[rank].report;
    char buffer[4096];
    for (;;) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      pollfd poll_fd{fds[rank], POLLIN, 0};
      if (left.count() <= 0 || poll(&poll_fd, 1, static_cast<int>(left.count())) <= 0) break;
      const ssize_t n = read(fds[rank], buffer, sizeof(buffer));
      if (n <= 0) break;
      report.append(buffer, n);
    }
    close(fds[rank]);
  }
  for (int rank = 0; rank < count; ++rank) {
    // A task that closed its report is exiting; one still running at the deadline is killed.
    int status = 0;
    pid_t done = 0;
    while ((done = waitpid(pids[rank], &status, WNOHANG)) == 0 &&
           std::chrono::steady_clock::now() < deadline) {
      usleep(10 * 1000);
    }
    if (done == 0) {
      ADD_FAILURE() << tasks[rank] << " task " << rank << " still ran after " << limit.count()
                    << " s: killed";
      kill(pids[rank], SIGKILL);
      waitpid(pids[rank], &status, 0);
    }
    outcomes[rank].exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }
  return outcomes;
}

// Runs body(cluster) in `count` forked workers of one cluster (Job with `count` workers).
inline std::vector<WorkerOutcome> Workers(int count, const std::function<int(const Cluster&)>& body,
                                          std::chrono::seconds limit = std::chrono::seconds(240)) {
  return Job(std::vector<std::string>(static_cast<size_t>(count), "worker"), body, limit);
}

// A directory of its own under the system's temporary directory, removed afterwards.
class TempDir {
 public:
  TempDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "cohort-api-XXXXXX").string();
    if (mkdtemp(pattern.data()) == nullptr) std::abort();
    path_ = pattern;
  }
  ~TempDir() {
    std::error_code error;
    std::filesystem::remove_all(path_, error);
  }
  std::string operator/(const std::string& name) const { return (path_ / name).string(); }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

}  // namespace cohort::api_testing
