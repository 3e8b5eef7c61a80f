// The command line's own views and helpers: pods, gcloud's job list and describe, -o forms,
// the jsonpath subset, apply's spec differences, watch, and the golden outputs of `get`,
// `get pods`, `describe` and `ai-platform jobs list`, whose column layouts docs/cli.md documents.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <fstream>
#include <sstream>

#include "exec/memory_job_store.h"
#include "job/job_kind.h"
#include "job/reconciler.h"
#include "job/spec_parser.h"
#include "view/ai_platform_view.h"
#include "view/command_line.h"
#include "view/job_view.h"
#include "view/job_watch.h"
#include "view/jsonpath.h"
#include "view/pod_view.h"
#include "view/spec_diff.h"

namespace cohort::view {
namespace {

using exec::JobKey;
using exec::ReplicaRow;
using std::chrono::seconds;
using ::testing::HasSubstr;

std::string ReadText(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

class CliViewsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    setenv("TZ", "UTC", 1);
    tzset();
    store_.SetCreationTime(created_);
    StatusOr<job::Job> job = job::LoadJob(
        "apiVersion: kubeflow.org/v1\nkind: TFJob\nmetadata: {name: mnist}\nspec:\n"
        "  tfReplicaSpecs:\n"
        "    Chief:\n      replicas: 1\n      template:\n        spec:\n          containers:\n"
        "            - {name: tensorflow, image: trainer}\n"
        "    Worker:\n      replicas: 2\n      template:\n        spec:\n          containers:\n"
        "            - {name: tensorflow, image: trainer}\n",
        "job.yaml");
    ASSERT_TRUE(job.ok()) << job.status().ToString();
    ASSERT_TRUE(store_.CreateJob(*job, nullptr).ok());
    job::JobStatus status;
    job::SetCondition(status, job::kConditionCreated, "True", "TFJobCreated",
                      "TFJob default/mnist is created.", created_);
    job::SetCondition(status, job::kConditionRunning, "True", "TFJobRunning",
                      "TFJob default/mnist is running.", created_ + seconds(1));
    status.start_time = created_ + seconds(1);
    status.replica_statuses["Chief"].active = 1;
    status.replica_statuses["Worker"].active = 1;
    status.replica_statuses["Worker"].succeeded = 1;
    ASSERT_TRUE(store_.WriteStatus(mnist_, status).ok());
    ReplicaRow chief{"chief-0",   "Running", 0, 4000, 101, std::nullopt, created_ + seconds(1),
                     std::nullopt};
    ReplicaRow worker0{
        "worker-0", "Succeeded", 0, 4001, 0, 0, created_ + seconds(1), created_ + seconds(50)};
    ReplicaRow worker1{"worker-1",  "Running", 2, 4002, 103, std::nullopt, created_ + seconds(40),
                       std::nullopt};
    ASSERT_TRUE(store_.WriteReplicas(mnist_, {chief, worker0, worker1}).ok());
    ASSERT_TRUE(store_
                    .AppendEvents(mnist_, {{"Normal", "SuccessfulCreatePod",
                                            "Created pod: mnist-worker-0", created_}})
                    .ok());
  }

  // Compares `text` with tests/data/golden/`name`; COHORT_UPDATE_GOLDEN=1 rewrites the file.
  // A table's header must be one of the layouts docs/cli.md documents.
  void ExpectGolden(const std::string& name, const std::string& text, bool table = true) {
    std::string path = std::string(COHORT_TEST_DATA_DIR) + "/golden/" + name;
    if (getenv("COHORT_UPDATE_GOLDEN") != nullptr) std::ofstream(path) << text;
    EXPECT_EQ(text, ReadText(path)) << path;
    if (!table) return;
    std::string header = text.substr(0, text.find('\n'));
    std::string docs = ReadText(std::string(COHORT_TEST_DATA_DIR) + "/../../docs/cli.md");
    EXPECT_THAT(docs, HasSubstr("    " + header + "\n")) << name << "'s header";
  }

