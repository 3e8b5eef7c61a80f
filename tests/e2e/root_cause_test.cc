// Why a job failed, end to end: the message names the replica, its exit code and the line of its
// log that says why; log policies decide restarts; describe keeps the last lines; a command that
// could not run gets a hint; validate warns about unmapped images.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "testing/cohort_runner.h"

namespace cohort::testing {
namespace {

using ::testing::ContainsRegex;
using ::testing::HasSubstr;
using ::testing::MatchesRegex;
using ::testing::Not;

class RootCauseTest : public ::testing::Test {
 protected:
  // The last condition's message of job `name`.
  std::string Message(const std::string& name) {
    CommandResult get = sandbox_.Cohort({"get", name, "-o", "json"});
    EXPECT_EQ(get.exit_code, 0) << get.output;
    nlohmann::json object =
        nlohmann::json::parse(get.output.substr(get.output.find('{')), nullptr, false);
    if (!object.is_object()) return "";
    return object["status"]["conditions"].back().value("message", "");
  }
  // `manifest` with `annotations` (YAML lines under metadata.annotations) added.
  static std::string Annotated(const std::string& manifest, const std::string& name,
                               const std::string& annotations) {
    std::string text = manifest;
    const std::string metadata = "metadata:\n  name: " + name + "\n";
    text.replace(text.find(metadata), metadata.size(), metadata + "  annotations:\n" + annotations);
    return text;
  }
  CohortSandbox sandbox_;
};

// Issue 15's end: a worker that prints "CUDA out of memory" and exits 1 under OnFailure is not
// restarted when a log policy says the failure is permanent, and the job's message quotes the line.
TEST_F(RootCauseTest, APermanentLogPolicyEndsTheJobQuotingTheLine) {
  const std::string manifest = Annotated(
      Manifest("cuda", ReplicaSpec("Worker", 2, "OnFailure",
                                   {{"FAIL_INDEX", "1"},
                                    {"FAIL_CODE", "1"},
                                    {"FAIL_MESSAGE",
                                     "RuntimeError: CUDA out of memory. Tried to allocate 2 GiB"},
                                    {"SLEEP_SECONDS", "60"}})),
      "cuda",
      "    cohort.dev/log-policies: '[{\"name\": \"cuda-oom\", \"pattern\": \"CUDA out of "
      "memory\", \"action\": \"permanent\"}]'\n");
  CommandResult run = sandbox_.Cohort({"run", sandbox_.WriteFile("job.yaml", manifest).string()},
                                      std::chrono::seconds(60));
  EXPECT_EQ(run.exit_code, 1) << run.output;
  EXPECT_THAT(Message("cuda"),
              MatchesRegex("TFJob default/cuda has failed because 1 Worker replica\\(s\\) failed: "
                           "worker-1 exited with code 1 at [0-9T:-]+Z after 0 restarts; its log: "
                           "\"RuntimeError: CUDA out of memory. Tried to allocate 2 GiB\" \\(log "
                           "policy cuda-oom: permanent\\)\\."));
  EXPECT_THAT(run.output, Not(HasSubstr("TFJobRestarting")));
  CommandResult describe = sandbox_.Cohort({"describe", "cuda"});
  EXPECT_THAT(describe.output, ContainsRegex("worker-1 +Failed +0 +1 "));
  // cleanPodPolicy None keeps worker 0, stopped after the failure, with its own last lines.
  EXPECT_THAT(describe.output, ContainsRegex("Last Log Lines:\n(.*\n)*  worker-1 \\(exit code 1 at "
                                             "[0-9T:-]+Z\\):\n"));
  EXPECT_THAT(describe.output,
              HasSubstr("    RuntimeError: CUDA out of memory. Tried to allocate 2 GiB\n"));
}

// A program that refuses its flags prints the error, then a usage hint: the job's message quotes
// the error, not the hint (issue 34: "Run cohort-train --help for usage." was quoted).
TEST_F(RootCauseTest, TheErrorIsQuotedNotTheUsageHintAfterIt) {
  const std::string manifest = Manifest(
      "refused",
      ReplicaSpec("Worker", 1, "Never",
                  {{"FAIL_INDEX", "0"},
                   {"FAIL_CODE", "2"},
                   {"FAIL_MESSAGE", "cohort-train: error: --checkpoint_path: gs://b/c is a URL"},
                   {"FAIL_HINT", "Run cohort-train --help for usage."}}));
  CommandResult run = sandbox_.Cohort({"run", sandbox_.WriteFile("job.yaml", manifest).string()},
                                      std::chrono::seconds(60));
  EXPECT_EQ(run.exit_code, 1) << run.output;
  EXPECT_THAT(Message("refused"), HasSubstr("worker-0 exited with code 2 at "));
  EXPECT_THAT(Message("refused"),
              HasSubstr("; its last error line: \"cohort-train: error: --checkpoint_path: gs://b/c "
                        "is a URL\""));
  CommandResult wide = sandbox_.Cohort({"get", "refused", "-o", "wide"});
  EXPECT_THAT(wide.output, HasSubstr("cohort-train: error: --checkpoint_path"));
  EXPECT_THAT(wide.output, Not(HasSubstr("Run cohort-train --help")));
}

// The same rule from $COHORT_HOME/config, for every job.
TEST_F(RootCauseTest, ConfigLogPoliciesApplyToEveryJob) {
  sandbox_.WriteFile("home/config",
                     "logPolicies:\n  - {name: cuda-oom, pattern: CUDA out of memory, action: "
                     "permanent}\n");
  const std::string manifest = Manifest(
      "configured",
      ReplicaSpec(
          "Worker", 1, "OnFailure",
          {{"FAIL_INDEX", "0"}, {"FAIL_CODE", "1"}, {"FAIL_MESSAGE", "CUDA out of memory"}}));
  CommandResult run = sandbox_.Cohort({"run", sandbox_.WriteFile("job.yaml", manifest).string()},
                                      std::chrono::seconds(60));
  EXPECT_EQ(run.exit_code, 1) << run.output;
  EXPECT_THAT(Message("configured"),
              HasSubstr("after 0 restarts; its log: \"CUDA out of memory\" (log policy cuda-oom: "
                        "permanent)."));
  // A broken config stops a run before anything starts, naming the file.
  sandbox_.WriteFile("home/config", "logPolicies:\n  - {pattern: x, action: later}\n");
  CommandResult refused = sandbox_.Cohort(
      {"run", sandbox_.WriteFile("job2.yaml", Manifest("second", ReplicaSpec("Worker", 1, "Never")))
                  .string()});
  EXPECT_NE(refused.exit_code, 0);
  EXPECT_THAT(refused.output, HasSubstr("config: logPolicies[0].action: \"later\" is not one of"));
}

// Issue 15's done-when without any rule: a worker that keeps failing ends the job with a message
// naming the worker, its exit code and the last line of its log.
TEST_F(RootCauseTest, AWorkerThatKeepsFailingIsNamedWithItsCodeAndLastLine) {
  const std::string manifest =
      Manifest("keeps",
               ReplicaSpec("Worker", 1, "OnFailure",
                           {{"FAIL_INDEX", "0"},
                            {"FAIL_CODE", "3"},
                            {"FAIL_MESSAGE", "error: cannot open /data/train.csv"}}),
               "    backoffLimit: 1\n");
  CommandResult run = sandbox_.Cohort({"run", sandbox_.WriteFile("job.yaml", manifest).string()},
                                      std::chrono::seconds(60));
  EXPECT_EQ(run.exit_code, 1) << run.output;
  EXPECT_THAT(Message("keeps"),
              MatchesRegex("Job keeps has failed because it has reached the specified backoff "
                           "limit: worker-0 exited with code 3 at [0-9T:-]+Z after 1 restart; its "
                           "last log line: \"error: cannot open /data/train.csv\""));
}

// Exit 127 in the first second: the message says the command could not run and names it and
// the image mapping it came from.
TEST_F(RootCauseTest, ACommandThatCannotRunGetsAHintNamingItAndItsImageMapping) {
  const std::string manifest =
      "apiVersion: kubeflow.org/v1\nkind: TFJob\nmetadata: {name: missing}\n"
      "spec:\n  tfReplicaSpecs:\n    Worker:\n      replicas: 1\n      restartPolicy: Never\n"
      "      template:\n        spec:\n          containers:\n"
      "            - {name: tensorflow, image: example/trainer, args: [--epochs, '1']}\n";
  CommandResult run = sandbox_.Cohort({"run", sandbox_.WriteFile("job.yaml", manifest).string(),
                                       "--image", "example/trainer=/nonexistent/train.py"});
  EXPECT_EQ(run.exit_code, 1) << run.output;
  const std::string message = Message("missing");
  EXPECT_THAT(message, HasSubstr("worker-0 exited with code 127 at "));
  EXPECT_THAT(message,
              HasSubstr("exit code 127 within its first second: its command could not "
                        "be run (not found); it ran /bin/sh -c 'exec /nonexistent/train.py "
                        "\"$@\"' example/trainer --epochs 1 (image example/trainer is "
                        "mapped to '/nonexistent/train.py' by --image)"));
}

// A manifest written for a cluster is valid here too: its unmapped images are warnings.
TEST_F(RootCauseTest, ValidateWarnsAboutUnmappedImagesAndStillAccepts) {
  const std::string manifest =
      "apiVersion: kubeflow.org/v1\nkind: TFJob\nmetadata: {name: cluster}\n"
      "spec:\n  tfReplicaSpecs:\n    Worker:\n      replicas: 2\n      template:\n"
      "        spec:\n          containers:\n"
      "            - {name: tensorflow, image: gcr.io/team/trainer:1.0}\n";
  const std::string file = sandbox_.WriteFile("job.yaml", manifest).string();
  CommandResult validate = sandbox_.Cohort({"validate", file});
  EXPECT_EQ(validate.exit_code, 0) << validate.output;
  EXPECT_THAT(validate.output, HasSubstr(": valid TFJob default/cluster (2 Worker)"));
  EXPECT_THAT(validate.output,
              HasSubstr("cohort: warning: " + file +
                        ":11:15: Worker: image \"gcr.io/team/trainer:1.0\" is not mapped to a "
                        "command, so this job cannot run here as it is (valid for a cluster); map "
                        "it with --image gcr.io/team/trainer:1.0=COMMAND"));
  CommandResult mapped =
      sandbox_.Cohort({"validate", file, "--image", "gcr.io/team/trainer:1.0=/bin/true"});
  EXPECT_EQ(mapped.exit_code, 0) << mapped.output;
  EXPECT_THAT(mapped.output, Not(HasSubstr("is not mapped")));
}

}  // namespace
}  // namespace cohort::testing
