// End-to-end tests of issue 29's probes on the job store and on what a replica leaves behind,
// through the real `cohort` binary: a corrupt file of one job never stops the others from being
// listed and served, a job without its spec can be deleted, `wait` rides out an unreadable
// status, names from flags and arguments never reach a path unchecked, and a child that left its
// replica's process group and environment ends with the replica.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include "testing/cohort_runner.h"
#include "testing/wait.h"

namespace cohort::testing {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::Not;
using namespace std::chrono_literals;

class StoreTest : public ::testing::Test {
 protected:
  std::filesystem::path JobDirectory(const std::string& name) const {
    return sandbox_.home() / "jobs" / "default" / name;
  }
  // Runs a one-worker job that succeeds at once, to completion.
  void RunQuickJob(const std::string& name) {
    const std::string file =
        sandbox_.WriteFile(name + ".yaml", Manifest(name, ReplicaSpec("Worker", 1, "Never")))
            .string();
    CommandResult run = sandbox_.Cohort({"run", file});
    ASSERT_EQ(run.exit_code, 0) << run.output;
  }
  void Overwrite(const std::filesystem::path& path, const std::string& contents) {
    std::ofstream(path, std::ios::trunc) << contents;
  }

  CohortSandbox sandbox_;
};

// The issue's probe: replicas.json of one job set to [{"name": 5}] made `get pods` and
// `describe` abort (exit 134) for every job.
TEST_F(StoreTest, ACorruptReplicaTableBreaksOnlyItsJob) {
  RunQuickJob("corrupt");
  RunQuickJob("healthy");
  Overwrite(JobDirectory("corrupt") / "replicas.json", R"([{"name": 5}])");

  CommandResult pods = sandbox_.Cohort({"get", "pods", "-A"});
  EXPECT_EQ(pods.exit_code, 0) << pods.output;
  EXPECT_THAT(pods.output, HasSubstr("healthy-worker-0"));

  CommandResult get = sandbox_.Cohort({"get", "-o", "wide"});
  EXPECT_EQ(get.exit_code, 0) << get.output;
  EXPECT_THAT(get.output, HasSubstr("Broken"));
  EXPECT_THAT(get.output, HasSubstr("job default/corrupt is broken: replicas.json: [0].name: "
                                    "must be a string"));
  EXPECT_THAT(get.output, HasSubstr("Succeeded"));

  CommandResult broken = sandbox_.Cohort({"describe", "corrupt"});
  EXPECT_EQ(broken.exit_code, 3) << broken.output;
  EXPECT_THAT(
      broken.output,
      HasSubstr("job default/corrupt is broken: replicas.json: [0].name: must be a string"));
  CommandResult served = sandbox_.Cohort({"describe", "healthy"});
  EXPECT_EQ(served.exit_code, 0) << served.output;
  EXPECT_THAT(served.output, HasSubstr("worker-0"));
}

TEST_F(StoreTest, EveryCorruptFileIsAPerJobErrorNeverACrash) {
  RunQuickJob("healthy");
  const std::vector<std::pair<std::string, std::string>> corruptions = {
      {"status.json", R"({"conditions": 5})"},
      {"status.json", "{"},
      {"spec.json", R"({"apiVersion": 1})"},
      {"spec.json", R"({"apiVersion": "kubeflow.org/v1", "kind": "TFJob", "metadata": [],
                        "spec": {}})"},
      {"endpoints.json", R"({"worker-0": "x"})"},
      {"replicas.json", R"({"name": "worker-0"})"},
      {"replicas.json", R"([{"name": "worker-0", "phase": "Running", "startedAt": 7}])"},
      {"events.jsonl", "{\"type\": 5}\nnot json\n"},
  };
  for (const auto& [file, contents] : corruptions) {
    SCOPED_TRACE(file + " = " + contents);
    RunQuickJob("victim");
    Overwrite(JobDirectory("victim") / file, contents);
    for (const std::vector<std::string>& command :
         std::vector<std::vector<std::string>>{{"get"},
                                               {"get", "-o", "wide"},
                                               {"get", "-o", "json"},
                                               {"get", "pods"},
                                               {"describe", "victim"},
                                               {"logs", "victim"},
                                               {"wait", "victim", "--timeout", "1"}}) {
      CommandResult result = sandbox_.Cohort(command);
      EXPECT_THAT(result.exit_code, ::testing::AnyOf(0, 2, 3))
          << command[0] << ": " << result.output;
      EXPECT_THAT(result.output, Not(HasSubstr("terminate called"))) << command[0];
    }
    CommandResult get = sandbox_.Cohort({"get"});
    EXPECT_EQ(get.exit_code, 0) << get.output;
    EXPECT_THAT(get.output, HasSubstr("healthy"));
    CommandResult healthy = sandbox_.Cohort({"describe", "healthy"});
    EXPECT_EQ(healthy.exit_code, 0) << healthy.output;
    CommandResult deleted = sandbox_.Cohort({"delete", "victim"});
    ASSERT_EQ(deleted.exit_code, 0) << deleted.output;
  }
}

