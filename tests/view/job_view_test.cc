// The read model on a store with fixed contents: the `get` table, its wide form, `describe` and
// the JSON object, exactly as `cohort` prints them.
#include "view/job_view.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "exec/memory_job_store.h"
#include "job/reconciler.h"
#include "job/spec_parser.h"

namespace cohort::view {
namespace {

using exec::JobKey;
using exec::ReplicaRow;
using std::chrono::seconds;

class JobViewTest : public ::testing::Test {
 protected:
  void SetUp() override {
    store_.SetCreationTime(created_);
    AddJob("mnist", "default");
    AddJob("other", "research");

    job::JobStatus status;
    job::SetCondition(status, job::kConditionCreated, "True", "TFJobCreated",
                      "TFJob default/mnist is created.", created_);
    job::SetCondition(status, job::kConditionRunning, "True", "TFJobRunning",
                      "TFJob default/mnist is running.", created_ + seconds(1));
    job::SetCondition(status, job::kConditionFailed, "True", "TFJobFailed",
                      "TFJob default/mnist has failed because 1 Worker replica(s) failed.",
                      created_ + seconds(90));
    status.start_time = created_ + seconds(1);
    status.completion_time = created_ + seconds(90);
    status.replica_statuses["Worker"].succeeded = 1;
    status.replica_statuses["Worker"].failed = 1;
    ASSERT_TRUE(store_.WriteStatus(mnist_, status).ok());

    ReplicaRow worker0{
        "worker-0", "Succeeded", 0, 4000, 0, 0, created_ + seconds(1), created_ + seconds(60)};
    ReplicaRow worker1{
        "worker-1", "Failed", 2, 4001, 0, 137, created_ + seconds(30), created_ + seconds(90)};
    ASSERT_TRUE(store_.WriteReplicas(mnist_, {worker0, worker1}).ok());

    std::vector<job::Event> events;
    for (int pod = 0; pod < 2; ++pod) {
      events.push_back({"Normal", "SuccessfulCreatePod",
                        "Created pod: mnist-worker-" + std::to_string(pod), created_});
    }
    for (int exit = 0; exit < 3; ++exit) {
      events.push_back({"Warning", "ExitedWithCode",
                        "Pod: default.mnist-worker-1 exited with code 137",
                        created_ + seconds(30 * (exit + 1))});
    }
    ASSERT_TRUE(store_.AppendEvents(mnist_, events).ok());
  }

  void AddJob(const std::string& name, const std::string& namespace_name) {
    StatusOr<job::Job> job = job::LoadJob(
        "apiVersion: kubeflow.org/v1\nkind: TFJob\nmetadata: {name: " + name +
            ", namespace: " + namespace_name +
            "}\nspec:\n  tfReplicaSpecs:\n    Worker:\n      replicas: 2\n      template:\n"
            "        spec:\n          containers:\n"
            "            - {name: tensorflow, image: trainer, args: [--epochs, '3']}\n",
        "job.yaml");
    ASSERT_TRUE(job.ok()) << job.status().ToString();
    ASSERT_TRUE(store_.CreateJob(*job, nullptr).ok());
  }

