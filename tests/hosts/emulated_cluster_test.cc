// The emulated cluster (tests/testing/emulated_cluster.h): hosts that reach each other by name
// and nothing else of each other, links that are shaped, cut and lossy on demand, and nothing
// left behind, not even by a run that was killed.
#include "testing/emulated_cluster.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <regex>
#include <string>

#include "testing/host.h"
#include "testing/wait.h"

namespace cohort::testing {
namespace {

using namespace std::chrono_literals;

const std::string kProbe = COHORT_NET_PROBE;
const std::string kRunOnHosts = COHORT_RUN_ON_HOSTS;

EmulatedClusterOptions Hosts(int hosts, uint64_t rate_bits_per_second = 10'000'000'000,
                             std::map<int, std::vector<std::string>> aliases = {}) {
  EmulatedClusterOptions options;
  options.hosts = hosts;
  options.rate_bits_per_second = rate_bits_per_second;
  options.aliases = std::move(aliases);
  return options;
}

// Hosts tests need root and a few tools; in CI their absence fails the test, elsewhere it skips.
class EmulatedClusterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string missing = MissingForEmulatedHosts();
    if (missing.empty()) return;
    COHORT_SKIP_OR_FAIL_IN_CI("emulated hosts need what this machine lacks: " + missing);
  }

  std::unique_ptr<EmulatedCluster> Make(const EmulatedClusterOptions& options) {
    auto cluster = EmulatedCluster::Create(options);
    EXPECT_TRUE(cluster.ok()) << cluster.status().ToString();
    return cluster.ok() ? std::move(cluster).value() : nullptr;
  }

  // Starts the probe's TCP (or UDP) listener on `host` and waits until it is bound.
  std::unique_ptr<HostProcess> Listen(EmulatedCluster* cluster, int host,
                                      const std::string& arguments) {
    auto process = cluster->Start(host, kProbe + " " + arguments);
    EXPECT_TRUE(process.ok()) << process.status().ToString();
    if (!process.ok()) return nullptr;
    HostProcess* listener = process->get();
    EXPECT_TRUE(
        WaitUntil([&] { return listener->Output().find("listening") != std::string::npos; }, 20s))
        << "the probe never listened on " << cluster->HostName(host) << ": " << listener->Output();
    return std::move(process).value();
  }

  // The rate the probe's `send` printed, in Mbit/s, or -1.
  static double MbitPerSecond(const std::string& output) {
    std::smatch match;
    if (!std::regex_search(output, match, std::regex(R"(: ([0-9.]+) Mbit/s)"))) return -1;
    return std::stod(match[1]);
  }

  static std::vector<std::string> NamespacesWithPrefix(const std::string& prefix) {
    std::vector<std::string> names;
    std::error_code error;
    for (const auto& entry : std::filesystem::directory_iterator("/run/netns", error)) {
      const std::string name = entry.path().filename().string();
      if (name.rfind(prefix + "-", 0) == 0) names.push_back(name);
    }
    return names;
  }
};