// The issue's probe: a job whose spec.json is missing could be neither listed nor deleted.
TEST_F(StoreTest, AJobWithoutItsSpecIsListedAsBrokenAndCanBeDeleted) {
  RunQuickJob("specless");
  RunQuickJob("healthy");
  std::filesystem::remove(JobDirectory("specless") / "spec.json");

  CommandResult get = sandbox_.Cohort({"get", "-o", "wide"});
  EXPECT_EQ(get.exit_code, 0) << get.output;
  EXPECT_THAT(get.output, HasSubstr("job default/specless is broken: spec.json: missing"));
  EXPECT_THAT(get.output, HasSubstr("healthy"));

  CommandResult deleted = sandbox_.Cohort({"delete", "specless"});
  EXPECT_EQ(deleted.exit_code, 0) << deleted.output;
  EXPECT_FALSE(std::filesystem::exists(JobDirectory("specless")));
  CommandResult after = sandbox_.Cohort({"get"});
  EXPECT_THAT(after.output, AllOf(HasSubstr("healthy"), Not(HasSubstr("specless"))));
}

// The issue's probe: `cohort wait` exited 3 at once when status.json could not be read for a
// moment. It reads again; a status that is back answers the wait.
TEST_F(StoreTest, WaitReadsAnUnreadableStatusAgainUntilItIsBack) {
  RunQuickJob("flaky");
  const std::filesystem::path status = JobDirectory("flaky") / "status.json";
  const std::string good = ReadText(status);
  Overwrite(status, "{\"conditions\": [");
  const std::filesystem::path output = sandbox_.root() / "wait.out";
  pid_t wait = sandbox_.StartCohort({"wait", "flaky", "--timeout", "30"}, output);
  // Whether `wait` reads the torn file before it is repaired or not, it must answer Succeeded.
  Overwrite(status, good);
  EXPECT_EQ(WaitForChildOrStop(wait, 60s), 0) << ReadText(output);
}

TEST_F(StoreTest, WaitGivesUpOnAStatusThatStaysUnreadable) {
  RunQuickJob("torn");
  Overwrite(JobDirectory("torn") / "status.json", "{\"conditions\": [");
  const auto started = std::chrono::steady_clock::now();
  CommandResult wait = sandbox_.Cohort({"wait", "torn", "--timeout", "60"});
  EXPECT_EQ(wait.exit_code, 3) << wait.output;
  EXPECT_THAT(wait.output, AllOf(HasSubstr("stayed unreadable for 5 s"),
                                 HasSubstr("job default/torn is broken: status.json")));
  // It read again for the whole patience, rather than giving up at the first failure.
  EXPECT_GE(std::chrono::steady_clock::now() - started, 5s);
}