  const Time created_ = *ParseTime("2026-01-01T00:00:00Z");
  const Time now_ = created_ + seconds(6 * 60);
  exec::MemoryJobStore store_;
  const JobKey mnist_{"default", "mnist"};
  const JobKey other_{"research", "other"};
};

TEST_F(JobViewTest, TheTableShowsNameStateAndAge) {
  EXPECT_EQ(JobTable(store_, {mnist_}, /*wide=*/false, /*show_namespace=*/false, now_),
            "NAME    STATE    AGE\n"
            "mnist   Failed   6m\n");
  // A job without status yet has no state.
  EXPECT_EQ(JobTable(store_, {mnist_, other_}, false, /*show_namespace=*/true, now_),
            "NAMESPACE   NAME    STATE    AGE\n"
            "default     mnist   Failed   6m\n"
            "research    other            6m\n");
}

TEST_F(JobViewTest, TheWideTableAddsCountsRestartsReplicasAndTheLastMessage) {
  EXPECT_EQ(JobTable(store_, {mnist_, other_}, /*wide=*/true, false, now_),
            "NAME    STATE    AGE   ACTIVE   SUCCEEDED   FAILED   RESTARTS   REPLICAS   MESSAGE\n"
            "mnist   Failed   6m    0        1           1        2          Worker=2   "
            "TFJob default/mnist has failed because 1 Worker replica(s) failed.\n"
            "other            6m    0        0           0        0          Worker=2   <none>\n");
}

TEST_F(JobViewTest, TheJsonObjectIsTheSpecWithItsStatus) {
  StatusOr<nlohmann::json> object = JobObject(store_, mnist_);
  ASSERT_TRUE(object.ok()) << object.status().ToString();
  EXPECT_EQ((*object)["kind"], "TFJob");
  EXPECT_EQ((*object)["metadata"]["creationTimestamp"], "2026-01-01T00:00:00Z");
  EXPECT_EQ((*object)["spec"]["tfReplicaSpecs"]["Worker"]["replicas"], 2);
  EXPECT_EQ((*object)["status"]["conditions"].back()["type"], "Failed");
  EXPECT_EQ((*object)["status"]["completionTime"], "2026-01-01T00:01:30Z");

  nlohmann::json list = JobObjects(store_, {mnist_, other_}, /*list=*/true);
  EXPECT_EQ(list["kind"], "List");
  ASSERT_EQ(list["items"].size(), 2u);
  EXPECT_EQ(list["items"][1]["metadata"]["name"], "other");
  EXPECT_EQ(JobObjects(store_, {mnist_}, /*list=*/false), *object);
  EXPECT_EQ(JobObjects(store_, {}, /*list=*/false), nlohmann::json::object());
  EXPECT_EQ(JobObject(store_, {"default", "absent"}).status().code(), Status::Code::kNotFound);
}

TEST_F(JobViewTest, DescribeShowsStatusReplicasAndFoldedEvents) {
  StatusOr<std::string> text = DescribeJob(store_, mnist_, now_);
  ASSERT_TRUE(text.ok()) << text.status().ToString();
  EXPECT_EQ(text->substr(0, text->find("Spec:\n")),
            "Name:         mnist\n"
            "Namespace:    default\n"
            "Labels:       <none>\n"
            "Annotations:  <none>\n"
            "API Version:  kubeflow.org/v1\n"
            "Kind:         TFJob\n"
            "Metadata:\n"
            "  Creation Timestamp:  2026-01-01T00:00:00Z\n");
  EXPECT_THAT(*text, ::testing::HasSubstr("          Containers:\n"
                                          "            Args:  --epochs 3\n"
                                          "            Image:  trainer\n"));
  // Identical events are folded into one line with their count, as kubectl does.
  EXPECT_EQ(text->substr(text->find("Status:\n")),
            "Status:\n"
            "  Completion Time:  2026-01-01T00:01:30Z\n"
            "  Conditions:\n"
            "    Type      Status   Reason         Last Transition Time   Message\n"
            "    Created   True     TFJobCreated   2026-01-01T00:00:00Z   TFJob default/mnist is "
            "created.\n"
            "    Running   False    TFJobRunning   2026-01-01T00:00:01Z   TFJob default/mnist is "
            "running.\n"
            "    Failed    True     TFJobFailed    2026-01-01T00:01:30Z   "
            "TFJob default/mnist has failed because 1 Worker replica(s) failed.\n"
            "  Replica Statuses:\n"
            "    Worker:\n"
            "      Succeeded:  1\n"
            "      Failed:     1\n"
            "  Start Time:  2026-01-01T00:00:01Z\n"
            "Replicas:\n"
            "  NAME       PHASE       RESTARTS   EXIT CODE   PORT   PID   LOG\n"
            "  worker-0   Succeeded   0          0           4000         "
            "memory:default/mnist/worker-0.log\n"
            "  worker-1   Failed      2          137         4001         "
            "memory:default/mnist/worker-1.log\n"
            "Events:\n"
            "  Type      Reason                Age                     From               Message\n"
            "  ----      ------                ----                    ----               -------\n"
            "  Normal    SuccessfulCreatePod   6m                      tfjob-controller   "
            "Created pod: mnist-worker-0\n"
            "  Normal    SuccessfulCreatePod   6m                      tfjob-controller   "
            "Created pod: mnist-worker-1\n"
            "  Warning   ExitedWithCode        4m30s (x3 over 5m30s)   tfjob-controller   "
            "Pod: default.mnist-worker-1 exited with code 137\n");
}

// A failed replica's last lines, kept with the job, follow the replica table; a replica that
// succeeded shows none.
TEST_F(JobViewTest, DescribeShowsTheLastLinesOfTheReplicasThatFailed) {
  ReplicaRow worker0{
      "worker-0", "Succeeded", 0, 4000, 0, 0, created_ + seconds(1), created_ + seconds(60)};
  worker0.last_log_lines = {"done"};
  ReplicaRow worker1{
      "worker-1", "Failed", 2, 4001, 0, 1, created_ + seconds(30), created_ + seconds(90)};
  worker1.removed = true;
  worker1.last_log_lines = {"step 7", "RuntimeError: CUDA out of memory"};
  ASSERT_TRUE(store_.WriteReplicas(mnist_, {worker0, worker1}).ok());
  StatusOr<std::string> text = DescribeJob(store_, mnist_, now_);
  ASSERT_TRUE(text.ok());
  EXPECT_THAT(*text, ::testing::HasSubstr("Last Log Lines:\n"
                                          "  worker-1 (exit code 1 at 2026-01-01T00:01:30Z):\n"
                                          "    step 7\n"
                                          "    RuntimeError: CUDA out of memory\n"
                                          "Events:\n"));
  EXPECT_THAT(*text, ::testing::Not(::testing::HasSubstr("    done\n")));
}

TEST_F(JobViewTest, DescribeOfAJobWithoutReplicasOrEventsSaysNone) {
  StatusOr<std::string> text = DescribeJob(store_, other_, now_);
  ASSERT_TRUE(text.ok()) << text.status().ToString();
  EXPECT_THAT(*text, ::testing::EndsWith("Replicas:\n  <none>\nEvents:\n  <none>\n"));
}

}  // namespace
}  // namespace cohort::view
