// End-to-end tests of `cohort`: real jobs of shell replicas, run and inspected through the CLI.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <nlohmann/json.hpp>
#include <sstream>

#include "testing/cohort_runner.h"
#include "testing/wait.h"

namespace cohort::testing {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::Not;
using namespace std::chrono_literals;

class CohortCliTest : public ::testing::Test {
 protected:
  // Every replica that ever wrote a pid must be gone once a command has returned. `replicas` is
  // how many distinct replicas (pid files) the test started, so that a test whose replicas never
  // ran cannot pass for want of anything to check.
  void ExpectNothingLeftRunning(size_t replicas) {
    std::map<std::string, pid_t> pids = sandbox_.ReplicaPids();
    EXPECT_EQ(pids.size(), replicas) << "replicas that started";
    for (const auto& [replica, pid] : pids) {
      EXPECT_FALSE(ProcessAlive(pid)) << replica << " (pid " << pid << ") is still running";
    }
  }
  nlohmann::json Status(const std::string& job) {
    CommandResult get = sandbox_.Cohort({"get", job, "-o", "json"});
    EXPECT_EQ(get.exit_code, 0) << get.output;
    return nlohmann::json::parse(get.output.substr(get.output.find('{')))["status"];
  }
  static std::vector<std::string> ConditionTypes(const nlohmann::json& status) {
    std::vector<std::string> types;
    for (const auto& condition : status["conditions"]) types.push_back(condition["type"]);
    return types;
  }
  CohortSandbox sandbox_;
};

TEST_F(CohortCliTest, HelloExampleRunsToSucceededWithTfConfigPerReplica) {
  std::string source = COHORT_SOURCE_DIR;
  CommandResult run = sandbox_.Cohort({"run", source + "/examples/hello/tfjob.yaml", "--image",
                                       "localhost/hello=" + source + "/examples/hello/replica.sh"});
  EXPECT_EQ(run.exit_code, 0) << run.output;
  EXPECT_THAT(run.output, HasSubstr("[worker-1] hello from a TFJob: I am worker-1 of job hello"));
  EXPECT_THAT(run.output, HasSubstr(R"([worker-0] TF_CONFIG={"cluster":{"ps":["localhost:)"));
  EXPECT_THAT(run.output,
              HasSubstr(R"("task":{"type":"worker","index":0},"environment":"cloud"})"));
  EXPECT_THAT(run.output, HasSubstr("is Succeeded: TFJob default/hello successfully completed."));

  CommandResult get = sandbox_.Cohort({"get"});
  EXPECT_EQ(get.exit_code, 0);
  EXPECT_THAT(get.output, AllOf(HasSubstr("NAME"), HasSubstr("STATE"), HasSubstr("hello"),
                                HasSubstr("Succeeded")));
  // cleanPodPolicy Running: the parameter server, still running at success, was stopped.
  CommandResult logs = sandbox_.Cohort({"logs", "hello", "--replica", "ps-0"});
  EXPECT_THAT(logs.output, HasSubstr("stopping: got SIGTERM"));
  EXPECT_THAT(sandbox_.Cohort({"describe", "hello"}).output,
              ::testing::ContainsRegex(
                  "SuccessfulDeletePod +[0-9]+s +tfjob-controller +Deleted pod: hello-ps-0"));
}

// cleanPodPolicy None keeps every pod, as Kubeflow's operator does: worker 1 fails (Never), which
// fails the job while worker 0 still runs. Locally nothing outlives its job, so worker 0 is
// stopped, but both stay listed with their final status, and each one's log reads back.
TEST_F(CohortCliTest, CleanPodPolicyNoneKeepsEveryPodWithItsLog) {
  const std::string manifest = Manifest(
      "keep",
      ReplicaSpec("Worker", 2, "Never",
                  {{"WAIT_FOR_REPLICAS", "2"}, {"FAIL_INDEX", "1"}, {"SLEEP_SECONDS", "60"}}),
      "    cleanPodPolicy: None\n");
  CommandResult run = sandbox_.Cohort({"run", sandbox_.WriteFile("keep.yaml", manifest).string()});
  EXPECT_NE(run.exit_code, 0) << run.output;
  CommandResult pods = sandbox_.Cohort({"get", "pods"});
  EXPECT_EQ(pods.exit_code, 0) << pods.output;
  EXPECT_THAT(pods.output, AllOf(::testing::ContainsRegex("keep-worker-0 +0/1 +Error"),
                                 ::testing::ContainsRegex("keep-worker-1 +0/1 +Error")));
  EXPECT_THAT(sandbox_.Cohort({"logs", "keep-worker-0"}).output,
              HasSubstr("replica worker-0 got SIGTERM"));
  EXPECT_THAT(sandbox_.Cohort({"logs", "keep-worker-1"}).output,
              HasSubstr("replica worker-1 failing with 1"));
  const std::string described = sandbox_.Cohort({"describe", "keep"}).output;
  EXPECT_THAT(described, HasSubstr("Stopped pod: keep-worker-0"));
  EXPECT_THAT(described, Not(HasSubstr("Deleted pod")));
  ExpectNothingLeftRunning(2);
}

// `delete --purge` removes the job and the directory its args declare with $(COHORT_JOB_NAME),
// says so, and leaves another job's directory alone.
TEST_F(CohortCliTest, DeletePurgeRemovesTheJobsOwnDirectoryAndSaysSo) {
  const std::filesystem::path out = sandbox_.root() / "out";
  std::filesystem::create_directories(out / "purge-me" / "ckpt");
  std::filesystem::create_directories(out / "other");
  const std::string manifest =
      Manifest("purge-me", ReplicaSpec("Worker", 1, "Never") + "              args: [--out=" +
                               (out / "$(COHORT_JOB_NAME)" / "ckpt").string() + "]\n");
  CommandResult run = sandbox_.Cohort({"run", sandbox_.WriteFile("purge.yaml", manifest).string()});
  ASSERT_EQ(run.exit_code, 0) << run.output;
  // The replica saw its args expanded.
  EXPECT_THAT(sandbox_.Cohort({"logs", "purge-me-worker-0"}).output,
              HasSubstr("ARGS=--out=" + (out / "purge-me" / "ckpt").string()));
  CommandResult purged = sandbox_.Cohort({"delete", "--purge", "purge-me"});
  EXPECT_EQ(purged.exit_code, 0) << purged.output;
  EXPECT_THAT(purged.output,
              HasSubstr("tfjob.kubeflow.org \"purge-me\" deleted\nremoved " +
                        (out / "purge-me").string() + " (purge-me's own directory)"));
  EXPECT_FALSE(std::filesystem::exists(out / "purge-me"));
  EXPECT_TRUE(std::filesystem::exists(out / "other"));
  EXPECT_NE(sandbox_.Cohort({"get", "purge-me"}).exit_code, 0);
}

TEST_F(CohortCliTest, WorkerKilledOnceUnderExitCodeIsRestartedAndJobSucceeds) {
  // The chief decides success, and works long enough for worker 1 to be restarted and finish.
  std::string manifest = Manifest(
      "exit-code-retry",
      ReplicaSpec("Chief", 1, "Never", {{"SLEEP_SECONDS", "3"}}) +
          ReplicaSpec("Worker", 2, "ExitCode",
                      {{"FAIL_INDEX", "1"}, {"FAIL_CODE", "kill"}, {"FAIL_ONCE_DIR", "."}}));
  CommandResult run = sandbox_.Cohort({"run", sandbox_.WriteFile("job.yaml", manifest).string()});
  EXPECT_EQ(run.exit_code, 0) << run.output;
  nlohmann::json status = Status("exit-code-retry");
  EXPECT_THAT(ConditionTypes(status), ::testing::Contains("Restarting"));
  EXPECT_EQ(status["conditions"].back()["type"], "Succeeded");

  CommandResult describe = sandbox_.Cohort({"describe", "exit-code-retry"});
  EXPECT_THAT(describe.output, HasSubstr("TFJobRestarting"));
  EXPECT_THAT(describe.output, HasSubstr("exited with code 137"));
  EXPECT_THAT(describe.output, ::testing::ContainsRegex("worker-1 +Succeeded +1 "));
  CommandResult logs = sandbox_.Cohort({"logs", "exit-code-retry", "--replica", "worker-1"});
  EXPECT_THAT(logs.output, HasSubstr("===== cohort: restart 1 of worker-1"));
  ExpectNothingLeftRunning(3);
}

TEST_F(CohortCliTest, PermanentExitCodeFailsTheJobWithTheOperatorsMessage) {
  std::string manifest =
      Manifest("exit-code-permanent",
               // Worker 0 works long enough that its success (which alone would succeed the job)
               // cannot come before worker 1's failure; worker 1 fails once every replica has
               // started (ExpectNothingLeftRunning counts them).
               ReplicaSpec("Worker", 2, "ExitCode",
                           {{"FAIL_INDEX", "1"},
                            {"FAIL_CODE", "1"},
                            {"WAIT_FOR_REPLICAS", "3"},
                            {"SLEEP_SECONDS", "30"}}) +
                   ReplicaSpec("PS", 1, "Never", {{"SLEEP_SECONDS", "60"}}));
  CommandResult run = sandbox_.Cohort({"run", sandbox_.WriteFile("job.yaml", manifest).string()});
  EXPECT_EQ(run.exit_code, 1) << run.output;
  nlohmann::json status = Status("exit-code-permanent");
  EXPECT_EQ(status["conditions"].back()["type"], "Failed");
  EXPECT_THAT(status["conditions"].back()["message"].get<std::string>(),
              HasSubstr("is failing because \"Worker\" replica(s) failed"));
  ExpectNothingLeftRunning(3);
}

TEST_F(CohortCliTest, BackoffLimitFailsTheJob) {
  std::string manifest = Manifest(
      "backoff", ReplicaSpec("Worker", 1, "OnFailure", {{"FAIL_INDEX", "0"}, {"FAIL_CODE", "3"}}),
      "    backoffLimit: 1\n");
  CommandResult run = sandbox_.Cohort({"run", sandbox_.WriteFile("job.yaml", manifest).string()});
  EXPECT_EQ(run.exit_code, 1) << run.output;
  nlohmann::json status = Status("backoff");
  EXPECT_THAT(status["conditions"].back()["message"].get<std::string>(),
              ::testing::MatchesRegex("Job backoff has failed because it has reached the "
                                      "specified backoff limit: worker-0 exited with code 3 at "
                                      "[0-9T:-]+Z after 1 restart; its last log line: "
                                      "\"replica worker-0 failing with 3\""));
  ExpectNothingLeftRunning(1);
}

// A worker that keeps failing under backoffLimit 2: the message names it, its exit code, its
// restarts and its last log line, and `describe` keeps every row after the end, none of them
// Running.
TEST_F(CohortCliTest, BackoffLimitFailureNamesTheReplicaAndKeepsItsRow) {
  std::string manifest =
      Manifest("keeps-failing",
               ReplicaSpec("Worker", 2, "OnFailure",
                           {{"FAIL_INDEX", "1"}, {"FAIL_CODE", "3"}, {"SLEEP_SECONDS", "60"}}),
               "    backoffLimit: 2\n");
  CommandResult run = sandbox_.Cohort({"run", sandbox_.WriteFile("job.yaml", manifest).string()},
                                      std::chrono::seconds(60));
  EXPECT_EQ(run.exit_code, 1) << run.output;
  nlohmann::json status = Status("keeps-failing");
  EXPECT_THAT(status["conditions"].back()["message"].get<std::string>(),
              ::testing::MatchesRegex("Job keeps-failing has failed because it has reached the "
                                      "specified backoff limit: worker-1 exited with code 3 at "
                                      "[0-9T:-]+Z after 2 restarts; its last log line: "
                                      "\"replica worker-1 failing with 3\""));
  EXPECT_EQ(status["replicaStatuses"]["Worker"].value("active", 0), 0) << status.dump();
  CommandResult describe = sandbox_.Cohort({"describe", "keeps-failing"});
  EXPECT_THAT(describe.output,
              ::testing::ContainsRegex("worker-1 +Failed +2 +3 +[0-9]+ +[^ ]*worker-1[^ ]*\n"))
      << describe.output;
  EXPECT_THAT(describe.output, ::testing::ContainsRegex("worker-0 +Stopped +0 +[0-9]+ +[^ ]+\n"))
      << describe.output;
  EXPECT_THAT(describe.output, Not(::testing::ContainsRegex("worker-[0-9] +Running")));
  ExpectNothingLeftRunning(2);
}

TEST_F(CohortCliTest, SuspendRefusesAFinishedJobNamingItsState) {
  std::string manifest = Manifest("done", ReplicaSpec("Worker", 1, "Never", {}), "");
  CommandResult run = sandbox_.Cohort({"run", sandbox_.WriteFile("job.yaml", manifest).string()});
  ASSERT_EQ(run.exit_code, 0) << run.output;
  CommandResult suspend = sandbox_.Cohort({"suspend", "done"});
  EXPECT_NE(suspend.exit_code, 0) << suspend.output;
  EXPECT_THAT(suspend.output, HasSubstr("done has already Succeeded; a finished job cannot be "
                                        "suspended"));
  EXPECT_THAT(suspend.output, Not(HasSubstr("done suspended")));
  EXPECT_EQ(ConditionTypes(Status("done")).back(), "Succeeded");
}

TEST_F(CohortCliTest, ActiveDeadlineFailsTheJobAndStopsItsReplicas) {
  // The start time is kept in whole seconds, as Kubernetes keeps it, so a deadline of N seconds
  // fires after more than N - 1: 2 leaves the replicas a second to start and say so.
  std::string manifest =
      Manifest("deadline", ReplicaSpec("Worker", 2, "Never", {{"SLEEP_SECONDS", "60"}}),
               "    activeDeadlineSeconds: 2\n");
  CommandResult run = sandbox_.Cohort({"run", sandbox_.WriteFile("job.yaml", manifest).string()},
                                      std::chrono::seconds(30));
  EXPECT_EQ(run.exit_code, 1) << run.output;
  nlohmann::json status = Status("deadline");
  EXPECT_EQ(status["conditions"].back()["message"],
            "Job deadline has failed because it was active longer than specified deadline");
  EXPECT_THAT(sandbox_.Cohort({"logs", "deadline", "--replica", "worker-0"}).output,
              HasSubstr("got SIGTERM"));
  ExpectNothingLeftRunning(2);
}

TEST_F(CohortCliTest, BrokenManifestIsRejectedWithLineColumnAndFieldPath) {
  std::string manifest = Manifest("broken", ReplicaSpec("Worker", 1, "Sometimes"));
  std::string path = sandbox_.WriteFile("broken.yaml", manifest).string();
  for (const char* command : {"run", "validate", "submit"}) {
    CommandResult result = sandbox_.Cohort({command, path});
    EXPECT_EQ(result.exit_code, 2) << command;
    EXPECT_THAT(result.output,
                HasSubstr("broken.yaml:9:22: spec.tfReplicaSpecs.Worker.restartPolicy: "
                          "\"Sometimes\" is not one of Always, OnFailure, Never, ExitCode"))
        << command;
  }
  EXPECT_THAT(sandbox_.Cohort({"get"}).output, HasSubstr("No resources found"));
}

TEST_F(CohortCliTest, UnmappedImageIsAnErrorBeforeAnythingStarts) {
  std::string manifest =
      "apiVersion: kubeflow.org/v1\nkind: TFJob\nmetadata: {name: unmapped}\n"
      "spec:\n  tfReplicaSpecs:\n    Worker:\n      replicas: 2\n      template:\n"
      "        spec:\n          containers:\n"
      "            - {name: tensorflow, image: example/trainer:1.0}\n";
  CommandResult run = sandbox_.Cohort({"run", sandbox_.WriteFile("job.yaml", manifest).string()});
  EXPECT_EQ(run.exit_code, 2);
  EXPECT_THAT(run.output, HasSubstr("image \"example/trainer:1.0\" is not mapped"));
  EXPECT_THAT(run.output, HasSubstr("--image example/trainer:1.0=COMMAND"));
  EXPECT_THAT(sandbox_.Cohort({"get"}).output, HasSubstr("No resources found"));
}

TEST_F(CohortCliTest, SubmitGetDescribeLogsWaitDelete) {
  std::string manifest =
      Manifest("background", ReplicaSpec("Worker", 2, "Never", {{"SLEEP_SECONDS", "1"}}), "",
               "  successPolicy: AllWorkers\n");
  std::string path = sandbox_.WriteFile("job.yaml", manifest).string();
  CommandResult submit = sandbox_.Cohort({"submit", path});
  ASSERT_EQ(submit.exit_code, 0) << submit.output;
  EXPECT_EQ(submit.output, "background\n");

  CommandResult again = sandbox_.Cohort({"submit", path});
  EXPECT_EQ(again.exit_code, 2);
  EXPECT_THAT(again.output, HasSubstr("job default/background already exists"));

  CommandResult get = sandbox_.Cohort({"get", "background", "-o", "wide"});
  EXPECT_THAT(get.output, AllOf(HasSubstr("background"), HasSubstr("Worker=2")));

  CommandResult wait = sandbox_.Cohort({"wait", "background", "--timeout", "30"});
  EXPECT_EQ(wait.exit_code, 0) << wait.output;
  EXPECT_THAT(wait.output, HasSubstr("background Succeeded"));

  CommandResult describe = sandbox_.Cohort({"describe", "background"});
  EXPECT_THAT(describe.output, AllOf(HasSubstr("Name:         background"),
                                     HasSubstr("TFJobSucceeded"), HasSubstr("SuccessfulCreatePod"),
                                     HasSubstr("Created pod: background-worker-1")));

  CommandResult logs = sandbox_.Cohort({"logs", "background"});
  EXPECT_THAT(logs.output, AllOf(HasSubstr("[worker-0] replica worker-0 done"),
                                 HasSubstr("[worker-1] replica worker-1 done")));
  CommandResult follow = sandbox_.Cohort({"logs", "background", "--replica", "worker-1", "-f"});
  EXPECT_EQ(follow.exit_code, 0);
  EXPECT_THAT(follow.output, AllOf(HasSubstr("replica worker-1 done"), Not(HasSubstr("worker-0"))));
  EXPECT_EQ(sandbox_.Cohort({"logs", "background", "--replica", "worker-7"}).exit_code, 2);

  CommandResult remove = sandbox_.Cohort({"delete", "background"});
  EXPECT_EQ(remove.exit_code, 0) << remove.output;
  EXPECT_EQ(sandbox_.Cohort({"get", "background"}).exit_code, 3);
  ExpectNothingLeftRunning(2);
}

// Every command that reads a job marks it Failed when its supervisor is gone; a job whose
// supervisor is still starting must never be taken for one. Two processes run `cohort get` over
// and over while jobs are submitted, so that some `get` falls between a job's creation and its
// supervisor's start.
TEST_F(CohortCliTest, JobsSubmittedWhileOtherCommandsReadThemSucceed) {
  // The readers stop once this file exists, after their `cohort get` in flight has ended, so that
  // none still writes into the sandbox while it is removed.
  const std::filesystem::path stop = sandbox_.root() / "stop-reading";
  std::vector<pid_t> readers;
  for (int reader = 0; reader < 2; ++reader) {
    pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      // Dies with the test, and on its own after two minutes at most.
      prctl(PR_SET_PDEATHSIG, SIGKILL);
      std::filesystem::path output = sandbox_.root() / ("reader-" + std::to_string(reader));
      const auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(2);
      while (!std::filesystem::exists(stop) && std::chrono::steady_clock::now() < deadline) {
        waitpid(sandbox_.StartCohort({"get"}, output), nullptr, 0);
      }
      _exit(0);
    }
    readers.push_back(pid);
  }
  constexpr int kJobs = 8;
  for (int i = 0; i < kJobs; ++i) {
    std::string name = "busy-" + std::to_string(i);
    std::string manifest = Manifest(name, ReplicaSpec("Worker", 1, "Never"));
    CommandResult submit =
        sandbox_.Cohort({"submit", sandbox_.WriteFile(name + ".yaml", manifest).string()});
    EXPECT_EQ(submit.exit_code, 0) << submit.output;
  }
  for (int i = 0; i < kJobs; ++i) {
    std::string name = "busy-" + std::to_string(i);
    CommandResult wait = sandbox_.Cohort({"wait", name, "--timeout", "30"});
    EXPECT_EQ(wait.exit_code, 0) << wait.output << sandbox_.Cohort({"describe", name}).output;
  }
  WriteText(stop, "");
  for (pid_t reader : readers) {
    EXPECT_NE(WaitForChild(reader, 30s), -1) << "a reader did not stop";
  }
  ExpectNothingLeftRunning(1);
}

// ttlSecondsAfterFinished: 0 deletes the job as soon as it has finished, while `cohort run` still
// supervises it; the deletion is reported as the operator reports it.
TEST_F(CohortCliTest, TtlDeletesTheFinishedJobAndSaysSo) {
  std::string manifest = Manifest("short-lived", ReplicaSpec("Worker", 1, "Never"),
                                  "    ttlSecondsAfterFinished: 0\n");
  CommandResult run = sandbox_.Cohort({"run", sandbox_.WriteFile("job.yaml", manifest).string()});
  EXPECT_EQ(run.exit_code, 0) << run.output;
  EXPECT_THAT(run.output,
              HasSubstr("cohort: event Normal SuccessfulDeleteJob: Deleted job: short-lived"));
  EXPECT_EQ(sandbox_.Cohort({"get", "short-lived"}).exit_code, 3);
  ExpectNothingLeftRunning(1);
}

TEST_F(CohortCliTest, DeleteStopsALiveJob) {
  std::string manifest =
      Manifest("long-running", ReplicaSpec("Worker", 2, "Never", {{"SLEEP_SECONDS", "120"}}));
  ASSERT_EQ(
      sandbox_.Cohort({"submit", sandbox_.WriteFile("job.yaml", manifest).string()}).exit_code, 0);
  CommandResult wait = sandbox_.Cohort({"wait", "long-running", "--timeout", "1"});
  EXPECT_EQ(wait.exit_code, 3);
  EXPECT_THAT(wait.output, HasSubstr("timed out after 1 s waiting for job default/long-running"));
  CommandResult remove = sandbox_.Cohort({"delete", "long-running"});
  EXPECT_EQ(remove.exit_code, 0) << remove.output;
  ExpectNothingLeftRunning(2);
}

// Suspending a running job stops its replicas with SIGTERM, and nothing of the job runs while it
// is suspended; resuming starts them again and the job runs to the end.
TEST_F(CohortCliTest, SuspendStopsTheReplicasAndResumeRunsTheJobToTheEnd) {
  // The replicas work until the test releases them, so that they are surely running when the job
  // is suspended and surely finish after it is resumed.
  const std::filesystem::path release = sandbox_.root() / "release";
  std::string manifest = Manifest(
      "pausable", ReplicaSpec("Worker", 2, "OnFailure", {{"RUN_UNTIL_FILE", release.string()}}));
  ASSERT_EQ(
      sandbox_.Cohort({"submit", sandbox_.WriteFile("job.yaml", manifest).string()}).exit_code, 0);
  ASSERT_TRUE(WaitUntil([&] { return sandbox_.ReplicaPids().size() == 2; }, 30s))
      << "the replicas did not start";
  const std::map<std::string, pid_t> running = sandbox_.ReplicaPids();
  // Every process the job started (the replicas and what they run) carries its COHORT_HOME and
  // name in its environment.
  auto job_processes = [&] {
    return ProcessesWithEnvironment(
        {{"COHORT_HOME", sandbox_.home().string()}, {"COHORT_JOB_NAME", "pausable"}});
  };
  EXPECT_GE(job_processes().size(), 2u);

  CommandResult suspend = sandbox_.Cohort({"suspend", "pausable"});
  EXPECT_EQ(suspend.exit_code, 0) << suspend.output;
  auto state = [&] {
    CommandResult get = sandbox_.Cohort({"get", "pausable"});
    return get.output.substr(get.output.find('\n') + 1);
  };
  EXPECT_TRUE(WaitUntil([&] { return state().find("Suspended") != std::string::npos; }, 20s))
      << state();
  for (const auto& [replica, pid] : running) {
    EXPECT_TRUE(WaitUntil([pid = pid] { return !ProcessAlive(pid); }, 20s))
        << replica << " (pid " << pid << ") still runs";
    EXPECT_EQ(ReadText(sandbox_.root() / "pids" / (replica + ".sigterm")),
              std::to_string(pid) + "\n")
        << replica << " was not stopped with SIGTERM";
  }
  // While suspended nothing runs and nothing starts: `wait` times out, and no replica wrote a new
  // pid meanwhile.
  EXPECT_EQ(sandbox_.Cohort({"wait", "pausable", "--timeout", "1"}).exit_code, 3);
  EXPECT_EQ(sandbox_.ReplicaPids(), running);
  EXPECT_TRUE(job_processes().empty()) << "a process of the suspended job runs";

  EXPECT_EQ(sandbox_.Cohort({"resume", "pausable"}).exit_code, 0);
  EXPECT_TRUE(WaitUntil(
      [&] {
        std::map<std::string, pid_t> pids = sandbox_.ReplicaPids();
        return pids.size() == 2 && pids["worker-0"] != running.at("worker-0") &&
               pids["worker-1"] != running.at("worker-1");
      },
      30s))
      << "the replicas did not start again after resume";
  WriteText(release, "");
  CommandResult wait = sandbox_.Cohort({"wait", "pausable", "--timeout", "30"});
  EXPECT_EQ(wait.exit_code, 0) << wait.output;
  CommandResult describe = sandbox_.Cohort({"describe", "pausable"});
  EXPECT_THAT(describe.output, ::testing::ContainsRegex("Suspended +False +TFJobResumed"));
  EXPECT_THAT(describe.output, HasSubstr("TFJob pausable is suspended."));
  ExpectNothingLeftRunning(2);
}

TEST_F(CohortCliTest, WorkingDirEnvironmentAndJobIdentityReachTheReplica) {
  std::filesystem::create_directories(sandbox_.root() / "workdir" / "pids");
  std::string manifest =
      Manifest("identity", ReplicaSpec("Chief", 1, "Never") +
                               ReplicaSpec("Worker", 1, "Never", {{"EXIT_CODE", "0"}}));
  size_t command = manifest.find("              env:");
  manifest.insert(command,
                  "              workingDir: " + (sandbox_.root() / "workdir").string() + "\n");
  CommandResult run = sandbox_.Cohort({"run", sandbox_.WriteFile("job.yaml", manifest).string()});
  EXPECT_EQ(run.exit_code, 0) << run.output;
  EXPECT_THAT(run.output, HasSubstr("[chief-0] PWD=" + (sandbox_.root() / "workdir").string()));
  EXPECT_THAT(run.output, HasSubstr(R"("task":{"type":"chief","index":0})"));
}

TEST_F(CohortCliTest, TfConfigCommandPrintsWhatAReplicaWouldGet) {
  std::string manifest =
      Manifest("mnist", ReplicaSpec("Chief", 1, "Never") + ReplicaSpec("PS", 2, "Never") +
                            ReplicaSpec("Worker", 2, "Never"));
  CommandResult result =
      sandbox_.Cohort({"tfconfig", sandbox_.WriteFile("job.yaml", manifest).string(), "--replica",
                       "worker-1", "--kubernetes"});
  EXPECT_EQ(result.exit_code, 0) << result.output;
  EXPECT_THAT(
      result.output,
      HasSubstr(
          R"({"cluster":{"chief":["mnist-chief-0.default.svc:2222"],"ps":["mnist-ps-0.default.svc:2222","mnist-ps-1.default.svc:2222"],"worker":["mnist-worker-0.default.svc:2222","mnist-worker-1.default.svc:2222"]},"task":{"type":"worker","index":1},"environment":"cloud"})"));
}

// A PyTorchJob of shell replicas (the replica's container is the kind's, "pytorch").
std::string PyTorchManifest(const std::string& name, const std::string& replicas) {
  std::string specs = replicas;
  for (size_t at; (at = specs.find("name: tensorflow")) != std::string::npos;) {
    specs.replace(at, 16, "name: pytorch");
  }
  return "apiVersion: kubeflow.org/v1\nkind: PyTorchJob\nmetadata:\n  name: " + name +
         "\nspec:\n  pytorchReplicaSpecs:\n" + specs;
}

TEST_F(CohortCliTest, APyTorchJobIsListedDescribedAndActedOnByItsOwnResourceNames) {
  const std::map<std::string, std::string> short_run = {{"SLEEP_SECONDS", "1"}};
  std::string torch =
      sandbox_
          .WriteFile("torch.yaml",
                     PyTorchManifest("torch", ReplicaSpec("Master", 1, "Never", short_run) +
                                                  ReplicaSpec("Worker", 1, "Never", short_run)))
          .string();
  std::string tf =
      sandbox_.WriteFile("tf.yaml", Manifest("tf", ReplicaSpec("Chief", 1, "Never", short_run)))
          .string();
  ASSERT_EQ(sandbox_.Cohort({"submit", torch}).exit_code, 0);
  ASSERT_EQ(sandbox_.Cohort({"submit", tf}).exit_code, 0);

  CommandResult pytorchjobs = sandbox_.Cohort({"get", "pytorchjobs"});
  EXPECT_EQ(pytorchjobs.exit_code, 0) << pytorchjobs.output;
  EXPECT_THAT(pytorchjobs.output, AllOf(HasSubstr("torch"), Not(HasSubstr("tf "))));
  CommandResult tfjobs = sandbox_.Cohort({"get", "tfjobs.kubeflow.org"});
  EXPECT_THAT(tfjobs.output, AllOf(HasSubstr("tf "), Not(HasSubstr("torch"))));
  CommandResult every = sandbox_.Cohort({"get"});
  EXPECT_THAT(every.output, AllOf(HasSubstr("tf "), HasSubstr("torch")));
  EXPECT_EQ(sandbox_.Cohort({"get", "pytorchjob", "torch", "-o", "name"}).output,
            "pytorchjob.kubeflow.org/torch\n");
  EXPECT_EQ(sandbox_.Cohort({"get", "-o", "name"}).output,
            "tfjob.kubeflow.org/tf\npytorchjob.kubeflow.org/torch\n");
  CommandResult yaml = sandbox_.Cohort({"get", "pytorchjob/torch", "-o", "yaml"});
  EXPECT_THAT(yaml.output, AllOf(HasSubstr("apiVersion: kubeflow.org/v1"),
                                 HasSubstr("kind: PyTorchJob"), HasSubstr("pytorchReplicaSpecs")));
  CommandResult wrong_kind = sandbox_.Cohort({"get", "tfjob", "torch"});
  EXPECT_EQ(wrong_kind.exit_code, 3);
  EXPECT_THAT(wrong_kind.output, HasSubstr("TFJob default/torch not found (it is a PyTorchJob"));

  CommandResult wait = sandbox_.Cohort({"wait", "pytorchjob", "torch", "--timeout", "30"});
  EXPECT_EQ(wait.exit_code, 0) << wait.output;
  EXPECT_THAT(wait.output, HasSubstr("torch Succeeded"));
  CommandResult describe = sandbox_.Cohort({"describe", "pytorchjob", "torch"});
  EXPECT_THAT(describe.output,
              AllOf(HasSubstr("Kind:         PyTorchJob"), HasSubstr("PyTorchJobSucceeded"),
                    HasSubstr("Created pod: torch-master-0")));
  // The master decides a PyTorchJob: once it is done the job has succeeded and a worker still
  // running is stopped, so the worker's log is only sure to hold its start.
  CommandResult logs = sandbox_.Cohort({"logs", "pytorchjob/torch"});
  EXPECT_THAT(logs.output, AllOf(HasSubstr("[master-0] replica master-0 done"),
                                 HasSubstr("[worker-0] replica worker-0 pid ")));
  CommandResult suspend = sandbox_.Cohort({"suspend", "pytorchjob", "torch"});
  EXPECT_EQ(suspend.exit_code, 2);
  EXPECT_THAT(suspend.output,
              HasSubstr("pytorchjob.kubeflow.org/torch has already Succeeded; a finished job "
                        "cannot be suspended"));
  EXPECT_EQ(sandbox_.Cohort({"delete", "tfjob", "torch"}).exit_code, 3);
  CommandResult remove = sandbox_.Cohort({"delete", "pytorchjob", "torch"});
  EXPECT_EQ(remove.exit_code, 0) << remove.output;
  EXPECT_EQ(remove.output, "pytorchjob.kubeflow.org \"torch\" deleted\n");
  EXPECT_EQ(sandbox_.Cohort({"wait", "tf", "--timeout", "30"}).exit_code, 0);
  CommandResult remove_tf = sandbox_.Cohort({"delete", "tf"});
  EXPECT_EQ(remove_tf.output, "tfjob.kubeflow.org \"tf\" deleted\n");
  ExpectNothingLeftRunning(3);
}

// The lines of `text` that begin with one of `names` followed by '=' or ' ', in their order.
std::vector<std::string> VariableOrder(const std::string& text) {
  std::vector<std::string> names;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    names.push_back(line.substr(0, line.find_first_of("= ")));
  }
  return names;
}

