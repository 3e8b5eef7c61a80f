#include "testing/emulated_cluster.h"

#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <sstream>
#include <thread>

#include "base/file.h"

namespace cohort::testing {
namespace {

constexpr char kNamePrefix[] = "cohort-emu-";
constexpr char kNetnsDir[] = "/run/netns";
constexpr char kLinkTable[] = "cohort_link";
constexpr auto kToolTimeout = std::chrono::seconds(30);
constexpr auto kHostStartTimeout = std::chrono::seconds(30);

// The path of a system tool: on PATH, or in /usr/sbin or /sbin (root's tools), or "".
std::string FindTool(const std::string& name) {
  std::string directories = std::getenv("PATH") ? std::getenv("PATH") : "";
  directories += ":/usr/sbin:/sbin:/usr/bin:/bin";
  std::istringstream stream(directories);
  for (std::string directory; std::getline(stream, directory, ':');) {
    if (directory.empty()) continue;
    const std::string path = directory + "/" + name;
    if (access(path.c_str(), X_OK) == 0) return path;
  }
  return "";
}

std::string Joined(const std::vector<std::string>& words) {
  std::string text;
  for (const std::string& word : words) text += (text.empty() ? "" : " ") + word;
  return text;
}

// Writes all of `text` to `fd`, ignoring failures (used in forked children to report errors).
void WriteAll(int fd, const char* text, size_t size) {
  while (size > 0) {
    const ssize_t written = write(fd, text, size);
    if (written <= 0) return;
    text += written;
    size -= static_cast<size_t>(written);
  }
}

// In a forked child: reports "e<step>: <errno text>\n" on `fd` and exits. Only system calls and
// strerror, which the forked child of a threaded process may use.
[[noreturn]] void FailInChild(int fd, const char* step) {
  const int error = errno;
  char message[256];
  const int size = snprintf(message, sizeof(message), "e%s: %s\n", step, strerror(error));
  if (size > 0) WriteAll(fd, message, std::min<size_t>(size, sizeof(message) - 1));
  _exit(127);
}

// Runs `tool_argv` (argv[0] a full path) in the network namespace at `netns_path` (none when
// empty), with `input` on its standard input; OK when it exits 0, else an error naming the
// command and quoting what it printed.
Status RunTool(const std::string& netns_path, const std::vector<std::string>& tool_argv,
               const std::string& input = "") {
  const std::string described = Joined(tool_argv);
  int netns_fd = -1;
  if (!netns_path.empty()) {
    netns_fd = open(netns_path.c_str(), O_RDONLY | O_CLOEXEC);
    if (netns_fd < 0) {
      return Status::IOError("opening network namespace " + netns_path + ": " +
                             ErrnoMessage(errno));
    }
  }
  std::vector<char*> argv;
  for (const std::string& word : tool_argv) argv.push_back(const_cast<char*>(word.c_str()));
  argv.push_back(nullptr);
  int output[2], stdin_pipe[2];
  if (pipe2(output, O_CLOEXEC) != 0 || pipe2(stdin_pipe, O_CLOEXEC) != 0) {
    if (netns_fd >= 0) close(netns_fd);
    return Status::IOError("pipe for " + described + ": " + ErrnoMessage(errno));
  }
  const pid_t pid = fork();
  if (pid == 0) {
    if (netns_fd >= 0 && setns(netns_fd, CLONE_NEWNET) != 0) FailInChild(output[1], "setns");
    dup2(stdin_pipe[0], 0);
    dup2(output[1], 1);
    dup2(output[1], 2);
    execv(argv[0], argv.data());
    FailInChild(output[1], "exec");
  }
  if (netns_fd >= 0) close(netns_fd);
  close(output[1]);
  close(stdin_pipe[0]);
  if (pid < 0) {
    close(output[0]);
    close(stdin_pipe[1]);
    return Status::IOError("fork for " + described + ": " + ErrnoMessage(errno));
  }
  WriteAll(stdin_pipe[1], input.data(), input.size());
  close(stdin_pipe[1]);
  std::string printed;
  const auto deadline = std::chrono::steady_clock::now() + kToolTimeout;
  bool timed_out = false;
  while (true) {
    pollfd poll_fd{output[0], POLLIN, 0};
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      timed_out = true;
      break;
    }
    if (poll(&poll_fd, 1, static_cast<int>(left.count())) <= 0) continue;
    char buffer[4096];
    const ssize_t got = read(output[0], buffer, sizeof(buffer));
    if (got <= 0) break;
    if (printed.size() < 64 * 1024) printed.append(buffer, static_cast<size_t>(got));
  }
  close(output[0]);
  if (timed_out) kill(pid, SIGKILL);
  int status = 0;
  waitpid(pid, &status, 0);
  while (!printed.empty() && printed.back() == '\n') printed.pop_back();
  if (timed_out) {
    return Status::DeadlineExceeded(described + " did not end within " +
                                    std::to_string(kToolTimeout.count()) + " s");
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    return Status::Internal(described + " failed (" +
                            (WIFEXITED(status) ? "exit " + std::to_string(WEXITSTATUS(status))
                                               : "signal " + std::to_string(WTERMSIG(status))) +
                            "): " + printed);
  }
  return Status::OK();
}

bool ProcessGone(pid_t pid) { return kill(pid, 0) != 0 && errno == ESRCH; }

// The owning pid in a name cohort-emu-<pid>-..., or -1.
pid_t OwnerOf(const std::string& name) {
  const size_t prefix = std::strlen(kNamePrefix);
  if (name.compare(0, prefix, kNamePrefix) != 0) return -1;
  const size_t end = name.find('-', prefix);
  if (end == std::string::npos || end == prefix) return -1;
  const std::string digits = name.substr(prefix, end - prefix);
  if (digits.find_first_not_of("0123456789") != std::string::npos || digits.size() > 9) return -1;
  return static_cast<pid_t>(std::stol(digits));
}

// SIGKILLs every process whose network namespace is the one bound at `netns_path`.
void KillProcessesIn(const std::string& netns_path) {
  struct stat target;
  if (stat(netns_path.c_str(), &target) != 0) return;
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator("/proc", error)) {
    const std::string name = entry.path().filename().string();
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
    struct stat ns;
    if (stat((entry.path() / "ns" / "net").c_str(), &ns) != 0) continue;
    if (ns.st_dev == target.st_dev && ns.st_ino == target.st_ino) {
      kill(static_cast<pid_t>(std::stol(name)), SIGKILL);
    }
  }
}

