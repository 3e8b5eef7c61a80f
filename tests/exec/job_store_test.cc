// JobStore's files: the job directory as the name's claim.
#include "exec/job_store.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <fstream>
#include <thread>
#include <vector>

#include "exec_test_support.h"
#include "job/status_json.h"

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

// The issue's probe: replicas.json set to [{"name": 5}] made every reader throw. Every field is
// checked for its type, and the error names the job, the file and the field.
TEST(JobStoreTest, ACorruptFileIsAnErrorOfItsJobNeverAnException) {
  ScratchDirectory home;
  JobStore store(home.path());
  SupervisorLock lock;
  ASSERT_TRUE(store.CreateJob(ShellJob("corrupt", 1, "exit 0"), &lock).ok());
  const JobKey key{"default", "corrupt"};
  ASSERT_TRUE(store.Health(key).ok()) << store.Health(key).ToString();
  auto overwrite = [&](const char* file, const std::string& contents) {
    std::ofstream(store.JobDirectory(key) / file, std::ios::trunc) << contents;
  };
  overwrite("replicas.json", R"([{"name": 5}])");
  EXPECT_TRUE(store.ReadReplicas(key).empty());
  EXPECT_EQ(store.Health(key).message(),
            "job default/corrupt is broken: replicas.json: [0].name: must be a string");
  EXPECT_EQ(ReplicaTableFromJson(nlohmann::json::parse(R"([{"name": "w", "phase": "Running",
      "restarts": 1, "startedAt": "yesterday"}])"))
                .status()
                .message(),
            "[0].startedAt: must be an RFC 3339 time");
  overwrite("replicas.json", "[]");

  overwrite("status.json", R"({"conditions": 5})");
  EXPECT_THAT(store.ReadStatus(key).status().message(),
              HasSubstr("job default/corrupt is broken: status.json: "));
  overwrite("status.json", "{}");

  overwrite("endpoints.json", R"({"../../x": 2222})");
  EXPECT_THAT(store.ReadEndpoints(key).status().message(),
              HasSubstr("job default/corrupt is broken: endpoints.json: "));
  overwrite("endpoints.json", R"({"worker-0": 70000})");
  EXPECT_THAT(store.ReadEndpoints(key).status().message(),
              HasSubstr("worker-0: must be a port number (1 to 65535)"));
  overwrite("endpoints.json", R"({"worker-0": 2222})");

  overwrite("spec.json", R"({"apiVersion": "kubeflow.org/v1", "kind": "TFJob",
                              "metadata": {"labels": 5}, "spec": {}})");
  EXPECT_THAT(store.ReadSpec(key).status().message(),
              HasSubstr("job default/corrupt is broken: spec.json: metadata."));
  EXPECT_EQ(store.SpecVersion(key), 0);
  EXPECT_EQ(store.SetSuspended(key, true).code(), Status::Code::kIOError);
  // Torn event lines are left out, the others read.
  overwrite("events.jsonl",
            "{\"type\": 5}\nnot json\n" +
                job::EventToJson(job::Event{"Normal", "Created", "made", Clock::now()}).dump() +
                "\n{\"type\": \"Norm");
  StatusOr<std::vector<job::Event>> events = store.ReadEvents(key);
  ASSERT_TRUE(events.ok()) << events.status().ToString();
  ASSERT_EQ(events->size(), 1u);
  EXPECT_EQ(events->front().reason, "Created");
}

// The issue's probe: a job whose spec.json was missing could be neither listed nor deleted.
TEST(JobStoreTest, AJobWithoutItsSpecIsListedAndDeletedButAJobBeingCreatedIsNot) {
  ScratchDirectory home;
  JobStore store(home.path());
  SupervisorLock lock;
  ASSERT_TRUE(store.CreateJob(ShellJob("specless", 1, "exit 0"), &lock).ok());
  const JobKey key{"default", "specless"};
  ASSERT_TRUE(store.WriteStatus(key, job::JobStatus{}).ok());
  std::filesystem::remove(store.JobDirectory(key) / "spec.json");
  // A directory with none of a job's files is a job still being made: not listed.
  std::filesystem::create_directories(home.path() / "jobs" / "default" / "starting");
  ASSERT_EQ(store.ListJobs().size(), 1u);
  EXPECT_EQ(store.ListJobs()[0].name, "specless");
  EXPECT_EQ(store.ReadSpec(key).status().message(),
            "job default/specless is broken: spec.json: missing (delete the job with `cohort "
            "delete specless`)");
  EXPECT_FALSE(store.Health(key).ok());
  EXPECT_TRUE(store.DeleteJob(key).ok());
  EXPECT_TRUE(store.ListJobs().empty());
}

// The issue's probe: `-n ../../x` wrote a job outside $COHORT_HOME. The store refuses any key
// that is not two DNS-1123 labels, whichever entrance it came through.
TEST(JobStoreTest, KeysThatAreNotLabelsNeverNameADirectory) {
  ScratchDirectory home;
  JobStore store(home.path() / "home");
  for (const auto& [namespace_name, name] :
       std::vector<std::pair<std::string, std::string>>{{"../../x", "job"},
                                                        {"default", "../x"},
                                                        {"a/b", "job"},
                                                        {"..", "job"},
                                                        {"default", "."},
                                                        {"UPPER", "job"},
                                                        {"default", std::string(64, 'a')},
                                                        {"", "job"}}) {
    job::Job job = ShellJob("job", 1, "exit 0");
    job.metadata.namespace_name = namespace_name;
    job.metadata.name = name;
    SupervisorLock lock;
    Status created = store.CreateJob(job, &lock);
    EXPECT_EQ(created.code(), Status::Code::kInvalidArgument) << namespace_name << "/" << name;
    EXPECT_THAT(created.message(), HasSubstr("invalid "));
    EXPECT_FALSE(store.Exists({namespace_name, name}));
    EXPECT_EQ(store.DeleteJob({namespace_name, name}).code(), Status::Code::kInvalidArgument);
  }
  EXPECT_EQ(CheckName("../../x", "namespace", "-n/--namespace").message(),
            "invalid namespace \"../../x\" (from -n/--namespace): a lowercase RFC 1123 label must "
            "consist of lower case alphanumeric characters or '-', and must start and end with an "
            "alphanumeric character (e.g. 'my-name', or '123-abc')");
  EXPECT_EQ(CheckName("a\nb", "job name", "").message().substr(0, 25),
            "invalid job name \"a\\x0ab\"");
  std::error_code error;
  EXPECT_FALSE(std::filesystem::exists(home.path() / "x", error));
  EXPECT_FALSE(std::filesystem::exists(home.path() / "home" / "x", error));
  EXPECT_FALSE(std::filesystem::exists(home.path() / "home" / "jobs" / "x", error));
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
