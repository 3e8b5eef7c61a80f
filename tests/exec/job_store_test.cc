// JobStore's files: the job directory as the name's claim.
#include "exec/job_store.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <thread>
#include <vector>

#include "exec_test_support.h"

namespace cohort::exec {
namespace {

using ::testing::HasSubstr;

TEST(JobStoreTest, ASecondJobOfTheSameNameIsRefused) {
  ScratchDirectory home;
  JobStore store(home.path());
  job::Job job = ShellJob("twice", 1, "exit 0");
  SupervisorLock first;
  ASSERT_TRUE(store.CreateJob(job, &first).ok());
  SupervisorLock second;
  Status again = store.CreateJob(job, &second);
  EXPECT_EQ(again.code(), Status::Code::kAlreadyExists);
  EXPECT_THAT(again.message(), HasSubstr("cohort delete twice"));
  EXPECT_FALSE(second.held());
  ASSERT_EQ(store.ListJobs().size(), 1u);
  EXPECT_EQ(store.ListJobs()[0].name, "twice");
}

// Commands that suspend and resume one job at the same moment each count a generation: a change
// the controller has not seen always shows as a newer version.
TEST(JobStoreTest, ConcurrentSpecChangesEachCountAGeneration) {
  ScratchDirectory home;
  JobStore store(home.path());
  SupervisorLock lock;
  ASSERT_TRUE(store.CreateJob(ShellJob("busy", 1, "exit 0"), &lock).ok());
  const JobKey key{"default", "busy"};
  ASSERT_EQ(store.SpecVersion(key), 1);
  constexpr int kWriters = 4, kChangesEach = 25;
  std::vector<std::thread> writers;
  for (int writer = 0; writer < kWriters; ++writer) {
    writers.emplace_back([&store, &key, writer] {
      for (int change = 0; change < kChangesEach; ++change) {
        EXPECT_TRUE(store.SetSuspended(key, (writer + change) % 2 == 0).ok());
      }
    });
  }
  for (std::thread& writer : writers) writer.join();
  EXPECT_EQ(store.SpecVersion(key), 1 + kWriters * kChangesEach);
  StatusOr<nlohmann::json> object = store.ReadSpecObject(key);
  ASSERT_TRUE(object.ok());
  EXPECT_EQ((*object)["metadata"]["generation"], 1 + kWriters * kChangesEach);
}

// replicas.json, what `cohort describe` reads: fields of a replica that has not run or exited
// are left out, and an unchanged table is not rewritten.
TEST(JobStoreTest, TheReplicaTableRoundTripsThroughItsFile) {
  ScratchDirectory home;
  JobStore store(home.path());
  job::Job job = ShellJob("table", 2, "exit 0");
  SupervisorLock lock;
  ASSERT_TRUE(store.CreateJob(job, &lock).ok());
  JobKey key{"default", "table"};
  Time started = *ParseTime("2026-01-01T00:00:00Z");
  std::vector<ReplicaRow> rows = {
      {"worker-0", "Running", 0, 4000, 4242, std::nullopt, started, std::nullopt},
      {"worker-1", "Failed", 1, 4001, 0, 137, started, started + std::chrono::seconds(5)}};
  ASSERT_TRUE(store.WriteReplicas(key, rows).ok());
  EXPECT_EQ(ReadWhole(store.JobDirectory(key) / "replicas.json"),
            R"([
  {
    "name": "worker-0",
    "phase": "Running",
    "pid": 4242,
    "port": 4000,
    "restarts": 0,
    "startedAt": "2026-01-01T00:00:00Z"
  },
  {
    "exitCode": 137,
    "finishedAt": "2026-01-01T00:00:05Z",
    "name": "worker-1",
    "phase": "Failed",
    "port": 4001,
    "restarts": 1,
    "startedAt": "2026-01-01T00:00:00Z"
  }
]
)");
  EXPECT_EQ(store.ReadReplicas(key), rows);
  auto written = std::filesystem::last_write_time(store.JobDirectory(key) / "replicas.json");
  ASSERT_TRUE(store.WriteReplicas(key, rows).ok());
  EXPECT_EQ(std::filesystem::last_write_time(store.JobDirectory(key) / "replicas.json"), written);
  EXPECT_TRUE(store.ReadReplicas({"default", "absent"}).empty());
}

}  // namespace
}  // namespace cohort::exec