// Removes the namespace bound at /run/netns/<name>: as `ip netns delete` does, unmounts and
// unlinks the binding; the namespace goes when its last process does.
void DeleteNetns(const std::string& name) {
  const std::string path = std::string(kNetnsDir) + "/" + name;
  umount2(path.c_str(), MNT_DETACH);
  unlink(path.c_str());
}

bool ValidAlias(const std::string& alias) {
  if (alias.empty() || alias.size() > 63) return false;
  for (char c : alias) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '.') return false;
  }
  return true;
}

std::string ToolPath(const char* name) {
  static const std::map<std::string, std::string>* paths = new std::map<std::string, std::string>{
      {"ip", FindTool("ip")}, {"tc", FindTool("tc")}, {"nft", FindTool("nft")}};
  return paths->at(name);
}

}  // namespace

// --- HostProcess ---------------------------------------------------------------------------

HostProcess::~HostProcess() {
  if (Wait(std::chrono::milliseconds(0)) == -1) {
    Signal(SIGKILL);
    Wait(std::chrono::seconds(10));
  }
  close(output_fd_);
}

void HostProcess::Signal(int signal) {
  if (exit_code_ != -1) return;
  // The command leads its own process group; the group reaches what its shell started.
  if (kill(-command_pid_, signal) != 0) kill(command_pid_, signal);
}

