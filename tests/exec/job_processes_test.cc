// Finding a job's processes by its secret, and killing only those.
#include "exec/job_processes.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <string>

#include "testing/processes.h"
#include "testing/wait.h"

namespace cohort::exec {
namespace {

using namespace std::string_literals;

TEST(EnvironmentCarriesSecretTest, MatchesTheWholeVariableOnly) {
  const std::string environment = "PATH=/bin\0COHORT_JOB_SECRET=abc123\0HOME=/root\0"s;
  EXPECT_TRUE(EnvironmentCarriesSecret(environment, "abc123"));
  EXPECT_FALSE(EnvironmentCarriesSecret(environment, "abc"));
  EXPECT_FALSE(EnvironmentCarriesSecret(environment, "abc1234"));
  EXPECT_FALSE(EnvironmentCarriesSecret(environment, ""));
  EXPECT_FALSE(EnvironmentCarriesSecret("X_COHORT_JOB_SECRET=abc123\0"s, "abc123"));
  // The last variable need not end with a NUL.
  EXPECT_TRUE(EnvironmentCarriesSecret("A=1\0COHORT_JOB_SECRET=abc123"s, "abc123"));
}

// Starts `sleep 60` with `environment` as its whole environment.
pid_t StartSleeper(const std::string& environment_entry) {
  pid_t pid = fork();
  if (pid == 0) {
    char* argv[] = {const_cast<char*>("sleep"), const_cast<char*>("60"), nullptr};
    char* environment[] = {const_cast<char*>(environment_entry.c_str()), nullptr};
    execve("/bin/sleep", argv, environment);
    _exit(127);
  }
  return pid;
}

TEST(KillJobProcessesTest, KillsTheProcessesWithTheSecretAndNoOther) {
  const std::string secret = "test-secret-" + std::to_string(getpid());
  const pid_t ours = StartSleeper("COHORT_JOB_SECRET=" + secret);
  const pid_t other = StartSleeper("COHORT_JOB_SECRET=" + secret + "-other");
  ASSERT_GT(ours, 0);
  ASSERT_GT(other, 0);
  // execve has happened once /proc shows the new environment.
  ASSERT_TRUE(testing::WaitUntil(
      [&] {
        std::vector<pid_t> found = FindJobProcesses(secret);
        return std::find(found.begin(), found.end(), ours) != found.end();
      },
      std::chrono::seconds(10)));
  EXPECT_EQ(FindJobProcesses(secret), std::vector<pid_t>{ours});

  StatusOr<int> killed = KillJobProcesses(secret, std::chrono::seconds(5));
  ASSERT_TRUE(killed.ok()) << killed.status().ToString();
  EXPECT_EQ(*killed, 1);
  int wait_status = 0;
  ASSERT_EQ(waitpid(ours, &wait_status, 0), ours);
  EXPECT_TRUE(WIFSIGNALED(wait_status) && WTERMSIG(wait_status) == SIGKILL);
  EXPECT_TRUE(testing::ProcessAlive(other));
  kill(other, SIGKILL);
  waitpid(other, &wait_status, 0);
  // Nothing left: nothing to kill.
  killed = KillJobProcesses(secret, std::chrono::seconds(1));
  ASSERT_TRUE(killed.ok());
  EXPECT_EQ(*killed, 0);
}

}  // namespace
}  // namespace cohort::exec
