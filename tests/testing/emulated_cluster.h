// EmulatedCluster: N emulated hosts on this machine, for tests and benchmarks that need hosts
// which really are apart: their own network, their own processes, their own names.
//
// Each host is a network namespace with one link, a veth pair whose other end sits on a bridge
// in a switch namespace of its own, so the machine's own network is never touched and no packet
// leaves the namespaces the cluster made. Host i has the address 10.77.0.(i+1)/24 and the name
// host-i (plus any aliases the caller gives), written into an /etc/hosts that every host sees in
// its own mount namespace. Every host also has its own PID namespace: a process on one host can
// neither see nor read the memory of a process on another, so a same-host path (process_vm_readv)
// is honestly unavailable across hosts, as on separate machines. Each host's loopback is its own.
//
//   auto cluster = EmulatedCluster::Create({.hosts = 2});
//   ASSERT_TRUE(cluster.ok()) << cluster.status().ToString();
//   auto server = (*cluster)->Start(1, probe + " listen 7000");
//   CommandResult sent = (*cluster)->Run(0, probe + " send host-1 7000 1000000", 20s);
//   (*cluster)->SetRate(1, 100'000'000);   // 100 Mbit/s each way on host-1's link
//   (*cluster)->CutOff(1);                 // host-1's link drops every packet
//   (*cluster)->SetLoss(1, 0.3);           // ... or 30% of them, in each direction
//   (*cluster)->Restore(1);                // no cut-off, no loss (the rate stays)
//
// Links are shaped with tbf on both veth ends (default 10 Gbit/s each way); cut-off and loss are
// nftables rules on the host's side of its link (numgen random), since the kernel may lack netem.
//
// Nothing outlives the cluster: the destructor kills every host (each host's processes live in
// its PID namespace, whose first process dies with the cluster) and deletes the namespaces. A
// process killed before its destructor ran still takes its hosts' processes with it
// (PR_SET_PDEATHSIG), and the namespaces it leaves are named cohort-emu-<pid>-...: Create (and
// SweepEmulatedHostLeftovers) removes those whose owning process is gone. Create the cluster on a
// thread that lives as long as it does: a parent-death signal follows the creating thread.
//
// Needs root (CAP_SYS_ADMIN, CAP_NET_ADMIN) and iproute2's ip and tc and nftables' nft;
// MissingForEmulatedHosts() names what this machine lacks. The tools run as child processes with
// their arguments given directly, never through a shell.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "base/status.h"
#include "testing/processes.h"

namespace cohort::testing {

struct EmulatedClusterOptions {
  int hosts = 2;  // 1 to kMaxHosts
  // Each link's rate in each direction, in bits per second (at least 1 Mbit/s).
  uint64_t rate_bits_per_second = 10'000'000'000;
  // Further names per host index, resolved on every host (a service name, for example). Each
  // is 1 to 63 characters of letters, digits, '-' and '.'.
  std::map<int, std::vector<std::string>> aliases;

  static constexpr int kMaxHosts = 64;
};

// A command started on an emulated host. Its standard output and error go to one file, readable
// at any time with Output(). The destructor kills what is still running (its process group).
class HostProcess {
 public:
  ~HostProcess();
  HostProcess(const HostProcess&) = delete;
  HostProcess& operator=(const HostProcess&) = delete;

  // The shell running the command, as this process's PID namespace numbers it.
  pid_t pid() const { return command_pid_; }
  // Sends `signal` to the command's process group (the shell and what it started).
  void Signal(int signal);
  // Waits at most `timeout` for the command to end: its exit code (128 + N for signal N), or -1
  // when it still runs.
  int Wait(std::chrono::milliseconds timeout);
  bool Running();
  // Everything the command printed so far.
  std::string Output() const;

 private:
  friend class EmulatedCluster;
  HostProcess(pid_t entering_pid, pid_t command_pid, int output_fd)
      : entering_pid_(entering_pid), command_pid_(command_pid), output_fd_(output_fd) {}

