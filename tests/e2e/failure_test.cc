// Failure tests: the supervisor itself is killed or interrupted, for real.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <nlohmann/json.hpp>
#include <sstream>

#include "testing/cohort_runner.h"
#include "testing/wait.h"

namespace cohort::testing {
namespace {

using ::testing::HasSubstr;

// Waits until replica.sh has written the pids of `count` replicas.
std::map<std::string, pid_t> WaitForReplicas(const CohortSandbox& sandbox, size_t count) {
  std::map<std::string, pid_t> pids;
  const bool started = WaitUntil(
      [&] {
        pids = sandbox.ReplicaPids();
        return pids.size() >= count && std::all_of(pids.begin(), pids.end(), [](const auto& entry) {
                 return entry.second > 0;
               });
      },
      std::chrono::seconds(20));
  if (!started) ADD_FAILURE() << "timed out waiting for " << count << " replicas to start";
  return pids;
}

bool WaitUntilGone(pid_t pid, std::chrono::seconds timeout) {
  return WaitUntil([pid] { return !ProcessAlive(pid); }, timeout);
}

// The last condition of the job's status.json, read directly (no `cohort` command, since any of
// them would mark the job Failed itself), once it is Failed; null if it is not within `timeout`.
nlohmann::json WaitForFailedCondition(const std::filesystem::path& status_file,
                                      std::chrono::seconds timeout) {
  nlohmann::json failed = nullptr;
  WaitUntil(
      [&] {
        nlohmann::json status = nlohmann::json::parse(ReadText(status_file), nullptr, false);
        if (status.is_object() && status.contains("conditions") && !status["conditions"].empty() &&
            status["conditions"].back().value("type", "") == "Failed") {
          failed = status["conditions"].back();
          return true;
        }
        return false;
      },
      timeout);
  return failed;
}

// What only the watchdog does: when the supervisor is SIGKILLed it kills every replica's whole
// process group (PR_SET_PDEATHSIG reaches only the replica process itself, not what it started)
// and marks the job Failed at once, before any command looks at it.
TEST(SupervisorFailureTest, KilledSupervisorLeavesAFailedJobAndNoReplicas) {
  CohortSandbox sandbox;
  std::map<std::string, std::string> environment = {{"SLEEP_SECONDS", "120"},
                                                    {"BACKGROUND_CHILD_SECONDS", "120"}};
  std::string manifest = Manifest("orphan", ReplicaSpec("Worker", 2, "Never", environment) +
                                                ReplicaSpec("PS", 1, "Always", environment));
  ASSERT_EQ(sandbox.Cohort({"submit", sandbox.WriteFile("job.yaml", manifest).string()}).exit_code,
            0);
  std::map<std::string, pid_t> replicas = WaitForReplicas(sandbox, 3);
  ASSERT_EQ(replicas.size(), 3u);
  std::map<std::string, pid_t> children = sandbox.BackgroundChildPids();
  ASSERT_EQ(children.size(), 3u);
  for (const auto& [replica, pid] : children) ASSERT_TRUE(ProcessAlive(pid)) << replica;

  std::filesystem::path job_directory = sandbox.home() / "jobs" / "default" / "orphan";
  pid_t supervisor = std::atoi(ReadText(job_directory / "supervisor.pid").c_str());
  ASSERT_GT(supervisor, 0);
  ASSERT_EQ(kill(supervisor, SIGKILL), 0);

  nlohmann::json failed =
      WaitForFailedCondition(job_directory / "status.json", std::chrono::seconds(10));
  ASSERT_TRUE(failed.is_object()) << "the watchdog did not mark the job Failed: "
                                  << ReadText(job_directory / "status.json");
  EXPECT_EQ(failed["reason"], "TFJobFailed");
  EXPECT_EQ(failed["message"],
            "TFJob default/orphan has failed because its Cohort supervisor (pid " +
                std::to_string(supervisor) +
                ") died before the job finished; its watchdog killed the "
                "replicas' process groups.");
  for (const auto& [replica, pid] : replicas) {
    EXPECT_TRUE(WaitUntilGone(pid, std::chrono::seconds(10))) << replica << " survived";
  }
  for (const auto& [replica, pid] : children) {
    EXPECT_TRUE(WaitUntilGone(pid, std::chrono::seconds(10)))
        << "the background child of " << replica << " survived";
  }

  CommandResult wait = sandbox.Cohort({"wait", "orphan", "--timeout", "10"});
  EXPECT_EQ(wait.exit_code, 1) << wait.output;
  CommandResult describe = sandbox.Cohort({"describe", "orphan"});
  EXPECT_THAT(describe.output, HasSubstr("has failed because its Cohort supervisor (pid " +
                                         std::to_string(supervisor) + ") died"));
  EXPECT_THAT(describe.output, HasSubstr("SupervisorLost"));
  EXPECT_THAT(sandbox.Cohort({"get", "orphan"}).output, HasSubstr("Failed"));
  // Why it ended is one `get -o wide` away.
  CommandResult wide = sandbox.Cohort({"get", "orphan", "-o", "wide"});
  EXPECT_THAT(wide.output, HasSubstr("MESSAGE"));
  EXPECT_THAT(wide.output,
              HasSubstr("has failed because its Cohort supervisor (pid " +
                        std::to_string(supervisor) + ") died before the job finished"));
}

// The children of `parent` (read from /proc/PID/stat), excluding `excluded`.
std::vector<pid_t> ChildrenOf(pid_t parent, const std::map<std::string, pid_t>& excluded) {
  std::vector<pid_t> children;
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator("/proc", error)) {
    const std::string name = entry.path().filename().string();
    if (name.empty() || !std::all_of(name.begin(), name.end(), ::isdigit)) continue;
    const std::string stat = ReadText(entry.path() / "stat");
    const size_t paren = stat.rfind(')');
    if (paren == std::string::npos) continue;
    std::istringstream fields(stat.substr(paren + 2));
    std::string state;
    pid_t parent_pid = 0;
    fields >> state >> parent_pid;
    const pid_t pid = static_cast<pid_t>(std::stol(name));
    const bool replica = std::any_of(excluded.begin(), excluded.end(),
                                     [pid](const auto& entry) { return entry.second == pid; });
    if (parent_pid == parent && !replica && state != "Z") children.push_back(pid);
  }
  return children;
}

// Issue 17: with the supervisor and its watchdog both SIGKILLed, nothing stops the shell
// replica's background child (PR_SET_PDEATHSIG kills only the replica itself). `cohort delete`
// finds it by the job's secret and kills it before it says "deleted".
TEST(SupervisorFailureTest, DeleteKillsWhatIsLeftWhenSupervisorAndWatchdogBothDied) {
  CohortSandbox sandbox;
  std::map<std::string, std::string> environment = {{"SLEEP_SECONDS", "120"},
                                                    {"BACKGROUND_CHILD_SECONDS", "120"}};
  std::string manifest = Manifest("leftover", ReplicaSpec("Worker", 1, "Never", environment));
  ASSERT_EQ(sandbox.Cohort({"submit", sandbox.WriteFile("job.yaml", manifest).string()}).exit_code,
            0);
  std::map<std::string, pid_t> replicas = WaitForReplicas(sandbox, 1);
  ASSERT_EQ(replicas.size(), 1u);
  std::map<std::string, pid_t> children = sandbox.BackgroundChildPids();
  ASSERT_EQ(children.size(), 1u);
  const pid_t child = children.begin()->second;
  ASSERT_TRUE(ProcessAlive(child));

  std::filesystem::path job_directory = sandbox.home() / "jobs" / "default" / "leftover";
  pid_t supervisor = std::atoi(ReadText(job_directory / "supervisor.pid").c_str());
  ASSERT_GT(supervisor, 0);
  // The supervisor's one child that is not a replica is its watchdog.
  std::vector<pid_t> watchdogs = ChildrenOf(supervisor, replicas);
  ASSERT_EQ(watchdogs.size(), 1u);
  ASSERT_EQ(kill(watchdogs[0], SIGKILL), 0);
  ASSERT_TRUE(WaitUntilGone(watchdogs[0], std::chrono::seconds(10)));
  ASSERT_EQ(kill(supervisor, SIGKILL), 0);
  ASSERT_TRUE(WaitUntilGone(supervisor, std::chrono::seconds(10)));
  // The replica itself dies with its supervisor; its child lives on, as the issue reported.
  EXPECT_TRUE(WaitUntilGone(replicas.begin()->second, std::chrono::seconds(10)));
  ASSERT_TRUE(ProcessAlive(child));

  CommandResult deleted = sandbox.Cohort({"delete", "leftover"});
  EXPECT_EQ(deleted.exit_code, 0) << deleted.output;
  EXPECT_THAT(deleted.output, HasSubstr("deleted"));
  EXPECT_FALSE(ProcessAlive(child)) << "the replica's child survived cohort delete";
  EXPECT_FALSE(std::filesystem::exists(job_directory));
}

// The same leftovers, found by the first command that notices the lost supervisor (here `get`),
// are killed then, and the job's message says so.
TEST(SupervisorFailureTest, ALostSupervisorsLeftoversAreKilledWhenNoticed) {
  CohortSandbox sandbox;
  std::map<std::string, std::string> environment = {{"SLEEP_SECONDS", "120"},
                                                    {"BACKGROUND_CHILD_SECONDS", "120"}};
  std::string manifest = Manifest("noticed", ReplicaSpec("Worker", 1, "Never", environment));
  ASSERT_EQ(sandbox.Cohort({"submit", sandbox.WriteFile("job.yaml", manifest).string()}).exit_code,
            0);
  std::map<std::string, pid_t> replicas = WaitForReplicas(sandbox, 1);
  ASSERT_EQ(replicas.size(), 1u);
  std::map<std::string, pid_t> children = sandbox.BackgroundChildPids();
  ASSERT_EQ(children.size(), 1u);
  const pid_t child = children.begin()->second;
  std::filesystem::path job_directory = sandbox.home() / "jobs" / "default" / "noticed";
  pid_t supervisor = std::atoi(ReadText(job_directory / "supervisor.pid").c_str());
  std::vector<pid_t> watchdogs = ChildrenOf(supervisor, replicas);
  ASSERT_EQ(watchdogs.size(), 1u);
  ASSERT_EQ(kill(watchdogs[0], SIGKILL), 0);
  ASSERT_TRUE(WaitUntilGone(watchdogs[0], std::chrono::seconds(10)));
  ASSERT_EQ(kill(supervisor, SIGKILL), 0);
  ASSERT_TRUE(WaitUntilGone(supervisor, std::chrono::seconds(10)));

  CommandResult get = sandbox.Cohort({"get", "noticed", "-o", "wide"});
  // The child, and maybe a `sleep 0.1` of the replica's loop not yet ended.
  EXPECT_THAT(get.output, HasSubstr("left of its replicas and killed"));
  EXPECT_FALSE(ProcessAlive(child)) << "the replica's child survived";
}

TEST(SupervisorFailureTest, InterruptStopsTheJobCleanly) {
  CohortSandbox sandbox;
  std::string manifest =
      Manifest("interrupted", ReplicaSpec("Worker", 2, "OnFailure", {{"SLEEP_SECONDS", "120"}}));
  std::filesystem::path output = sandbox.root() / "run-output.txt";
  pid_t run =
      sandbox.StartCohort({"run", sandbox.WriteFile("job.yaml", manifest).string()}, output);
  std::map<std::string, pid_t> replicas = WaitForReplicas(sandbox, 2);
  ASSERT_EQ(kill(run, SIGINT), 0);
  EXPECT_EQ(WaitForChild(run, std::chrono::seconds(20)), 1) << ReadText(output);
  for (const auto& [replica, pid] : replicas) EXPECT_FALSE(ProcessAlive(pid)) << replica;
  EXPECT_THAT(ReadText(output), HasSubstr("got SIGTERM"));
  CommandResult get = sandbox.Cohort({"get", "interrupted", "-o", "yaml"});
  EXPECT_THAT(get.output, HasSubstr("was stopped by the user (Ctrl-C) before it finished."));
}

}  // namespace
}  // namespace cohort::testing
