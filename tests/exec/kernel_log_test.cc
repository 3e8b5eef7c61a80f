// Reading the kernel's OOM-kill records.
#include "exec/kernel_log.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>

namespace cohort::exec {
namespace {

TEST(KernelLogTest, ReadsTheOomKillRecordsOfEveryForm) {
  std::optional<OomKill> global = ParseOomKillRecord(
      "3,1234,23701642851,-;Out of memory: Killed process 15995 (python3) total-vm:278712kB, "
      "anon-rss:32512kB");
  ASSERT_TRUE(global.has_value());
  EXPECT_EQ(global->pid, 15995);
  EXPECT_EQ(global->at_microseconds, 23701642851);

  std::optional<OomKill> cgroup = ParseOomKillRecord(
      "3,1235,23701642900,-,caller=T15995;Memory cgroup out of memory: Killed process 42 (sh)");
  ASSERT_TRUE(cgroup.has_value());
  EXPECT_EQ(cgroup->pid, 42);

  std::optional<OomKill> summary = ParseOomKillRecord(
      "6,1233,23701642819,-;oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null),cpuset=/,"
      "task_memcg=/a/b,task=python3,pid=15995,uid=0");
  ASSERT_TRUE(summary.has_value());
  EXPECT_EQ(summary->pid, 15995);

  // Not OOM kills: the killer being invoked, other messages, torn records.
  EXPECT_FALSE(ParseOomKillRecord("4,1,5,-;python3 invoked oom-killer: gfp_mask=0xcc0"));
  EXPECT_FALSE(ParseOomKillRecord("6,2,6,-;Killed process 7 (by the user)"));
  EXPECT_FALSE(ParseOomKillRecord("Out of memory: Killed process 15995 (python3)"));
  EXPECT_FALSE(ParseOomKillRecord("3,1,x,-;Out of memory: Killed process 15995 (python3)"));
  EXPECT_FALSE(ParseOomKillRecord("3,1,5,-;Out of memory: Killed process (python3)"));
}

TEST(KernelLogTest, NoRecordNamesAProcessThatWasNotOomKilled) {
  const int64_t now = std::chrono::duration_cast<std::chrono::microseconds>(
                          std::chrono::steady_clock::now().time_since_epoch())
                          .count();
  EXPECT_FALSE(KernelLogRecordsOomKill(getpid(), now));
}

}  // namespace
}  // namespace cohort::exec