TEST(EmulatedClusterOptionsTest, RefusesBadOptionsNamingThem) {
  auto none = EmulatedCluster::Create(Hosts(0));
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.status().ToString().find("hosts is 0"), std::string::npos)
      << none.status().ToString();
  auto slow = EmulatedCluster::Create(Hosts(2, 1000));
  ASSERT_FALSE(slow.ok());
  EXPECT_NE(slow.status().ToString().find("rate_bits_per_second"), std::string::npos);
  auto alias = EmulatedCluster::Create(Hosts(2, 10'000'000'000, {{1, {"bad name"}}}));
  ASSERT_FALSE(alias.ok());
  EXPECT_NE(alias.status().ToString().find("\"bad name\""), std::string::npos);
}

TEST_F(EmulatedClusterTest, HostsHaveTheirNamesAndReachEachOtherByName) {
  auto cluster = Make(Hosts(2, 10'000'000'000, {{1, {"trainer-worker-1.default.svc"}}}));
  ASSERT_NE(cluster, nullptr);
  EXPECT_EQ(cluster->Run(0, "hostname", 10s).output, "host-0\n");
  EXPECT_EQ(cluster->Run(1, "hostname", 10s).output, "host-1\n");
  const CommandResult resolved = cluster->Run(0, "getent hosts host-1", 10s);
  EXPECT_NE(resolved.output.find("10.77.0.2"), std::string::npos) << resolved.output;
  auto listener = Listen(cluster.get(), 1, "listen 7000");
  ASSERT_NE(listener, nullptr);
  for (const char* name : {"host-1", "trainer-worker-1.default.svc", "10.77.0.2"}) {
    const CommandResult sent =
        cluster->Run(0, kProbe + " send " + name + " 7000 100000 10000", 20s);
    EXPECT_EQ(sent.exit_code, 0) << name << ": " << sent.output;
  }
}

// A process that someone else started (a replica of a `cohort` supervisor running outside the
// hosts) enters a host by its HostPid: its children then have the host's name, its /etc/hosts,
// its mount namespace.
TEST_F(EmulatedClusterTest, AProcessStartedElsewhereEntersAHostByItsPid) {
  auto cluster = Make(Hosts(2, 10'000'000'000, {{1, {"the-service"}}}));
  ASSERT_TRUE(cluster);
  const pid_t host_pid = cluster->HostPid(1);
  const pid_t child = fork();
  if (child == 0) {
    // Single-threaded here, as EnterEmulatedHost requires.
    if (!EnterEmulatedHost(host_pid).ok()) _exit(10);
    const pid_t on_host = fork();
    if (on_host == 0) {
      char name[64] = {};
      gethostname(name, sizeof(name) - 1);
      if (std::string(name) != "host-1") _exit(11);
      // The host's /etc/hosts names its aliases.
      const CommandResult hosts = RunCommand("grep -c the-service /etc/hosts");
      _exit(hosts.exit_code == 0 ? 0 : 12);
    }
    int status = 0;
    waitpid(on_host, &status, 0);
    _exit(WIFEXITED(status) ? WEXITSTATUS(status) : 14);
  }
  ASSERT_GT(child, 0);
  EXPECT_EQ(WaitForChildOrSignal(child, 20s, SIGKILL), 0)
      << "10: entering failed, 11: wrong host name, 12: no alias in /etc/hosts, 14: killed";
  // Entering the host of a process that is not one fails, naming what it could not open.
  const Status bad = EnterEmulatedHost(999999999);
  EXPECT_FALSE(bad.ok());
  EXPECT_NE(bad.ToString().find("/proc/999999999/ns/net"), std::string::npos) << bad.ToString();
}

TEST_F(EmulatedClusterTest, AHostSeesNeitherAnotherHostsProcessesNorItsLoopback) {
  auto cluster = Make(Hosts(2));
  ASSERT_NE(cluster, nullptr);
  auto sleeper = cluster->Start(1, "exec sleep 61.25");
  ASSERT_TRUE(sleeper.ok()) << sleeper.status().ToString();
  EXPECT_TRUE(ProcessAlive((*sleeper)->pid()));
  const std::string list_commands =
      "for f in /proc/[0-9]*/cmdline; do tr '\\0' ' ' < $f; echo; done";
  ASSERT_TRUE(WaitUntil(
      [&] {
        return cluster->Run(1, list_commands, 10s).output.find("sleep 61.25") != std::string::npos;
      },
      10s))
      << "host-1 does not see its own sleep";
  EXPECT_EQ(cluster->Run(0, list_commands, 10s).output.find("sleep 61.25"), std::string::npos)
      << "host-0 sees host-1's process";

  // The listener takes connections on every address of host-1, its loopback included.
  auto listener = Listen(cluster.get(), 1, "listen 7001");
  ASSERT_NE(listener, nullptr);
  const CommandResult own = cluster->Run(1, kProbe + " send 127.0.0.1 7001 1000 5000", 20s);
  EXPECT_EQ(own.exit_code, 0) << own.output;
  const CommandResult other = cluster->Run(0, kProbe + " send 127.0.0.1 7001 1000 5000", 20s);
  EXPECT_NE(other.exit_code, 0) << "host-0 reached host-1's loopback: " << other.output;
}

TEST_F(EmulatedClusterTest, ShapingLimitsATcpTransfer) {
  auto cluster = Make(Hosts(2, 50'000'000));
  ASSERT_NE(cluster, nullptr);
  auto listener = Listen(cluster.get(), 1, "listen 7002");
  ASSERT_NE(listener, nullptr);
  // 6 MB at 50 Mbit/s: about 1 s. A loaded machine only makes it slower.
  const CommandResult shaped = cluster->Run(0, kProbe + " send host-1 7002 6000000 60000", 90s);
  ASSERT_EQ(shaped.exit_code, 0) << shaped.output;
  const double shaped_rate = MbitPerSecond(shaped.output);
  EXPECT_GT(shaped_rate, 0) << shaped.output;
  EXPECT_LT(shaped_rate, 100) << shaped.output;

  ASSERT_TRUE(cluster->SetRate(0, 10'000'000'000).ok());
  ASSERT_TRUE(cluster->SetRate(1, 10'000'000'000).ok());
  const CommandResult fast = cluster->Run(0, kProbe + " send host-1 7002 6000000 60000", 90s);
  ASSERT_EQ(fast.exit_code, 0) << fast.output;
  std::printf("shaped to 50 Mbit/s: %.1f Mbit/s; at 10 Gbit/s: %.1f Mbit/s\n", shaped_rate,
              MbitPerSecond(fast.output));
  EXPECT_GT(MbitPerSecond(fast.output), 2 * shaped_rate)
      << "unshaped: " << fast.output << "shaped: " << shaped.output;
}

TEST_F(EmulatedClusterTest, CutOffBlocksAndRestoreHeals) {
  auto cluster = Make(Hosts(2));
  ASSERT_NE(cluster, nullptr);
  auto listener = Listen(cluster.get(), 1, "listen 7003");
  ASSERT_NE(listener, nullptr);
  const std::string send = kProbe + " send host-1 7003 10000 1500";
  ASSERT_EQ(cluster->Run(0, send, 20s).exit_code, 0);

  ASSERT_TRUE(cluster->CutOff(1).ok());
  const CommandResult cut = cluster->Run(0, send, 20s);
  EXPECT_NE(cut.exit_code, 0) << "reached a host that was cut off: " << cut.output;
  // The host's own loopback still works.
  EXPECT_EQ(cluster->Run(1, kProbe + " send 127.0.0.1 7003 10000 1500", 20s).exit_code, 0);

  ASSERT_TRUE(cluster->Restore(1).ok());
  EXPECT_TRUE(WaitUntil([&] { return cluster->Run(0, send, 20s).exit_code == 0; }, 30s, 100ms))
      << "host-1 stayed unreachable after Restore";
}

TEST_F(EmulatedClusterTest, LossDropsRoughlyTheFraction) {
  auto cluster = Make(Hosts(2));
  ASSERT_NE(cluster, nullptr);
  auto received = [&](int port, int count) -> long {
    auto sink = Listen(cluster.get(), 1, "udp-sink " + std::to_string(port) + " 1000");
    if (sink == nullptr) return -1;
    const CommandResult sent = cluster->Run(
        0, kProbe + " udp-send host-1 " + std::to_string(port) + " " + std::to_string(count), 60s);
    EXPECT_EQ(sent.exit_code, 0) << sent.output;
    EXPECT_NE(sink->Wait(60s), -1) << "the UDP sink did not end: " << sink->Output();
    std::smatch match;
    const std::string output = sink->Output();
    if (!std::regex_search(output, match, std::regex(R"(received ([0-9]+))"))) return -1;
    return std::stol(match[1]);
  };
  const long without_loss = received(7004, 1000);
  EXPECT_GE(without_loss, 970) << "datagrams lost without loss set";

  ASSERT_TRUE(cluster->SetLoss(1, 0.3).ok());
  const long with_loss = received(7005, 3000);
  std::printf("received %ld of 1000 without loss, %ld of 3000 with 30%% loss\n", without_loss,
              with_loss);
  // 30% loss of 3000: 2100 expected, with a standard deviation of 25.
  EXPECT_GT(with_loss, 1800);
  EXPECT_LT(with_loss, 2400);

  ASSERT_TRUE(cluster->Restore(1).ok());
  EXPECT_GE(received(7006, 1000), 970) << "datagrams lost after Restore";
}

TEST_F(EmulatedClusterTest, TeardownLeavesNothing) {
  std::string prefix;
  // Outlives the cluster on purpose: the teardown must end the command, not its handle.
  std::unique_ptr<HostProcess> sleeper;
  {
    auto cluster = Make(Hosts(3));
    ASSERT_NE(cluster, nullptr);
    prefix = cluster->name_prefix();
    EXPECT_EQ(NamespacesWithPrefix(prefix).size(), 4u);  // three hosts and the switch
    auto started = cluster->Start(2, "sleep 300 & wait");
    ASSERT_TRUE(started.ok()) << started.status().ToString();
    sleeper = std::move(started).value();
  }
  EXPECT_TRUE(NamespacesWithPrefix(prefix).empty());
  EXPECT_FALSE(std::filesystem::exists("/tmp/" + prefix));
  EXPECT_NE(sleeper->Wait(10s), -1) << "a host's command outlived the cluster";
  EXPECT_FALSE(ProcessAlive(sleeper->pid()));
}

TEST_F(EmulatedClusterTest, ASweepRemovesWhatAKilledRunLeft) {
  int report[2];
  ASSERT_EQ(pipe(report), 0);
  const pid_t run = fork();
  ASSERT_GE(run, 0);
  if (run == 0) {
    close(report[0]);
    auto cluster = EmulatedCluster::Create(Hosts(2));
    if (!cluster.ok()) _exit(1);
    auto sleeper = (*cluster)->Start(1, "sleep 300");
    if (!sleeper.ok()) _exit(1);
    const std::string line =
        (*cluster)->name_prefix() + " " + std::to_string((*sleeper)->pid()) + "\n";
    [[maybe_unused]] ssize_t written = write(report[1], line.data(), line.size());
    pause();
    _exit(0);
  }
  close(report[1]);
  std::string line;
  char buffer[256];
  ssize_t got;
  while (line.find('\n') == std::string::npos &&
         (got = read(report[0], buffer, sizeof(buffer))) > 0) {
    line.append(buffer, static_cast<size_t>(got));
  }
  close(report[0]);
  kill(run, SIGKILL);
  waitpid(run, nullptr, 0);
  ASSERT_NE(line.find(' '), std::string::npos) << "the killed run never set up its cluster";
  const std::string prefix = line.substr(0, line.find(' '));
  const pid_t sleeper_pid = static_cast<pid_t>(std::stol(line.substr(line.find(' ') + 1)));

  // Its hosts' processes die with it; its namespaces stay until a sweep.
  EXPECT_TRUE(WaitUntil([&] { return !ProcessAlive(sleeper_pid); }, 10s))
      << "a host's process outlived the killed run";
  EXPECT_EQ(NamespacesWithPrefix(prefix).size(), 3u);
  SweepEmulatedHostLeftovers();
  EXPECT_TRUE(NamespacesWithPrefix(prefix).empty());
  EXPECT_FALSE(std::filesystem::exists("/tmp/" + prefix));
}

// tools/run_on_hosts, what benchmark scripts use: command i on host-i, outputs under headers, the
// exit status saying whether all succeeded, the hosts gone after.
TEST_F(EmulatedClusterTest, RunOnHostsRunsCommandIOnHostIAndRemovesTheHosts) {
  CommandResult result = RunCommand(kRunOnHosts +
                                    " --alias 1=trainer-worker-1 -- hostname "
                                    "'getent hosts trainer-worker-1 && hostname'");
  EXPECT_EQ(result.exit_code, 0) << result.output;
  EXPECT_NE(result.output.find("== host-0 (exit 0)\nhost-0\n"), std::string::npos) << result.output;
  EXPECT_NE(result.output.find("== host-1 (exit 0)\n10.77.0.2"), std::string::npos)
      << result.output;
  EXPECT_NE(result.output.find("host-1\n"), std::string::npos) << result.output;

  result = RunCommand(kRunOnHosts + " -- true 'exit 7'");
  EXPECT_EQ(result.exit_code, 1) << result.output;
  EXPECT_NE(result.output.find("== host-1 (exit 7)"), std::string::npos) << result.output;

  result = RunCommand(kRunOnHosts + " --timeout 1 -- 'sleep 60'");
  EXPECT_EQ(result.exit_code, 1) << result.output;
  EXPECT_NE(result.output.find("ran past --timeout"), std::string::npos) << result.output;
  // Every namespace run_on_hosts made names it as owner, and it is gone.
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator("/run/netns", error)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("cohort-emu-", 0) != 0) continue;
    const pid_t owner = static_cast<pid_t>(std::stol(name.substr(std::strlen("cohort-emu-"))));
    EXPECT_TRUE(ProcessAlive(owner)) << name << " outlived its owner";
  }
}

}  // namespace
}  // namespace cohort::testing