int HostProcess::Wait(std::chrono::milliseconds timeout) {
  if (exit_code_ != -1 || entering_pid_ < 0) return exit_code_;
  exit_code_ = WaitForChild(entering_pid_, timeout);
  return exit_code_;
}

bool HostProcess::Running() { return Wait(std::chrono::milliseconds(0)) == -1; }

std::string HostProcess::Output() const {
  std::string text;
  char buffer[8192];
  off_t offset = 0;
  while (true) {
    const ssize_t got = pread(output_fd_, buffer, sizeof(buffer), offset);
    if (got <= 0) break;
    text.append(buffer, static_cast<size_t>(got));
    offset += got;
  }
  return text;
}

// --- EmulatedCluster -----------------------------------------------------------------------

StatusOr<std::unique_ptr<EmulatedCluster>> EmulatedCluster::Create(
    const EmulatedClusterOptions& options) {
  if (options.hosts < 1 || options.hosts > EmulatedClusterOptions::kMaxHosts) {
    return Status::InvalidArgument("EmulatedClusterOptions.hosts is " +
                                   std::to_string(options.hosts) + "; it must be 1 to " +
                                   std::to_string(EmulatedClusterOptions::kMaxHosts));
  }
  if (options.rate_bits_per_second < 1'000'000) {
    return Status::InvalidArgument("EmulatedClusterOptions.rate_bits_per_second is " +
                                   std::to_string(options.rate_bits_per_second) +
                                   "; it must be at least 1000000 (1 Mbit/s)");
  }
  for (const auto& [host, aliases] : options.aliases) {
    if (host < 0 || host >= options.hosts) {
      return Status::InvalidArgument("EmulatedClusterOptions.aliases names host " +
                                     std::to_string(host) + " of " + std::to_string(options.hosts));
    }
    for (const std::string& alias : aliases) {
      if (!ValidAlias(alias)) {
        return Status::InvalidArgument("EmulatedClusterOptions.aliases[" + std::to_string(host) +
                                       "]: \"" + alias +
                                       "\" is not 1 to 63 letters, digits, '-' or '.'");
      }
    }
  }
  if (std::string missing = MissingForEmulatedHosts(); !missing.empty()) {
    return Status::FailedPrecondition("cannot emulate hosts: " + missing);
  }
  SweepEmulatedHostLeftovers();
  std::unique_ptr<EmulatedCluster> cluster(new EmulatedCluster());
  if (Status status = cluster->SetUp(options); !status.ok()) {
    cluster->TearDown();
    return status.WithContext("setting up " + std::to_string(options.hosts) + " emulated hosts");
  }
  return cluster;
}

EmulatedCluster::~EmulatedCluster() { TearDown(); }

std::string EmulatedCluster::HostName(int host) const { return "host-" + std::to_string(host); }

std::string EmulatedCluster::Address(int host) const {
  return "10.77.0." + std::to_string(host + 1);
}

