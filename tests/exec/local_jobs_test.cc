// LocalJobs with real processes: stopping a replica's process group, and the job secret.
#include "exec/local_jobs.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <regex>
#include <thread>

#include "exec/replica_environment.h"
#include "exec_test_support.h"
#include "job/reconciler.h"

namespace cohort::exec {
namespace {

using ::testing::HasSubstr;

// Prepares `job` in `store` and supervises it to the end, as `cohort run` does.
StatusOr<job::JobStatus> RunJob(LocalJobs& jobs, const job::Job& job) {
  StatusOr<CreatedJob> created = jobs.Create(job, ImageMap());
  if (!created.ok()) return created.status();
  return jobs.Supervise(std::move(*created), ImageMap());
}

double SecondsSinceEpoch(Time time) {
  return std::chrono::duration<double>(time.time_since_epoch()).count();
}

// The replica answers SIGTERM but keeps running; its background child ignores SIGTERM. Only the
// SIGKILL to the whole process group, once the grace period is over, ends them both.
TEST(LocalJobsTest, StopSendsTermThenKillsTheWholeGroupAfterTheGracePeriod) {
  ScratchDirectory home;
  LocalJobs jobs(home.path());
  JobStore& store = jobs.store();
  std::string child_pid_file = (home.path() / "child.pid").string();
  std::string script =
      "trap \"echo got TERM at \\$(date +%s.%N)\" TERM; "
      "sh -c \"trap \\\"\\\" TERM; echo \\$\\$ > " +
      child_pid_file +
      "; while true; do sleep 0.05; done\" & "
      "while true; do sleep 0.05; done";
  constexpr int kGraceSeconds = 2;
  // The start time is kept in whole seconds, so a deadline of 2 s fires after more than 1 s: time
  // for the replica to set its trap and start its child before the SIGTERM.
  job::Job job = ShellJob("stubborn", 1, script, "{activeDeadlineSeconds: 2}", kGraceSeconds);

  StatusOr<job::JobStatus> status = RunJob(jobs, job);
  double finished_at = SecondsSinceEpoch(Clock::now());
  ASSERT_TRUE(status.ok()) << status.status().ToString();
  EXPECT_TRUE(job::IsFailed(*status));
  EXPECT_THAT(status->conditions.back().message,
              HasSubstr("active longer than specified deadline"));

  std::string log = ReadWhole(store.LogPath({"default", "stubborn"}, "worker-0"));
  std::smatch term;
  ASSERT_TRUE(std::regex_search(log, term, std::regex("got TERM at ([0-9.]+)"))) << log;
  double term_at = std::stod(term[1].str());
  // SIGKILL came no earlier than the grace period after SIGTERM (the replica's own clock reading
  // lags the signal a little, hence the slack).
  EXPECT_GE(finished_at - term_at, kGraceSeconds - 0.3) << log;
  EXPECT_LT(finished_at - term_at, kGraceSeconds + 5.0) << log;

  pid_t child = std::atoi(ReadWhole(child_pid_file).c_str());
  ASSERT_GT(child, 0);
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  while (ProcessRuns(child) && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_FALSE(ProcessRuns(child)) << "the replica's child that ignores SIGTERM survived";
}

// Two jobs of one manifest under different names write where $(COHORT_JOB_NAME) puts them, each in
// a directory of its own; `delete --purge` of one removes its state and that directory, and
// leaves the other's.
TEST(LocalJobsTest, JobsOfDifferentNamesWriteApartAndPurgeRemovesOnlyItsOwn) {
  ScratchDirectory home;
  LocalJobs jobs(home.path());
  const std::filesystem::path out = home.path() / "out";
  const auto job_named = [&](const std::string& name) {
    return JobFromYaml("apiVersion: kubeflow.org/v1\nkind: TFJob\nmetadata: {name: " + name +
                       "}\nspec:\n  tfReplicaSpecs:\n    Worker:\n      template:\n        spec:\n"
                       "          containers:\n            - name: tensorflow\n"
                       "              image: test\n"
                       "              command: [/bin/sh, -c, 'mkdir -p \"$0/ckpt\" && echo "
                       "\"$1\" > \"$0/ckpt/step\"', " +
                       (out / "$(COHORT_JOB_NAME)").string() + ", $(COHORT_JOB_NAME)]\n");
  };
  for (const std::string name : {"taxi-2", "taxi-3"}) {
    StatusOr<job::JobStatus> status = RunJob(jobs, job_named(name));
    ASSERT_TRUE(status.ok()) << status.status().ToString();
    ASSERT_TRUE(job::IsSucceeded(*status)) << name;
    EXPECT_EQ(ReadWhole(out / name / "ckpt" / "step"), name + "\n");
  }
  std::vector<std::filesystem::path> removed;
  Status purged = jobs.DeleteAndPurge(
      {"default", "taxi-2"}, [&](const std::filesystem::path& path) { removed.push_back(path); });
  ASSERT_TRUE(purged.ok()) << purged.ToString();
  EXPECT_THAT(removed, ::testing::ElementsAre(out / "taxi-2"));
  EXPECT_FALSE(std::filesystem::exists(out / "taxi-2"));
  EXPECT_FALSE(jobs.store().Exists({"default", "taxi-2"}));
  EXPECT_EQ(ReadWhole(out / "taxi-3" / "ckpt" / "step"), "taxi-3\n");
  EXPECT_TRUE(jobs.store().Exists({"default", "taxi-3"}));
  EXPECT_EQ(jobs.DeleteAndPurge({"default", "taxi-2"}, [](const auto&) {}).code(),
            Status::Code::kNotFound);
}

TEST(LocalJobsTest, EveryJobGetsItsOwnSecret) {
  ScratchDirectory home;
  LocalJobs jobs(home.path());
  JobStore& store = jobs.store();
  std::string secrets[2];
  for (int i = 0; i < 2; ++i) {
    std::string name = "secret-" + std::to_string(i);
    StatusOr<job::JobStatus> status =
        RunJob(jobs, ShellJob(name, 1, "echo \"secret=$COHORT_JOB_SECRET\""));
    ASSERT_TRUE(status.ok()) << status.status().ToString();
    ASSERT_TRUE(job::IsSucceeded(*status));
    std::string log = ReadWhole(store.LogPath({"default", name}, "worker-0"));
    std::smatch secret;
    ASSERT_TRUE(std::regex_search(log, secret, std::regex("secret=([0-9a-f]*)\n"))) << log;
    secrets[i] = secret[1].str();
    EXPECT_EQ(secrets[i].size(), 64u) << log;  // 32 random bytes in hex
    std::filesystem::path secret_file = store.JobDirectory({"default", name}) / "secret";
    EXPECT_EQ(ReadWhole(secret_file), secrets[i]);
    EXPECT_EQ(std::filesystem::status(secret_file).permissions(),
              std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
  }
  EXPECT_NE(secrets[0], secrets[1]);
}

// A finished job whose TTL has run out is deleted by the first command that looks at it; one
// whose TTL has not is left alone.
TEST(LocalJobsTest, TidyDeletesAFinishedJobOnceItsTtlHasRunOut) {
  ScratchDirectory home;
  LocalJobs jobs(home.path());
  Time now = Clock::now();
  for (const auto& [name, finished_seconds_ago] : {std::pair{"expired", 20}, {"fresh", 2}}) {
    StatusOr<CreatedJob> created =
        jobs.Create(ShellJob(name, 1, "true", "{ttlSecondsAfterFinished: 10}"), ImageMap());
    ASSERT_TRUE(created.ok()) << created.status().ToString();
    job::JobStatus status;
    Time finished = now - std::chrono::seconds(finished_seconds_ago);
    job::SetCondition(status, job::kConditionSucceeded, "True", "TFJobSucceeded", "done", finished);
    status.completion_time = finished;
    ASSERT_TRUE(jobs.store().WriteStatus(created->key, status).ok());
  }  // each job's lock is let go: its supervisor has exited
  StatusOr<std::vector<JobKey>> present = jobs.Lookup("", "default", false);
  ASSERT_TRUE(present.ok()) << present.status().ToString();
  ASSERT_EQ(present->size(), 1u);
  EXPECT_EQ((*present)[0].name, "fresh");
  EXPECT_FALSE(jobs.store().Exists({"default", "expired"}));
}

TEST(ReplicaEnvironmentTest, SetsTheJobIdentityAndSecretOverInheritedValues) {
  setenv("COHORT_JOB_SECRET", "inherited", 1);
  setenv("TF_CONFIG", "inherited", 1);
  job::Job job = ShellJob("identity", 2, "true");
  std::map<std::string, std::string> environment =
      ReplicaEnvironment(job, "Worker", 1, {{"worker-0", 4000}, {"worker-1", 4001}}, "s3cret");
  EXPECT_EQ(environment["COHORT_JOB_SECRET"], "s3cret");
  EXPECT_EQ(environment["COHORT_JOB_NAME"], "identity");
  EXPECT_EQ(environment["COHORT_REPLICA_TYPE"], "worker");
  EXPECT_EQ(environment["COHORT_REPLICA_INDEX"], "1");
  EXPECT_EQ(environment["TF_CONFIG"],
            R"({"cluster":{"worker":["localhost:4000","localhost:4001"]},)"
            R"("task":{"type":"worker","index":1},"environment":"cloud"})");
  unsetenv("COHORT_JOB_SECRET");
  unsetenv("TF_CONFIG");
}

// A replica writes its last words only where its own executor says (local_process_backend.h),
// never into a file named in the environment that started `cohort`.
TEST(ReplicaEnvironmentTest, DropsAnInheritedTerminationMessagePath) {
  setenv("COHORT_TERMINATION_MESSAGE_PATH", "/tmp/inherited-termination-log", 1);
  job::Job job = ShellJob("messages", 1, "true");
  std::map<std::string, std::string> environment =
      ReplicaEnvironment(job, "Worker", 0, {{"worker-0", 4000}}, "s3cret");
  EXPECT_EQ(environment.count("COHORT_TERMINATION_MESSAGE_PATH"), 0u);
  unsetenv("COHORT_TERMINATION_MESSAGE_PATH");
}

// Likewise its TensorBoard directory (cluster/summary_location.h): a `cohort run` started inside
// a replica must not hand its own replicas the outer replica's directory.
TEST(ReplicaEnvironmentTest, DropsAnInheritedSummaryDirectory) {
  setenv("COHORT_SUMMARY_DIR", "/tmp/inherited-summaries", 1);
  job::Job job = ShellJob("summaries", 1, "true");
  std::map<std::string, std::string> environment =
      ReplicaEnvironment(job, "Worker", 0, {{"worker-0", 4000}}, "s3cret");
  EXPECT_EQ(environment.count("COHORT_SUMMARY_DIR"), 0u);
  unsetenv("COHORT_SUMMARY_DIR");
}

}  // namespace
}  // namespace cohort::exec