// The issue's probe: `-n ../../x` on run wrote the job, its secret included, outside
// $COHORT_HOME.
TEST_F(StoreTest, NamesFromFlagsAndArgumentsAreCheckedBeforeTheyTouchAPath) {
  const std::string file =
      sandbox_.WriteFile("job.yaml", Manifest("named", ReplicaSpec("Worker", 1, "Never"))).string();
  for (const std::vector<std::string>& command :
       std::vector<std::vector<std::string>>{{"run", file, "-n", "../../x"},
                                             {"submit", file, "-n", "../../x"},
                                             {"create", "-f", file, "-n", "../../x"},
                                             {"delete", "named", "-n", "../../x"},
                                             {"get", "-n", "../../x"},
                                             {"describe", "named", "-n", ".."},
                                             {"logs", "named", "-n", "a/b"},
                                             {"wait", "named", "-n", "UPPER"}}) {
    CommandResult result = sandbox_.Cohort(command);
    EXPECT_EQ(result.exit_code, 2) << command[0] << ": " << result.output;
    EXPECT_THAT(result.output, AllOf(HasSubstr("invalid namespace"), HasSubstr("-n/--namespace")))
        << command[0];
  }
  for (const std::vector<std::string>& command :
       std::vector<std::vector<std::string>>{{"delete", ".."},
                                             {"get", "UPPER"},
                                             {"describe", "a.b"},
                                             {"logs", ".."},
                                             {"wait", "x_y"},
                                             {"suspend", ".."}}) {
    CommandResult result = sandbox_.Cohort(command);
    EXPECT_EQ(result.exit_code, 2) << command[0] << ": " << result.output;
    EXPECT_THAT(result.output, HasSubstr("invalid job")) << command[0];
  }
  // With a slash, kubectl's TYPE/NAME form reads the part before it as a resource type.
  for (const std::vector<std::string>& command : std::vector<std::vector<std::string>>{
           {"delete", "../named"}, {"get", "../../x"}, {"describe", "a/b"}}) {
    CommandResult result = sandbox_.Cohort(command);
    EXPECT_EQ(result.exit_code, 2) << command[0] << ": " << result.output;
  }
  EXPECT_FALSE(std::filesystem::exists(sandbox_.root() / "x"));
  EXPECT_FALSE(std::filesystem::exists(sandbox_.home() / "x"));
  EXPECT_FALSE(std::filesystem::exists(sandbox_.home() / "jobs" / "x"));
}

// The issue's probe: a replica that wrote 1 GiB kept all of it under $COHORT_HOME, and `cohort run`
// copied all of it to the terminal. Here a replica writes about 2 MB with a 64 KiB log bound and
// a 64 KiB/s terminal rate: the log is rotated (its start kept), the terminal gets a note of what
// was skipped and the last line, and `logs` reads the current file.
TEST_F(StoreTest, AChattyReplicaIsRotatedOnDiskAndRateLimitedOnTheTerminal) {
  const std::string manifest = R"(apiVersion: kubeflow.org/v1
kind: TFJob
metadata: {name: chatty}
spec:
  tfReplicaSpecs:
    Worker:
      replicas: 1
      restartPolicy: Never
      template:
        spec:
          containers:
            - name: tensorflow
              image: cohort/none
              command: ["sh", "-c", "echo first line; seq 1 300000; echo last line"]
)";
  const std::string file = sandbox_.WriteFile("chatty.yaml", manifest).string();
  CommandResult run = RunCommand(
      "cd " + ShellQuote(sandbox_.root().string()) +
      " && COHORT_HOME=" + ShellQuote(sandbox_.home().string()) +
      " COHORT_LOG_MAX_BYTES=64K COHORT_LOG_MAX_FILES=2 COHORT_RUN_OUTPUT_BYTES_PER_SECOND=65536"
      " timeout 120 " COHORT_BINARY_DIR "/apps/cohort/cohort run " +
      ShellQuote(file) + " 2>&1");
  ASSERT_EQ(run.exit_code, 0) << run.output.substr(0, 2000);
  EXPECT_THAT(run.output, HasSubstr("[worker-0] [cohort: skipped "));
  EXPECT_THAT(run.output, HasSubstr("bytes/s; all of it is in "));
  EXPECT_THAT(run.output, HasSubstr("[worker-0] last line"));
  EXPECT_LT(run.output.size(), 1000000u);

  const std::filesystem::path logs = JobDirectory("chatty") / "logs";
  EXPECT_EQ(ReadText(logs / "worker-0.log.start").substr(0, 13), "first line\n1\n");
  uint64_t total = 0;
  int files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(logs)) {
    EXPECT_LE(entry.file_size(), 64u * 1024) << entry.path();
    total += entry.file_size();
    ++files;
  }
  EXPECT_EQ(files, 4);  // .log, .log.start, .log.1, .log.2
  EXPECT_LE(total, 4u * 64 * 1024);
  CommandResult tail = sandbox_.Cohort({"logs", "chatty", "--tail", "2"});
  EXPECT_EQ(tail.exit_code, 0) << tail.output;
  EXPECT_EQ(tail.output, "[worker-0] 300000\n[worker-0] last line\n");
  // A bad bound is refused before the job exists.
  CommandResult refused =
      RunCommand("COHORT_HOME=" + ShellQuote(sandbox_.home().string()) +
                 " COHORT_LOG_MAX_BYTES=12 " COHORT_BINARY_DIR "/apps/cohort/cohort submit " +
                 ShellQuote(file) + " -n other 2>&1");
  EXPECT_EQ(refused.exit_code, 2) << refused.output;
  EXPECT_THAT(refused.output, HasSubstr("COHORT_LOG_MAX_BYTES=\"12\": must be a size"));
}