  const Time created_ = *ParseTime("2026-01-01T00:00:00Z");
  const Time now_ = created_ + seconds(6 * 60);
  exec::MemoryJobStore store_;
  const JobKey mnist_{"default", "mnist"};
};

TEST_F(CliViewsTest, GoldenOutputs) {
  ExpectGolden("get.txt", JobTable(store_, {mnist_}, false, false, now_));
  ExpectGolden("get-wide.txt", JobTable(store_, {mnist_}, true, false, now_));
  ExpectGolden("get-pods.txt", PodTable(store_, JobPods(store_, mnist_), false, false, now_));
  ExpectGolden("get-pods-wide.txt", PodTable(store_, JobPods(store_, mnist_), true, false, now_));
  StatusOr<std::string> described = DescribeJob(store_, mnist_, now_);
  ASSERT_TRUE(described.ok());
  ExpectGolden("describe.txt", *described, /*table=*/false);
  ExpectGolden("ai-platform-list.txt", AiPlatformJobTable(store_, {mnist_}));
}

TEST_F(CliViewsTest, PodsAreTheReplicasNamedAsTheOperatorNamesThem) {
  std::vector<PodRef> pods = JobPods(store_, mnist_);
  ASSERT_EQ(pods.size(), 3u);
  EXPECT_EQ(pods[0].PodName(), "mnist-chief-0");
  StatusOr<PodRef> found = FindPod(store_, "default", "mnist-worker-1");
  ASSERT_TRUE(found.ok());
  EXPECT_EQ(found->replica, "worker-1");
  StatusOr<PodRef> absent = FindPod(store_, "default", "mnist-worker-7");
  EXPECT_EQ(absent.status().code(), Status::Code::kNotFound);
  EXPECT_THAT(absent.status().message(), HasSubstr("the pods there are mnist-chief-0, "));
  nlohmann::json pod = PodObject(store_, *found);
  EXPECT_EQ(pod["status"]["phase"], "Running");
  EXPECT_EQ(pod["status"]["containerStatuses"][0]["restartCount"], 2);
  EXPECT_EQ(pod["metadata"]["labels"]["training.kubeflow.org/replica-type"], "worker");
  EXPECT_EQ(PodStatus({"w", "Failed", 0, 0, 0, 1, std::nullopt, std::nullopt}), "Error");
  // A replica being stopped shows as kubectl shows a pod being deleted.
  EXPECT_EQ(PodStatus({"w", "Terminating", 0, 0, 42, std::nullopt, std::nullopt, std::nullopt}),
            "Terminating");
}

TEST_F(CliViewsTest, AFinishedJobsRemovedReplicasAreNotListed) {
  job::JobStatus status = *store_.ReadStatus(mnist_);
  job::SetCondition(status, job::kConditionSucceeded, "True", "TFJobSucceeded", "done",
                    created_ + seconds(60));
  ASSERT_TRUE(store_.WriteStatus(mnist_, status).ok());
  ASSERT_TRUE(store_.WriteReplicas(mnist_, {store_.ReadReplicas(mnist_)[1]}).ok());
  EXPECT_EQ(JobPods(store_, mnist_).size(), 1u);
  EXPECT_EQ(JobPods(store_, mnist_, /*with_removed=*/true).size(), 3u);
}

TEST_F(CliViewsTest, AiPlatformStatesAndDescribe) {
  job::JobStatus status;
  EXPECT_EQ(AiPlatformState(status), "QUEUED");
  job::SetCondition(status, job::kConditionSuspended, "True", "TFJobSuspended", "", created_);
  EXPECT_EQ(AiPlatformState(status), "CANCELLED");
  job::SetCondition(status, job::kConditionFailed, "True", "TFJobFailed", "it broke", created_);
  EXPECT_EQ(AiPlatformState(status), "FAILED");
  StatusOr<nlohmann::json> object = AiPlatformJobObject(store_, mnist_);
  ASSERT_TRUE(object.ok());
  EXPECT_EQ((*object)["jobId"], "mnist");
  EXPECT_EQ((*object)["state"], "RUNNING");
  EXPECT_EQ((*object)["trainingInput"]["workerCount"], "2");
  EXPECT_EQ((*object)["trainingInput"]["masterConfig"]["imageUri"], "trainer");
}

TEST_F(CliViewsTest, AiPlatformErrorMessageNamesTheFirstReplicaThatExitedNonZero) {
  ReplicaRow master;
  master.name = "master-0";
  master.phase = "Failed";
  master.exit_code = 2;
  master.finished_at = created_ + seconds(5);
  master.last_log_lines = {"replica master-0 failing with 2", "error: no such image"};
  ReplicaRow worker;
  worker.name = "worker-1";
  worker.phase = "Failed";
  worker.exit_code = 1;
  worker.finished_at = created_ + seconds(9);  // later: it does not decide the message
  ReplicaRow stopped;
  stopped.name = "ps-0";
  stopped.phase = "Stopped";
  stopped.exit_code = 143;
  stopped.finished_at = created_ + seconds(1);  // stopped by the job, not its own failure
  EXPECT_EQ(AiPlatformErrorMessage({stopped, worker, master}, "train_taxi_5", "fallback"),
            "The replica master 0 exited with a non-zero status of 2. Its last log line: "
            "\"error: no such image\". Its logs: cohort ai-platform jobs stream-logs "
            "train_taxi_5");
  // No replica failed by itself (the deadline stopped them): the condition's message.
  EXPECT_EQ(AiPlatformErrorMessage({stopped}, "train_taxi_5", "past its deadline"),
            "past its deadline");
}

TEST(CommandLineTest, ShortOptionsWithEqualsAreSplit) {
  EXPECT_EQ(NormalizeArguments({"get", "-o=wide", "-n=research", "--output=json", "--", "-o=x"}),
            (std::vector<std::string>{"get", "-o", "wide", "-n", "research", "--output=json", "--",
                                      "-o=x"}));
  EXPECT_EQ(NormalizeArguments({"get", "-o=jsonpath={.a=b}"})[2], "jsonpath={.a=b}");
}

TEST(CommandLineTest, ResourceTypesAndNames) {
  StatusOr<ResourceArguments> jobs = SplitResource({"tfjobs", "a", "b"});
  ASSERT_TRUE(jobs.ok());
  EXPECT_EQ(jobs->resource, Resource::kJob);
  EXPECT_EQ(jobs->names, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(SplitResource({"pods"})->resource, Resource::kPod);
  EXPECT_EQ(SplitResource({"tfjob.kubeflow.org/a"})->names, std::vector<std::string>{"a"});
  EXPECT_EQ(SplitResource({"mnist"})->resource, Resource::kNone);
  EXPECT_EQ(SplitResource({"mnist"})->names, std::vector<std::string>{"mnist"});
  EXPECT_THAT(SplitResource({"deployments"}).status().message(), HasSubstr("no resource type"));
  EXPECT_FALSE(SplitResource({"services/x"}).ok());
}

TEST(CommandLineTest, EveryKindOfTheRegistryIsAResourceTypeByEachOfItsNames) {
  const job::JobKind* pytorch = job::KindRegistry::Default().FindByName("PyTorchJob");
  const job::JobKind* tf = job::KindRegistry::Default().FindByName("TFJob");
  ASSERT_NE(pytorch, nullptr);
  ASSERT_NE(tf, nullptr);
  for (const std::string& type :
       {"pytorchjob", "pytorchjobs", "pytorchjob.kubeflow.org", "pytorchjobs.kubeflow.org"}) {
    StatusOr<ResourceArguments> named = SplitResource({type, "a"});
    ASSERT_TRUE(named.ok()) << type;
    EXPECT_EQ(named->resource, Resource::kJob) << type;
    EXPECT_EQ(named->kind, pytorch) << type;
    EXPECT_EQ(named->names, std::vector<std::string>{"a"}) << type;
  }
  EXPECT_EQ(SplitResource({"tfjobs"})->kind, tf);
  EXPECT_EQ(SplitResource({"pytorchjob/a", "pytorchjob/b"})->names,
            (std::vector<std::string>{"a", "b"}));
  EXPECT_FALSE(SplitResource({"pytorchjob/a", "tfjob/b"}).ok());
  EXPECT_EQ(SplitResource({"a"})->kind, nullptr);
  EXPECT_EQ(SplitResource({"pods"})->kind, nullptr);
  EXPECT_EQ(SplitResource({"services/x"}).status().message(),
            "the server doesn't have a resource type \"services\"; cohort has tfjobs and "
            "pytorchjobs and pods");
  EXPECT_EQ(SplitResource({"mpijobs"}).status().message(),
            "cohort has no resource type \"mpijobs\": it runs tfjobs and pytorchjobs, whose "
            "replicas are shown as pods");
  EXPECT_EQ(JobPlurals("or"), "tfjobs or pytorchjobs");
  EXPECT_EQ(JobTypeChoices("|", false), "tfjob|pytorchjob");
}

TEST(CommandLineTest, OutputFormats) {
  EXPECT_EQ(ParseOutputFormat("name")->kind, OutputFormat::Kind::kName);
  EXPECT_EQ(ParseOutputFormat("")->kind, OutputFormat::Kind::kTable);
  EXPECT_EQ(ParseOutputFormat("jsonpath={.kind}")->jsonpath, "{.kind}");
  EXPECT_THAT(ParseOutputFormat("xml").status().message(), HasSubstr("allowed formats"));
}

TEST(CommandLineTest, TheClosestCommand) {
  std::vector<std::string> commands = {"run",  "submit", "apply",   "get",        "describe",
                                       "logs", "delete", "suspend", "ai-platform"};
  EXPECT_EQ(ClosestCommand("aply", commands), "apply");
  EXPECT_EQ(ClosestCommand("describ", commands), "describe");
  EXPECT_EQ(ClosestCommand("list", commands), "get");
  EXPECT_EQ(ClosestCommand("cancel", commands), "suspend");
  EXPECT_EQ(ClosestCommand("stream-logs", commands), "logs");
  EXPECT_EQ(ClosestCommand("frobnicate", commands), "");
  EXPECT_EQ(UnknownCommandMessage("lgs", commands),
            "unknown command \"lgs\"; did you mean \"logs\"? (cohort --help lists the commands)");
}

TEST(CommandLineTest, JobNameFromFileName) {
  EXPECT_EQ(*JobNameFromFileName("/tmp/config_ps.yaml"), "config-ps");
  EXPECT_EQ(*JobNameFromFileName("config.yaml"), "config");
  EXPECT_FALSE(JobNameFromFileName("-").ok());
  EXPECT_FALSE(JobNameFromFileName("9lives.yaml").ok());
}

TEST(JsonPathTest, FieldsIndexesWildcardsAndRanges) {
  nlohmann::json list = nlohmann::json::parse(R"({"kind": "List", "items": [
      {"metadata": {"name": "a", "labels": {"app.kubernetes.io/name": "x"}},
       "status": {"conditions": [{"type": "Created"}, {"type": "Running"}]}},
      {"metadata": {"name": "b"}, "status": {"conditions": [{"type": "Failed"}]}}]})");
  EXPECT_EQ(*EvaluateJsonPath("{.kind}", list), "List");
  EXPECT_EQ(*EvaluateJsonPath("{.items[*].metadata.name}", list), "a b");
  EXPECT_EQ(*EvaluateJsonPath("{.items[0].status.conditions[-1].type}", list), "Running");
  EXPECT_EQ(*EvaluateJsonPath("{.items[0].metadata.labels['app.kubernetes.io/name']}", list), "x");
  EXPECT_EQ(*EvaluateJsonPath(
                R"({range .items[*]}{.metadata.name}{"\t"}{.status.conditions[0].type}{"\n"}{end})",
                list),
            "a\tCreated\nb\tFailed\n");
  EXPECT_EQ(*EvaluateJsonPath("name: {$.items[1].metadata.name}!", list), "name: b!");
  EXPECT_EQ(*EvaluateJsonPath("{.items[0].metadata}", list),
            R"({"labels":{"app.kubernetes.io/name":"x"},"name":"a"})");
  EXPECT_EQ(*EvaluateJsonPath("{.absent.field}", list), "");
}