Status EmulatedCluster::SetUp(const EmulatedClusterOptions& options) {
  static std::atomic<int> clusters{0};
  prefix_ = kNamePrefix + std::to_string(getpid()) + "-" + std::to_string(clusters++);
  scratch_dir_ = "/tmp/" + prefix_;
  std::error_code error;
  std::filesystem::create_directories(scratch_dir_, error);
  if (error) return Status::IOError("creating " + scratch_dir_ + ": " + error.message());
  std::filesystem::create_directories(kNetnsDir, error);

  std::string hosts_file = "127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n";
  for (int i = 0; i < options.hosts; ++i) {
    hosts_file += Address(i) + "\t" + HostName(i);
    auto aliases = options.aliases.find(i);
    if (aliases != options.aliases.end()) {
      for (const std::string& alias : aliases->second) hosts_file += " " + alias;
    }
    hosts_file += "\n";
  }
  const std::string hosts_path = scratch_dir_ + "/hosts";
  COHORT_RETURN_IF_ERROR(WriteFileAtomically(hosts_path, hosts_file));

  const std::string ip = ToolPath("ip"), tc = ToolPath("tc"), nft = ToolPath("nft");
  switch_netns_ = prefix_ + "-sw";
  COHORT_RETURN_IF_ERROR(RunTool("", {ip, "netns", "add", switch_netns_}));
  switch_created_ = true;
  const std::string switch_path = std::string(kNetnsDir) + "/" + switch_netns_;
  COHORT_RETURN_IF_ERROR(RunTool(switch_path, {ip, "link", "set", "lo", "up"}));
  COHORT_RETURN_IF_ERROR(RunTool(switch_path, {ip, "link", "add", "br0", "type", "bridge"}));
  COHORT_RETURN_IF_ERROR(RunTool(switch_path, {ip, "link", "set", "br0", "up"}));

  for (int i = 0; i < options.hosts; ++i) {
    Host host;
    host.name = HostName(i);
    host.netns = prefix_ + "-h" + std::to_string(i);
    COHORT_RETURN_IF_ERROR(RunTool("", {ip, "netns", "add", host.netns}));
    hosts_.push_back(host);
    const std::string host_path = std::string(kNetnsDir) + "/" + host.netns;
    const std::string port = "h" + std::to_string(i);
    // Both ends are made inside the namespaces: the machine's own namespace never sees them.
    COHORT_RETURN_IF_ERROR(RunTool(switch_path, {ip, "link", "add", port, "type", "veth", "peer",
                                                 "name", "eth0", "netns", host.netns}));
    COHORT_RETURN_IF_ERROR(RunTool(switch_path, {ip, "link", "set", port, "master", "br0"}));
    COHORT_RETURN_IF_ERROR(RunTool(switch_path, {ip, "link", "set", port, "up"}));
    COHORT_RETURN_IF_ERROR(RunTool(host_path, {ip, "link", "set", "lo", "up"}));
    COHORT_RETURN_IF_ERROR(
        RunTool(host_path, {ip, "addr", "add", Address(i) + "/24", "dev", "eth0"}));
    COHORT_RETURN_IF_ERROR(RunTool(host_path, {ip, "link", "set", "eth0", "up"}));
    COHORT_RETURN_IF_ERROR(RunTool(
        host_path,
        {nft, std::string("add table inet ") + kLinkTable + "; add chain inet " + kLinkTable +
                  " input { type filter hook input priority 0; policy accept; }; "
                  "add chain inet " +
                  kLinkTable + " output { type filter hook output priority 0; policy accept; }"}));
    COHORT_RETURN_IF_ERROR(SetRate(i, options.rate_bits_per_second));
    COHORT_RETURN_IF_ERROR(StartHostInit(&hosts_.back(), hosts_path));
  }
  return Status::OK();
}