// The issue's probe: a child a replica starts with setsid (its own session and process group)
// and without COHORT_JOB_SECRET outlived a Succeeded job, and outlived `delete`.
class LeftoverTest : public StoreTest {
 protected:
  // Submits a job whose worker starts such a child and runs until `release` exists; returns the
  // child's pid once it has left the replica's session.
  pid_t SubmitWithSetsidChild(const std::string& name, const std::filesystem::path& release) {
    const std::string file =
        sandbox_
            .WriteFile(name + ".yaml",
                       Manifest(name, ReplicaSpec("Worker", 1, "Never",
                                                  {{"SETSID_CHILD_SECONDS", "300"},
                                                   {"RUN_UNTIL_FILE", release.string()}})))
            .string();
    CommandResult submit = sandbox_.Cohort({"submit", file});
    EXPECT_EQ(submit.exit_code, 0) << submit.output;
    pid_t child = -1;
    pid_t replica = -1;
    const bool started = WaitUntil(
        [&] {
          std::map<std::string, pid_t> children = sandbox_.SetsidChildPids();
          std::map<std::string, pid_t> replicas = sandbox_.ReplicaPids();
          if (children.empty() || replicas.empty()) return false;
          child = children.begin()->second;
          replica = replicas.begin()->second;
          // setsid has run and exec'd the sleep once the child leads a session of its own.
          return child > 0 && getsid(child) == child &&
                 ReadText("/proc/" + std::to_string(child) + "/cmdline").rfind("sleep", 0) == 0;
        },
        20s);
    EXPECT_TRUE(started) << "the replica's setsid child did not start";
    EXPECT_NE(getsid(child), getsid(replica));
    EXPECT_NE(getpgid(child), getpgid(replica));
    EXPECT_THAT(ReadText("/proc/" + std::to_string(child) + "/environ"),
                Not(HasSubstr("COHORT_JOB_SECRET")));
    return child;
  }
};

TEST_F(LeftoverTest, ASetsidChildWithoutTheSecretEndsWithItsSucceededReplica) {
  const std::filesystem::path release = sandbox_.root() / "release";
  pid_t child = SubmitWithSetsidChild("leaves", release);
  ASSERT_GT(child, 0);
  ASSERT_TRUE(ProcessAlive(child));
  Overwrite(release, "");
  CommandResult wait = sandbox_.Cohort({"wait", "leaves", "--timeout", "60"});
  EXPECT_EQ(wait.exit_code, 0) << wait.output;
  // The job is reported Succeeded only after the replica's exit was seen, and its leftovers
  // are ended as that exit is seen.
  EXPECT_TRUE(WaitUntil([child] { return !ProcessAlive(child); }, 10s))
      << "pid " << child << " outlived its Succeeded job";
}

TEST_F(LeftoverTest, ASetsidChildWithoutTheSecretEndsWhenItsJobIsDeleted) {
  pid_t child = SubmitWithSetsidChild("deleted", sandbox_.root() / "never");
  ASSERT_GT(child, 0);
  CommandResult deleted = sandbox_.Cohort({"delete", "deleted"});
  EXPECT_EQ(deleted.exit_code, 0) << deleted.output;
  EXPECT_FALSE(ProcessAlive(child)) << "pid " << child << " outlived `cohort delete`";
}

}  // namespace
}  // namespace cohort::testing