TEST(JsonPathTest, SlicesAsKubectlTakesThem) {
  nlohmann::json object = nlohmann::json::parse(
      R"({"conditions": [{"type": "Created"}, {"type": "Running"}, {"type": "Succeeded"}]})");
  EXPECT_EQ(*EvaluateJsonPath("{.conditions[-1:].type}", object), "Succeeded");
  EXPECT_EQ(*EvaluateJsonPath("{.conditions[0:2].type}", object), "Created Running");
  EXPECT_EQ(*EvaluateJsonPath("{.conditions[1:].type}", object), "Running Succeeded");
  EXPECT_EQ(*EvaluateJsonPath("{.conditions[:-2].type}", object), "Created");
  EXPECT_EQ(*EvaluateJsonPath("{.conditions[-9:9].type}", object), "Created Running Succeeded");
  EXPECT_EQ(*EvaluateJsonPath("{.conditions[2:1].type}", object), "");
  EXPECT_EQ(*EvaluateJsonPath("{.absent[-1:].type}", object), "");
}

TEST(JsonPathTest, UnsupportedFormsAreRefused) {
  nlohmann::json object = {{"a", 1}};
  for (const char* bad : {"{.items[?(@.a==1)]}", "{..name}", "{.items[0:2:1]}", "{.items[0,1]}",
                          "{.items[a:]}", "{.a", "{range .items[*]}{.a}", "{end}", "{.a[x]}"}) {
    StatusOr<std::string> result = EvaluateJsonPath(bad, object);
    EXPECT_EQ(result.status().code(), Status::Code::kInvalidArgument) << bad;
    EXPECT_THAT(result.status().message(), HasSubstr("jsonpath")) << bad;
  }
}