// Forks the keeper: it enters the host's network namespace, makes new mount, UTS and PID
// namespaces (the host's /etc/hosts bound in, the hostname set) and forks the host's init, the
// first process of the new PID namespace, which mounts its /proc and then lives until the
// control pipe closes. Commands enter the init's namespaces. Both have PR_SET_PDEATHSIG.
Status EmulatedCluster::StartHostInit(Host* host, const std::string& hosts_file) {
  const std::string netns_path = std::string(kNetnsDir) + "/" + host->netns;
  const int netns_fd = open(netns_path.c_str(), O_RDONLY | O_CLOEXEC);
  if (netns_fd < 0) {
    return Status::IOError("opening " + netns_path + ": " + ErrnoMessage(errno));
  }
  int control[2], report[2];
  if (pipe2(control, O_CLOEXEC) != 0) return Status::IOError("pipe: " + ErrnoMessage(errno));
  if (pipe2(report, O_CLOEXEC) != 0) return Status::IOError("pipe: " + ErrnoMessage(errno));
  const pid_t parent = getpid();
  const std::string hostname = host->name;
  const pid_t keeper = fork();
  if (keeper == 0) {
    close(control[1]);
    close(report[0]);
    if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0) FailInChild(report[1], "prctl");
    if (getppid() != parent) _exit(1);
    if (setns(netns_fd, CLONE_NEWNET) != 0) FailInChild(report[1], "setns(network)");
    if (unshare(CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWUTS) != 0) {
      FailInChild(report[1], "unshare(mount, pid, uts)");
    }
    if (mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) {
      FailInChild(report[1], "making / private");
    }
    if (mount(hosts_file.c_str(), "/etc/hosts", nullptr, MS_BIND, nullptr) != 0) {
      FailInChild(report[1], "bind-mounting the hosts file on /etc/hosts");
    }
    if (sethostname(hostname.data(), hostname.size()) != 0) {
      FailInChild(report[1], "sethostname");
    }
    const pid_t keeper_pid = getpid();
    const pid_t init = fork();
    if (init == 0) {
      if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0) FailInChild(report[1], "prctl");
      if (getppid() != keeper_pid && getppid() != 0) _exit(1);
      if (mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, nullptr) != 0) {
        FailInChild(report[1], "mounting /proc for the host's PID namespace");
      }
      WriteAll(report[1], "r\n", 2);
      close(report[1]);
      // The host's init: reaps orphans until the control pipe closes, then ends, and with it
      // every process of the host.
      while (true) {
        pollfd poll_fd{control[0], POLLIN, 0};
        const int ready = poll(&poll_fd, 1, 200);
        while (waitpid(-1, nullptr, WNOHANG) > 0) {
        }
        if (ready > 0) {
          char byte;
          if (read(control[0], &byte, 1) <= 0) _exit(0);
        }
      }
    }
    if (init < 0) FailInChild(report[1], "fork of the host's init");
    char line[32];
    const int size = snprintf(line, sizeof(line), "p%d\n", static_cast<int>(init));
    WriteAll(report[1], line, static_cast<size_t>(size));
    close(report[1]);
    close(control[0]);
    int status = 0;
    waitpid(init, &status, 0);
    _exit(0);
  }
  close(netns_fd);
  close(control[0]);
  close(report[1]);
  if (keeper < 0) {
    close(control[1]);
    close(report[0]);
    return Status::IOError("fork: " + ErrnoMessage(errno));
  }
  host->keeper_pid = keeper;
  host->control_fd = control[1];
  // "p<init pid>" from the keeper and "r" from the init once it is ready, in either order, or
  // "e<what failed>" from either.
  std::string lines;
  const auto deadline = std::chrono::steady_clock::now() + kHostStartTimeout;
  bool ready = false;
  while (!(ready && host->init_pid > 0)) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    pollfd poll_fd{report[0], POLLIN, 0};
    if (left.count() <= 0 || poll(&poll_fd, 1, static_cast<int>(left.count())) <= 0) {
      close(report[0]);
      return Status::DeadlineExceeded("host " + host->name + " did not start within " +
                                      std::to_string(kHostStartTimeout.count()) + " s");
    }
    char buffer[512];
    const ssize_t got = read(report[0], buffer, sizeof(buffer));
    if (got <= 0) {
      close(report[0]);
      return Status::Internal("starting host " + host->name + ": its processes ended (" + lines +
                              ")");
    }
    lines.append(buffer, static_cast<size_t>(got));
    size_t newline;
    while ((newline = lines.find('\n')) != std::string::npos) {
      const std::string line = lines.substr(0, newline);
      lines.erase(0, newline + 1);
      if (line == "r") {
        ready = true;
      } else if (line.size() > 1 && line[0] == 'p') {
        host->init_pid = static_cast<pid_t>(std::stol(line.substr(1)));
      } else if (line.size() > 1 && line[0] == 'e') {
        close(report[0]);
        return Status::Internal("starting host " + host->name + ": " + line.substr(1));
      }
    }
  }
  close(report[0]);
  return Status::OK();
}

Status EmulatedCluster::CheckHost(int host) const {
  if (host < 0 || host >= size()) {
    return Status::InvalidArgument("no emulated host " + std::to_string(host) + " (there are " +
                                   std::to_string(size()) + ")");
  }
  return Status::OK();
}

