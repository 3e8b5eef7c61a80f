// kubectl's forms through the real `cohort` binary: apply/create/delete -f, get tfjobs and pods,
// logs POD with --tail, --previous and -c, get -w, the -o forms, -n, --version and unknown
// commands.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <nlohmann/json.hpp>

#include "testing/cohort_runner.h"
#include "testing/wait.h"

namespace cohort::testing {
namespace {

using ::testing::ContainsRegex;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

class KubectlFormsTest : public ::testing::Test {
 protected:
  // A job of one worker that works `seconds` and succeeds.
  std::string Job(const std::string& name, int seconds) {
    return Manifest(
        name, ReplicaSpec("Worker", 1, "Never", {{"SLEEP_SECONDS", std::to_string(seconds)}}));
  }
  // `cohort ARGS` with `input` on its standard input.
  CommandResult CohortWithInput(const std::string& arguments, const std::string& input) {
    std::string input_file = sandbox_.WriteFile("stdin.yaml", input).string();
    std::string command = "cd " + sandbox_.root().string() +
                          " && COHORT_HOME=" + sandbox_.home().string() + " " + COHORT_BINARY_DIR +
                          "/apps/cohort/cohort " + arguments + " < " + input_file + " 2>&1";
    CommandResult result;
    FILE* pipe = popen(command.c_str(), "r");
    char buffer[4096];
    for (size_t n; (n = fread(buffer, 1, sizeof buffer, pipe)) > 0;)
      result.output.append(buffer, n);
    int status = pclose(pipe);
    result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    return result;
  }
  CohortSandbox sandbox_;
};

TEST_F(KubectlFormsTest, ApplyCreatesThenSaysUnchangedOrWhatDiffers) {
  std::string file = sandbox_.WriteFile("tfjob.yaml", Job("multi", 2)).string();
  CommandResult apply = sandbox_.Cohort({"apply", "-f", file});
  EXPECT_EQ(apply.exit_code, 0) << apply.output;
  EXPECT_EQ(apply.output, "tfjob.kubeflow.org/multi created\n");
  CommandResult again = sandbox_.Cohort({"apply", "-f", file});
  EXPECT_EQ(again.output, "tfjob.kubeflow.org/multi unchanged\n");
  std::string changed =
      Manifest("multi", ReplicaSpec("Worker", 2, "Never", {{"SLEEP_SECONDS", "2"}}));
  CommandResult differs =
      sandbox_.Cohort({"apply", "-f", sandbox_.WriteFile("changed.yaml", changed).string()});
  EXPECT_EQ(differs.exit_code, 2);
  EXPECT_THAT(differs.output, HasSubstr("spec.tfReplicaSpecs.Worker.replicas: 1 -> 2"));
  // create refuses a name that is taken.
  EXPECT_EQ(sandbox_.Cohort({"create", "-f", file}).exit_code, 2);

  CommandResult get = sandbox_.Cohort({"get", "tfjobs"});
  EXPECT_THAT(get.output, StartsWith("NAME    STATE"));
  EXPECT_THAT(sandbox_.Cohort({"get", "tfjob", "multi", "-o=name"}).output,
              "tfjob.kubeflow.org/multi\n");
  EXPECT_EQ(sandbox_.Cohort({"get", "tfjob/multi", "-o", "jsonpath={.metadata.name}"}).output,
            "multi");
  CommandResult pods = sandbox_.Cohort({"get", "pods"});
  EXPECT_THAT(pods.output, StartsWith("NAME             READY   STATUS"));
  EXPECT_THAT(pods.output, ContainsRegex("multi-worker-0 +[01]/1 +(Pending|Running) +0 +[0-9]+s"));
  // get -w prints a row on each change and ends when the job has finished.
  CommandResult watch = sandbox_.Cohort({"get", "multi", "-w", "--timeout", "60"});
  EXPECT_EQ(watch.exit_code, 0) << watch.output;
  EXPECT_THAT(watch.output, ContainsRegex("multi +Succeeded"));
  EXPECT_EQ(
      sandbox_.Cohort({"get", "pod", "multi-worker-0", "-o", "jsonpath={.status.phase}"}).output,
      "Succeeded");
  CommandResult logs = sandbox_.Cohort({"logs", "multi-worker-0", "-c", "tensorflow"});
  EXPECT_EQ(logs.exit_code, 0) << logs.output;
  EXPECT_THAT(logs.output, StartsWith("replica worker-0 pid "));
  EXPECT_EQ(sandbox_.Cohort({"logs", "multi-worker-0", "--tail", "1"}).output,
            "replica worker-0 done\n");
  EXPECT_EQ(sandbox_.Cohort({"logs", "multi-worker-0", "-c", "pytorch"}).exit_code, 2);
  CommandResult deleted = sandbox_.Cohort({"delete", "tfjob", "multi"});
  EXPECT_EQ(deleted.output, "tfjob.kubeflow.org \"multi\" deleted\n");
}

TEST_F(KubectlFormsTest, StandardInputDeleteByFileAndSeveralNames) {
  CommandResult created = CohortWithInput("create -f -", Job("from-stdin", 0));
  EXPECT_EQ(created.exit_code, 0) << created.output;
  EXPECT_EQ(created.output, "tfjob.kubeflow.org/from-stdin created\n");
  ASSERT_EQ(sandbox_.Cohort({"wait", "from-stdin", "--timeout", "60"}).exit_code, 0);
  std::string second = sandbox_.WriteFile("second.yaml", Job("second", 0)).string();
  ASSERT_EQ(sandbox_.Cohort({"apply", "-f", second}).exit_code, 0);
  ASSERT_EQ(sandbox_.Cohort({"wait", "second", "--timeout", "60"}).exit_code, 0);
  EXPECT_EQ(sandbox_.Cohort({"get", "-o", "name"}).output,
            "tfjob.kubeflow.org/from-stdin\ntfjob.kubeflow.org/second\n");
  EXPECT_EQ(sandbox_.Cohort({"delete", "-f", second}).output,
            "tfjob.kubeflow.org \"second\" deleted\n");
  CommandResult several = sandbox_.Cohort({"delete", "from-stdin", "absent"});
  EXPECT_EQ(several.exit_code, 3);
  EXPECT_THAT(several.output, HasSubstr("\"from-stdin\" deleted"));
  EXPECT_THAT(several.output, HasSubstr("job default/absent not found"));
}

TEST_F(KubectlFormsTest, PreviousIsTheLogBeforeTheLastRestart) {
  std::string manifest = Manifest(
      "flaky", ReplicaSpec("Worker", 1, "OnFailure",
                           {{"FAIL_INDEX", "0"}, {"FAIL_CODE", "3"}, {"FAIL_ONCE_DIR", "."}}));
  CommandResult run = sandbox_.Cohort({"run", sandbox_.WriteFile("flaky.yaml", manifest).string()});
  ASSERT_EQ(run.exit_code, 0) << run.output;
  CommandResult previous = sandbox_.Cohort({"logs", "flaky-worker-0", "--previous"});
  EXPECT_EQ(previous.exit_code, 0) << previous.output;
  EXPECT_THAT(previous.output, HasSubstr("replica worker-0 failing with 3"));
  EXPECT_THAT(previous.output, Not(HasSubstr("replica worker-0 done")));
  // The pod's log is its current run; the job's log has every run.
  CommandResult current = sandbox_.Cohort({"logs", "flaky-worker-0"});
  EXPECT_THAT(current.output, HasSubstr("replica worker-0 done"));
  EXPECT_THAT(current.output, Not(HasSubstr("failing with 3")));
  EXPECT_THAT(sandbox_.Cohort({"logs", "flaky"}).output,
              HasSubstr("[worker-0] replica worker-0 failing with 3"));
  EXPECT_THAT(sandbox_.Cohort({"logs", "flaky-worker-0", "--since", "1h"}).output,
              HasSubstr("replica worker-0 done"));
  EXPECT_EQ(sandbox_.Cohort({"logs", "flaky-worker-0", "--since", "soon"}).exit_code, 2);
  nlohmann::json pods =
      nlohmann::json::parse(sandbox_.Cohort({"get", "pods", "-o", "json"}).output);
  EXPECT_EQ(pods["items"][0]["status"]["containerStatuses"][0]["restartCount"], 1);
}

TEST_F(KubectlFormsTest, NamespacesVersionAndUnknownCommands) {
  std::string file = sandbox_.WriteFile("tfjob.yaml", Job("spaced", 0)).string();
  CommandResult run = sandbox_.Cohort({"run", file, "-n", "research"});
  EXPECT_EQ(run.exit_code, 0) << run.output;
  EXPECT_THAT(run.output, HasSubstr("job research/spaced created"));
  EXPECT_THAT(sandbox_.Cohort({"get", "-n=research"}).output, HasSubstr("spaced"));
  EXPECT_THAT(sandbox_.Cohort({"get", "pods", "-A"}).output,
              HasSubstr("research    spaced-worker-0"));
  EXPECT_THAT(sandbox_.Cohort({"version"}).output, HasSubstr("unknown command \"version\""));
  EXPECT_THAT(sandbox_.Cohort({"--version"}).output, StartsWith("cohort "));
  CommandResult unknown = sandbox_.Cohort({"aply", "-f", file});
  EXPECT_EQ(unknown.exit_code, 2);
  EXPECT_THAT(unknown.output, HasSubstr("unknown command \"aply\"; did you mean \"apply\"?"));
  EXPECT_THAT(sandbox_.Cohort({"list"}).output, HasSubstr("did you mean \"get\"?"));
  EXPECT_THAT(sandbox_.Cohort({"get", "deployments"}).output, HasSubstr("no resource type"));
  EXPECT_THAT(sandbox_.Cohort({"get", "-o", "xml"}).output, HasSubstr("allowed formats"));
  EXPECT_THAT(sandbox_.Cohort({"get", "-n", "research", "-o", "jsonpath={..name}"}).output,
              HasSubstr("not supported"));
  EXPECT_THAT(sandbox_.Cohort({"logs", "nothing-worker-0"}).output, HasSubstr("not found"));
}

}  // namespace
}  // namespace cohort::testing