TEST(SpecDiffTest, NamesEachDifferingField) {
  nlohmann::json running = {{"tfReplicaSpecs", {{"Worker", {{"replicas", 2}}}}},
                            {"runPolicy", {{"backoffLimit", 3}}}};
  nlohmann::json file = running;
  EXPECT_TRUE(SpecDifferences(running, file).empty());
  file["tfReplicaSpecs"]["Worker"]["replicas"] = 3;
  file["runPolicy"].erase("backoffLimit");
  file["extra"] = "x";
  EXPECT_EQ(SpecDifferences(running, file),
            (std::vector<std::string>{"spec.extra: <none> -> x",
                                      "spec.runPolicy.backoffLimit: 3 -> <none>",
                                      "spec.tfReplicaSpecs.Worker.replicas: 2 -> 3"}));
}

TEST_F(CliViewsTest, WatchReportsChangesAndStopsWhenTheJobsAreDone) {
  JobWatch watch(store_, {mnist_});
  EXPECT_EQ(watch.Changed().size(), 1u);  // everything is new at first
  EXPECT_TRUE(watch.Changed().empty());
  EXPECT_FALSE(watch.AllDone());
  // A watch that never sees the job finish stops at its timeout.
  int changes = 0;
  EXPECT_FALSE(WatchJobs(
      watch, std::chrono::milliseconds(50), nullptr, [&](const JobKey&) { ++changes; },
      std::chrono::milliseconds(10)));
  EXPECT_EQ(changes, 0);
  job::JobStatus status = *store_.ReadStatus(mnist_);
  job::SetCondition(status, job::kConditionSucceeded, "True", "TFJobSucceeded", "done", now_);
  int refreshes = 0;
  EXPECT_TRUE(WatchJobs(
      watch, std::chrono::seconds(10),
      [&] { ++refreshes, (void)store_.WriteStatus(mnist_, status); },
      [&](const JobKey&) { ++changes; }, std::chrono::milliseconds(10)));
  EXPECT_EQ(changes, 1);
  EXPECT_EQ(refreshes, 1);
  // A deleted job is done too.
  ASSERT_TRUE(store_.DeleteJob(mnist_).ok());
  EXPECT_TRUE(watch.AllDone());
}

}  // namespace
}  // namespace cohort::view