  pid_t entering_pid_;  // our child that entered the host's namespaces and waits for the command
  pid_t command_pid_;
  int output_fd_;
  int exit_code_ = -1;
};

class EmulatedCluster {
 public:
  // Removes leftovers of killed runs, then sets up `options.hosts` hosts. Every failure names
  // the command or system call that failed and what it said.
  static StatusOr<std::unique_ptr<EmulatedCluster>> Create(const EmulatedClusterOptions& options);
  ~EmulatedCluster();
  EmulatedCluster(const EmulatedCluster&) = delete;
  EmulatedCluster& operator=(const EmulatedCluster&) = delete;

  int size() const { return static_cast<int>(hosts_.size()); }
  // "host-<i>", the name every host resolves to host i's address.
  std::string HostName(int host) const;
  // "10.77.0.<i+1>".
  std::string Address(int host) const;
  // The network namespace of host i (under /run/netns), for `ip netns exec` in scripts.
  const std::string& NetworkNamespace(int host) const { return hosts_.at(host).netns; }
  // The prefix shared by every namespace this cluster made.
  const std::string& name_prefix() const { return prefix_; }
  // The first process of host i's PID namespace, as this process numbers it. Entering its
  // namespaces (EnterEmulatedHost) puts a program on host i: for a program that someone else
  // starts, such as a replica started by a `cohort` supervisor running outside the hosts.
  pid_t HostPid(int host) const { return hosts_.at(host).init_pid; }

  // Runs `command` with /bin/sh on `host`, in the caller's working directory and environment.
  StatusOr<std::unique_ptr<HostProcess>> Start(int host, const std::string& command);
  // Runs `command` on `host` and waits at most `timeout` for it (then kills it: timed_out).
  CommandResult Run(int host, const std::string& command, std::chrono::milliseconds timeout);

  // The rate of host i's link in each direction.
  Status SetRate(int host, uint64_t bits_per_second);
  // Host i's link drops every packet, in and out, until Restore.
  Status CutOff(int host);
  // Host i's link drops each packet, in and out, with probability `fraction` (0 to 1, in steps
  // of 0.001), until Restore or the next SetLoss.
  Status SetLoss(int host, double fraction);
  // Host i's link passes every packet again (the rate is kept).
  Status Restore(int host);

 private:
  struct Host {
    std::string name;
    std::string netns;
    pid_t keeper_pid = -1;  // our child holding the host's namespaces, waiting for its init
    pid_t init_pid = -1;    // the first process of the host's PID namespace
    int control_fd = -1;    // closing it ends the host's init
  };

  EmulatedCluster() = default;
  Status SetUp(const EmulatedClusterOptions& options);
  Status StartHostInit(Host* host, const std::string& hosts_file);
  Status CheckHost(int host) const;
  Status SetLinkFilter(int host, const std::string& rule);
  void TearDown();

  std::string prefix_;       // cohort-emu-<pid>-<n>
  std::string scratch_dir_;  // /tmp/<prefix>: the hosts file and command outputs
  std::string switch_netns_;
  bool switch_created_ = false;
  std::vector<Host> hosts_;
  int next_output_ = 0;
};

// Makes the calling process enter the network, UTS, PID and mount namespaces of the emulated host
// whose first process is `host_pid` (EmulatedCluster::HostPid), keeping its working directory.
// The process itself stays in its PID namespace; the children it forks afterwards are on the
// host. Call it while the process has one thread (setns refuses a mount namespace otherwise).
// Errors name the namespace that could not be entered.
Status EnterEmulatedHost(pid_t host_pid);

// Removes what killed runs left: namespaces named cohort-emu-<pid>-... whose process <pid> is
// gone (killing any process still inside them) and their scratch directories. Returns how many
// namespaces it removed.
int SweepEmulatedHostLeftovers();

// What this machine lacks to emulate hosts ("" when nothing): root's capabilities, the ip, tc
// and nft commands, /run/netns.
std::string MissingForEmulatedHosts();

}  // namespace cohort::testing