TEST_F(CohortCliTest, EnvPrintsAReplicasEnvironmentInTheOperatorsOrderForEitherKind) {
  std::string torch =
      sandbox_
          .WriteFile("torch.yaml", PyTorchManifest("torch", ReplicaSpec("Master", 1, "Never") +
                                                                ReplicaSpec("Worker", 2, "Never")))
          .string();
  CommandResult cluster = sandbox_.Cohort({"env", torch, "--replica", "worker-1", "--kubernetes"});
  ASSERT_EQ(cluster.exit_code, 0) << cluster.output;
  EXPECT_EQ(
      VariableOrder(cluster.output),
      (std::vector<std::string>{"PID_DIR", "COHORT_TERMINATION_MESSAGE_PATH", "COHORT_JOB_NAME",
                                "COHORT_JOB_SECRET", "PYTHONUNBUFFERED", "MASTER_PORT",
                                "PET_MASTER_PORT", "MASTER_ADDR", "PET_MASTER_ADDR", "WORLD_SIZE",
                                "RANK", "PET_NODE_RANK", "PET_NPROC_PER_NODE", "PET_NNODES"}))
      << cluster.output;
  EXPECT_THAT(cluster.output,
              AllOf(HasSubstr("\nMASTER_ADDR=torch-master-0\n"), HasSubstr("\nMASTER_PORT=23456\n"),
                    HasSubstr("\nWORLD_SIZE=3\n"), HasSubstr("\nRANK=2\n")));

  CommandResult local = sandbox_.Cohort({"env", torch, "--replica", "master-0"});
  ASSERT_EQ(local.exit_code, 0) << local.output;
  EXPECT_THAT(local.output, AllOf(HasSubstr("is not running; showing freshly chosen local ports"),
                                  HasSubstr("\nMASTER_ADDR=localhost\n"), HasSubstr("\nRANK=0\n"),
                                  HasSubstr("\nCOHORT_REPLICA_TYPE=master\n"),
                                  Not(HasSubstr("COHORT_JOB_SECRET"))));
  EXPECT_EQ(sandbox_.Cohort({"env", torch, "--replica", "chief-0"}).exit_code, 2);
  EXPECT_EQ(sandbox_.Cohort({"env", "-f", torch, "--replica", "worker-1", "--kubernetes"}).output,
            cluster.output);

  // A created job's environment: its own ports while it runs.
  const std::filesystem::path release = sandbox_.root() / "release";
  std::string running =
      sandbox_
          .WriteFile(
              "running.yaml",
              PyTorchManifest(
                  "running",
                  ReplicaSpec("Master", 1, "Never", {{"RUN_UNTIL_FILE", release.string()}}) +
                      ReplicaSpec("Worker", 1, "Never", {{"RUN_UNTIL_FILE", release.string()}})))
          .string();
  ASSERT_EQ(sandbox_.Cohort({"submit", running}).exit_code, 0);
  CommandResult created =
      sandbox_.Cohort({"env", "pytorchjob", "running", "--replica", "worker-0"});
  EXPECT_EQ(created.exit_code, 0) << created.output;
  EXPECT_THAT(created.output, AllOf(Not(HasSubstr("is not running")), HasSubstr("\nRANK=1\n"),
                                    HasSubstr("\nRUN_UNTIL_FILE=" + release.string() + "\n"),
                                    HasSubstr("\nCOHORT_JOB_NAME=running\n")));
  EXPECT_EQ(sandbox_.Cohort({"env", "nothing", "--replica", "worker-0"}).exit_code, 3);
  WriteText(release, "");
  EXPECT_EQ(sandbox_.Cohort({"wait", "running", "--timeout", "60"}).exit_code, 0);

  // A TFJob's environment holds TF_CONFIG, the same that `cohort tfconfig` prints.
  std::string tf =
      sandbox_
          .WriteFile("tf.yaml", Manifest("mnist", ReplicaSpec("Chief", 1, "Never") +
                                                      ReplicaSpec("Worker", 2, "Never")))
          .string();
  CommandResult tf_env = sandbox_.Cohort({"env", tf, "--replica", "worker-1", "--kubernetes"});
  CommandResult tf_config =
      sandbox_.Cohort({"tfconfig", tf, "--replica", "worker-1", "--kubernetes"});
  ASSERT_EQ(tf_config.exit_code, 0) << tf_config.output;
  EXPECT_THAT(tf_env.output, HasSubstr("\nTF_CONFIG=" + tf_config.output));
  CommandResult no_tf_config = sandbox_.Cohort({"tfconfig", torch, "--replica", "worker-1"});
  EXPECT_EQ(no_tf_config.exit_code, 0);
  EXPECT_THAT(no_tf_config.output, HasSubstr("a PyTorchJob's replicas get no TF_CONFIG"));
}

}  // namespace
}  // namespace cohort::testing