StatusOr<std::unique_ptr<HostProcess>> EmulatedCluster::Start(int host,
                                                              const std::string& command) {
  COHORT_RETURN_IF_ERROR(CheckHost(host));
  const std::string init = "/proc/" + std::to_string(hosts_[host].init_pid) + "/ns/";
  // Opened here, since the child may not allocate: network, UTS and PID first, mount last (it
  // changes the root), then back to the caller's working directory.
  const char* kinds[] = {"net", "uts", "pid", "mnt"};
  const int types[] = {CLONE_NEWNET, CLONE_NEWUTS, CLONE_NEWPID, CLONE_NEWNS};
  int ns_fds[4];
  for (int i = 0; i < 4; ++i) {
    ns_fds[i] = open((init + kinds[i]).c_str(), O_RDONLY | O_CLOEXEC);
    if (ns_fds[i] < 0) {
      const int error = errno;
      for (int j = 0; j < i; ++j) close(ns_fds[j]);
      return Status::IOError("opening " + init + kinds[i] + " of host " + HostName(host) + ": " +
                             ErrnoMessage(error));
    }
  }
  const std::string output_path =
      scratch_dir_ + "/output-" + std::to_string(next_output_++) + ".log";
  const int output_fd = open(output_path.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  std::error_code cwd_error;
  const std::string cwd = std::filesystem::current_path(cwd_error).string();
  int report[2];
  if (output_fd < 0 || pipe2(report, O_CLOEXEC) != 0) {
    const int error = errno;
    for (int fd : ns_fds) close(fd);
    if (output_fd >= 0) close(output_fd);
    return Status::IOError("creating " + output_path + ": " + ErrnoMessage(error));
  }
  const pid_t parent = getpid();
  const pid_t entering = fork();
  if (entering == 0) {
    close(report[0]);
    if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0) FailInChild(report[1], "prctl");
    if (getppid() != parent) _exit(1);
    for (int i = 0; i < 4; ++i) {
      if (setns(ns_fds[i], types[i]) != 0) FailInChild(report[1], "setns");
    }
    if (chdir(cwd.c_str()) != 0 && chdir("/") != 0) FailInChild(report[1], "chdir");
    const pid_t entering_pid = getpid();
    const pid_t command_pid = fork();
    if (command_pid == 0) {
      prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (getppid() != entering_pid && getppid() != 0) _exit(1);
      setpgid(0, 0);
      const int null_fd = open("/dev/null", O_RDONLY);
      dup2(null_fd, 0);
      dup2(output_fd, 1);
      dup2(output_fd, 2);
      execl("/bin/sh", "sh", "-c", command.c_str(), static_cast<char*>(nullptr));
      _exit(127);
    }
    if (command_pid < 0) FailInChild(report[1], "fork");
    char line[32];
    const int size = snprintf(line, sizeof(line), "p%d\n", static_cast<int>(command_pid));
    WriteAll(report[1], line, static_cast<size_t>(size));
    close(report[1]);
    int status = 0;
    while (waitpid(command_pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (WIFSIGNALED(status)) _exit(128 + WTERMSIG(status));
    _exit(WIFEXITED(status) ? WEXITSTATUS(status) : 1);
  }
  for (int fd : ns_fds) close(fd);
  close(report[1]);
  if (entering < 0) {
    close(report[0]);
    close(output_fd);
    return Status::IOError("fork: " + ErrnoMessage(errno));
  }
  std::string line;
  char buffer[256];
  pollfd poll_fd{report[0], POLLIN, 0};
  while (line.find('\n') == std::string::npos && poll(&poll_fd, 1, 10'000) > 0) {
    const ssize_t got = read(report[0], buffer, sizeof(buffer));
    if (got <= 0) break;
    line.append(buffer, static_cast<size_t>(got));
  }
  close(report[0]);
  if (line.size() < 2 || line[0] != 'p') {
    kill(entering, SIGKILL);
    waitpid(entering, nullptr, 0);
    close(output_fd);
    return Status::Internal(
        "starting `" + command + "` on " + HostName(host) + ": " +
        (line.empty() ? std::string("no word from the child within 10 s") : line.substr(1)));
  }
  return std::unique_ptr<HostProcess>(
      new HostProcess(entering, static_cast<pid_t>(std::stol(line.substr(1))), output_fd));
}

CommandResult EmulatedCluster::Run(int host, const std::string& command,
                                   std::chrono::milliseconds timeout) {
  CommandResult result;
  auto process = Start(host, command);
  if (!process.ok()) {
    result.output = process.status().ToString();
    return result;
  }
  result.exit_code = (*process)->Wait(timeout);
  if (result.exit_code == -1) {
    result.timed_out = true;
    (*process)->Signal(SIGKILL);
    (*process)->Wait(std::chrono::seconds(10));
  }
  result.output = (*process)->Output();
  return result;
}

Status EmulatedCluster::SetRate(int host, uint64_t bits_per_second) {
  COHORT_RETURN_IF_ERROR(CheckHost(host));
  if (bits_per_second < 1'000'000) {
    return Status::InvalidArgument("a link rate of " + std::to_string(bits_per_second) +
                                   " bit/s; it must be at least 1000000 (1 Mbit/s)");
  }
  // The bucket holds 2 ms at the rate and never less than one 64 KiB segment, which veth hands
  // over whole (GSO); the queue holds 50 ms.
  const uint64_t burst = std::max<uint64_t>(64 * 1024, bits_per_second / 8 / 500);
  const std::string rate = std::to_string(bits_per_second) + "bit";
  const std::string tc = ToolPath("tc");
  const std::vector<std::pair<std::string, std::string>> ends = {
      {std::string(kNetnsDir) + "/" + switch_netns_, "h" + std::to_string(host)},
      {std::string(kNetnsDir) + "/" + hosts_[host].netns, "eth0"}};
  for (const auto& [netns, device] : ends) {
    COHORT_RETURN_IF_ERROR(
        RunTool(netns, {tc, "qdisc", "replace", "dev", device, "root", "tbf", "rate", rate, "burst",
                        std::to_string(burst), "latency", "50ms"}));
  }
  return Status::OK();
}

Status EmulatedCluster::SetLinkFilter(int host, const std::string& rule) {
  COHORT_RETURN_IF_ERROR(CheckHost(host));
  const std::string table = std::string("inet ") + kLinkTable;
  std::string commands = "flush chain " + table + " input; flush chain " + table + " output";
  if (!rule.empty()) {
    commands += "; add rule " + table + " input iifname \"eth0\" " + rule + "; add rule " + table +
                " output oifname \"eth0\" " + rule;
  }
  return RunTool(std::string(kNetnsDir) + "/" + hosts_[host].netns, {ToolPath("nft"), commands});
}

Status EmulatedCluster::CutOff(int host) { return SetLinkFilter(host, "drop"); }

Status EmulatedCluster::SetLoss(int host, double fraction) {
  if (!(fraction >= 0 && fraction <= 1)) {
    return Status::InvalidArgument("a loss fraction of " + std::to_string(fraction) +
                                   "; it must be 0 to 1");
  }
  const long per_mille = std::lround(fraction * 1000);
  if (per_mille == 0) return SetLinkFilter(host, "");
  return SetLinkFilter(host, "numgen random mod 1000 < " + std::to_string(per_mille) + " drop");
}

Status EmulatedCluster::Restore(int host) { return SetLinkFilter(host, ""); }

void EmulatedCluster::TearDown() {
  for (Host& host : hosts_) {
    if (host.control_fd >= 0) close(host.control_fd);
    host.control_fd = -1;
    // The init ends when its control pipe closes; SIGKILL makes sure. Its PID namespace's
    // processes die with it.
    if (host.init_pid > 0) kill(host.init_pid, SIGKILL);
    if (host.keeper_pid > 0)
      WaitForChildOrSignal(host.keeper_pid, std::chrono::seconds(10), SIGKILL);
    host.keeper_pid = host.init_pid = -1;
    KillProcessesIn(std::string(kNetnsDir) + "/" + host.netns);
    DeleteNetns(host.netns);
  }
  hosts_.clear();
  if (switch_created_) {
    KillProcessesIn(std::string(kNetnsDir) + "/" + switch_netns_);
    DeleteNetns(switch_netns_);
    switch_created_ = false;
  }
  if (!scratch_dir_.empty()) {
    std::error_code error;
    std::filesystem::remove_all(scratch_dir_, error);
    scratch_dir_.clear();
  }
}

Status EnterEmulatedHost(pid_t host_pid) {
  std::error_code cwd_error;
  const std::filesystem::path cwd = std::filesystem::current_path(cwd_error);
  const std::string init = "/proc/" + std::to_string(host_pid) + "/ns/";
  // Network, UTS and PID first, mount last: it changes the root.
  const std::pair<const char*, int> namespaces[] = {
      {"net", CLONE_NEWNET}, {"uts", CLONE_NEWUTS}, {"pid", CLONE_NEWPID}, {"mnt", CLONE_NEWNS}};
  for (const auto& [kind, type] : namespaces) {
    const int fd = open((init + kind).c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return Status::IOError("opening " + init + kind + ": " + ErrnoMessage(errno));
    const int entered = setns(fd, type);
    const int error = errno;
    close(fd);
    if (entered != 0) {
      return Status::IOError("entering " + init + kind + ": " + ErrnoMessage(error));
    }
  }
  if (!cwd_error && chdir(cwd.c_str()) != 0) {
    return Status::IOError("changing back to " + cwd.string() +
                           " on the host: " + ErrnoMessage(errno));
  }
  return Status::OK();
}

int SweepEmulatedHostLeftovers() {
  int removed = 0;
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator(kNetnsDir, error)) {
    const std::string name = entry.path().filename().string();
    const pid_t owner = OwnerOf(name);
    if (owner <= 0 || !ProcessGone(owner)) continue;
    KillProcessesIn(entry.path().string());
    DeleteNetns(name);
    ++removed;
  }
  for (const auto& entry : std::filesystem::directory_iterator("/tmp", error)) {
    const std::string name = entry.path().filename().string();
    const pid_t owner = OwnerOf(name);
    if (owner <= 0 || !ProcessGone(owner)) continue;
    std::error_code ignored;
    std::filesystem::remove_all(entry.path(), ignored);
  }
  return removed;
}

std::string MissingForEmulatedHosts() {
  std::vector<std::string> missing;
  // CapEff in /proc/self/status: CAP_NET_ADMIN is bit 12, CAP_SYS_ADMIN bit 21.
  uint64_t capabilities = 0;
  auto status = ReadWholeFile("/proc/self/status", 1 << 20);
  if (status.ok()) {
    std::istringstream lines(*status);
    for (std::string line; std::getline(lines, line);) {
      if (line.rfind("CapEff:", 0) == 0)
        capabilities = std::strtoull(line.c_str() + 7, nullptr, 16);
    }
  }
  if (!((capabilities >> 12) & 1)) missing.push_back("CAP_NET_ADMIN (run as root)");
  if (!((capabilities >> 21) & 1)) missing.push_back("CAP_SYS_ADMIN (run as root)");
  if (ToolPath("ip").empty()) missing.push_back("the ip command (Debian package iproute2)");
  if (ToolPath("tc").empty()) missing.push_back("the tc command (Debian package iproute2)");
  if (ToolPath("nft").empty()) missing.push_back("the nft command (Debian package nftables)");
  if (access("/proc/self/ns/net", R_OK) != 0 || access("/proc/self/ns/pid", R_OK) != 0) {
    missing.push_back("network and PID namespaces (a kernel with CONFIG_NET_NS and CONFIG_PID_NS)");
  }
  std::string text;
  for (const std::string& what : missing) text += (text.empty() ? "" : ", ") + what;
  return text;
}

}  // namespace cohort::testing
