#include "job/status_json.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <ostream>
#include <string>

#include "job/reconciler.h"
#include "job/tfjob.h"

namespace cohort::job {
namespace {

using nlohmann::json;
using std::chrono::seconds;
using ::testing::HasSubstr;

const Time kStart = Clock::from_time_t(1630928890);  // 2021-09-06T11:48:10Z

JobStatus FinishedStatus() {
  JobStatus status;
  status.conditions.push_back(
      {"Created", "True", "TFJobCreated", "TFJob mnist is created.", kStart, kStart});
  status.conditions.push_back({"Running", "False", "TFJobRunning",
                               "TFJob kubeflow/mnist is running.", kStart + seconds(5),
                               kStart + seconds(5)});
  status.conditions.push_back({"Succeeded", "True", "TFJobSucceeded",
                               "TFJob kubeflow/mnist successfully completed.", kStart + seconds(80),
                               kStart + seconds(80)});
  status.replica_statuses["Worker"] = {0, 2, 0};
  status.replica_statuses["PS"] = {};
  status.replica_statuses["Evaluator"] = {1, 0, 3};
  status.start_time = kStart;
  status.completion_time = kStart + seconds(80);
  return status;
}

void ExpectSameStatus(const JobStatus& actual, const JobStatus& expected) {
  ASSERT_EQ(actual.conditions.size(), expected.conditions.size());
  for (size_t i = 0; i < expected.conditions.size(); ++i) {
    SCOPED_TRACE(i);
    const JobCondition& a = actual.conditions[i];
    const JobCondition& e = expected.conditions[i];
    EXPECT_EQ(a.type, e.type);
    EXPECT_EQ(a.status, e.status);
    EXPECT_EQ(a.reason, e.reason);
    EXPECT_EQ(a.message, e.message);
    EXPECT_EQ(a.last_update_time, e.last_update_time);
    EXPECT_EQ(a.last_transition_time, e.last_transition_time);
  }
  ASSERT_EQ(actual.replica_statuses.size(), expected.replica_statuses.size());
  for (const auto& [type, counts] : expected.replica_statuses) {
    SCOPED_TRACE(type);
    ASSERT_EQ(actual.replica_statuses.count(type), 1u);
    EXPECT_EQ(actual.replica_statuses.at(type).active, counts.active);
    EXPECT_EQ(actual.replica_statuses.at(type).succeeded, counts.succeeded);
    EXPECT_EQ(actual.replica_statuses.at(type).failed, counts.failed);
  }
  EXPECT_EQ(actual.start_time, expected.start_time);
  EXPECT_EQ(actual.completion_time, expected.completion_time);
}

TEST(JobStatusJsonTest, WritesTheTfJobStatusShape) {
  const json expected = json::parse(R"({
    "conditions": [
      {"type": "Created", "status": "True", "reason": "TFJobCreated",
       "message": "TFJob mnist is created.",
       "lastUpdateTime": "2021-09-06T11:48:10Z", "lastTransitionTime": "2021-09-06T11:48:10Z"},
      {"type": "Running", "status": "False", "reason": "TFJobRunning",
       "message": "TFJob kubeflow/mnist is running.",
       "lastUpdateTime": "2021-09-06T11:48:15Z", "lastTransitionTime": "2021-09-06T11:48:15Z"},
      {"type": "Succeeded", "status": "True", "reason": "TFJobSucceeded",
       "message": "TFJob kubeflow/mnist successfully completed.",
       "lastUpdateTime": "2021-09-06T11:49:30Z", "lastTransitionTime": "2021-09-06T11:49:30Z"}
    ],
    "replicaStatuses": {"Worker": {"succeeded": 2}, "PS": {}, "Evaluator": {"active": 1, "failed": 3}},
    "startTime": "2021-09-06T11:48:10Z",
    "completionTime": "2021-09-06T11:49:30Z"
  })");
  EXPECT_EQ(JobStatusToJson(FinishedStatus()), expected);
}

TEST(JobStatusJsonTest, LeavesOutWhatGoOmits) {
  JobStatus status;
  EXPECT_EQ(JobStatusToJson(status), json::parse(R"({"replicaStatuses": {}})"));
  status.conditions.push_back({"Created", "True", "", "", kStart, kStart});
  EXPECT_EQ(JobStatusToJson(status)["conditions"][0],
            json::parse(R"({"type": "Created", "status": "True",
                            "lastUpdateTime": "2021-09-06T11:48:10Z",
                            "lastTransitionTime": "2021-09-06T11:48:10Z"})"));
}

TEST(JobStatusJsonTest, RoundTrips) {
  const JobStatus status = FinishedStatus();
  StatusOr<JobStatus> read = JobStatusFromJson(JobStatusToJson(status));
  ASSERT_TRUE(read.ok()) << read.status().ToString();
  ExpectSameStatus(*read, status);
  JobStatus empty;
  StatusOr<JobStatus> read_empty = JobStatusFromJson(JobStatusToJson(empty));
  ASSERT_TRUE(read_empty.ok());
  ExpectSameStatus(*read_empty, empty);
}

// The reconciler writes whole seconds, so what it returns is exactly what is read back.
TEST(JobStatusJsonTest, ReconcilerStatusSurvivesTheRoundTrip) {
  Job job = NewTFJob();
  job.metadata.name = "mnist";
  job.replica_specs["Worker"] = ReplicaSpec{};
  ReconcileResult result = Reconcile(job, JobStatus{}, {}, kStart + std::chrono::milliseconds(420));
  StatusOr<JobStatus> read = JobStatusFromJson(JobStatusToJson(result.status));
  ASSERT_TRUE(read.ok());
  ExpectSameStatus(*read, result.status);
}

TEST(JobStatusJsonTest, AcceptsWhatKubernetesAdds) {
  StatusOr<JobStatus> read = JobStatusFromJson(json::parse(R"({
    "conditions": [{"type": "Created", "status": "True",
                    "lastUpdateTime": "2021-09-06T11:48:10.123456Z",
                    "lastTransitionTime": "2021-09-06T11:48:10Z"}],
    "replicaStatuses": {"Worker": {"active": 1, "selector": "x", "labelSelector": {}}, "PS": null},
    "startTime": null,
    "lastReconcileTime": "2021-09-06T11:48:10Z"
  })"));
  ASSERT_TRUE(read.ok()) << read.status().ToString();
  EXPECT_EQ(read->conditions[0].last_update_time, kStart);
  EXPECT_EQ(read->conditions[0].reason, "");
  EXPECT_EQ(read->replica_statuses.at("Worker").active, 1);
  EXPECT_EQ(read->replica_statuses.at("PS").active, 0);
  EXPECT_FALSE(read->start_time);
  EXPECT_FALSE(read->completion_time);
}

struct BadInput {
  std::string json_text;
  std::string error;
};

void PrintTo(const BadInput& input, std::ostream* out) { *out << input.json_text; }

class BadStatusTest : public ::testing::TestWithParam<BadInput> {};

TEST_P(BadStatusTest, SaysWhatAndWhere) {
  StatusOr<JobStatus> read = JobStatusFromJson(json::parse(GetParam().json_text));
  ASSERT_FALSE(read.ok());
  EXPECT_EQ(read.status().code(), Status::Code::kInvalidArgument);
  EXPECT_THAT(read.status().message(), HasSubstr(GetParam().error));
}

constexpr const char* kTimes =
    R"("lastUpdateTime": "2021-09-06T11:48:10Z", "lastTransitionTime": "2021-09-06T11:48:10Z")";

INSTANTIATE_TEST_SUITE_P(
    Errors, BadStatusTest,
    ::testing::Values(
        BadInput{R"([])", "status: expected an object, got array"},
        BadInput{R"({"conditions": {}})", "status.conditions: expected an array, got object"},
        BadInput{R"({"conditions": [3]})", "status.conditions[0]: expected an object, got number"},
        BadInput{std::string(R"({"conditions": [{"status": "True", )") + kTimes + "}]}",
                 "status.conditions[0]: missing \"type\""},
        BadInput{std::string(R"({"conditions": [{"type": "Created", )") + kTimes + "}]}",
                 "status.conditions[0]: missing \"status\""},
        BadInput{std::string(R"({"conditions": [{"type": "Created", "status": "Yes", )") + kTimes +
                     "}]}",
                 "status.conditions[0].status: \"Yes\" is not one of True, False, Unknown"},
        BadInput{R"({"conditions": [{"type": "Created", "status": "True",
                     "lastTransitionTime": "2021-09-06T11:48:10Z"}]})",
                 "status.conditions[0]: missing \"lastUpdateTime\""},
        BadInput{std::string(R"({"conditions": [{"type": "Created", "status": "True",
                     "reason": 7, )") +
                     kTimes + "}]}",
                 "status.conditions[0].reason: expected a string, got number"},
        BadInput{R"({"startTime": "yesterday"})",
                 "status.startTime: \"yesterday\" is not an RFC 3339 time"},
        BadInput{R"({"completionTime": 1630928890})",
                 "status.completionTime: expected a string, got number"},
        BadInput{R"({"replicaStatuses": []})",
                 "status.replicaStatuses: expected an object, got array"},
        BadInput{R"({"replicaStatuses": {"Worker": 2}})",
                 "status.replicaStatuses.Worker: expected an object, got number"},
        BadInput{R"({"replicaStatuses": {"Worker": {"active": -1}}})",
                 "status.replicaStatuses.Worker.active: -1 is not a count of replicas"},
        BadInput{R"({"replicaStatuses": {"Worker": {"failed": 4294967296}}})",
                 "status.replicaStatuses.Worker.failed: 4294967296 is not a count of replicas"},
        BadInput{R"({"replicaStatuses": {"Worker": {"succeeded": "2"}}})",
                 "status.replicaStatuses.Worker.succeeded: expected a non-negative integer, "
                 "got string"},
        BadInput{R"({"replicaStatuses": {"Worker": {"succeeded": 1.5}}})",
                 "status.replicaStatuses.Worker.succeeded: expected a non-negative integer"}));

// ---- Events ----

TEST(EventJsonTest, WritesOneLineOfEventsJsonl) {
  const Event event{"Normal", "ExitedWithCode", "Pod: kubeflow.mnist-worker-0 exited with code 0",
                    kStart + seconds(80)};
  EXPECT_EQ(EventToJson(event).dump(),
            R"({"message":"Pod: kubeflow.mnist-worker-0 exited with code 0",)"
            R"("reason":"ExitedWithCode","time":"2021-09-06T11:49:30Z","type":"Normal"})");
}

TEST(EventJsonTest, RoundTrips) {
  const Event event{"Warning", "TFJobRestarting",
                    "job mnist is restarting because Worker replica(s) failed.", kStart};
  StatusOr<Event> read = EventFromJson(EventToJson(event));
  ASSERT_TRUE(read.ok()) << read.status().ToString();
  EXPECT_EQ(read->type, event.type);
  EXPECT_EQ(read->reason, event.reason);
  EXPECT_EQ(read->message, event.message);
  EXPECT_EQ(read->time, event.time);
}

class BadEventTest : public ::testing::TestWithParam<BadInput> {};

TEST_P(BadEventTest, SaysWhatAndWhere) {
  StatusOr<Event> read = EventFromJson(json::parse(GetParam().json_text));
  ASSERT_FALSE(read.ok());
  EXPECT_EQ(read.status().code(), Status::Code::kInvalidArgument);
  EXPECT_THAT(read.status().message(), HasSubstr(GetParam().error));
}

INSTANTIATE_TEST_SUITE_P(
    Errors, BadEventTest,
    ::testing::Values(
        BadInput{R"("Normal")", "event: expected an object, got string"},
        BadInput{R"({"reason": "R", "message": "m", "time": "2021-09-06T11:48:10Z"})",
                 "event: missing \"type\""},
        BadInput{R"({"type": "Info", "reason": "R", "message": "m",
                     "time": "2021-09-06T11:48:10Z"})",
                 "event.type: \"Info\" is not one of Normal, Warning"},
        BadInput{R"({"type": "Normal", "reason": "", "message": "m",
                     "time": "2021-09-06T11:48:10Z"})",
                 "event.reason: empty"},
        BadInput{R"({"type": "Normal", "reason": "R", "time": "2021-09-06T11:48:10Z"})",
                 "event: missing \"message\""},
        BadInput{R"({"type": "Normal", "reason": "R", "message": "m"})", "event: missing \"time\""},
        BadInput{R"({"type": "Normal", "reason": "R", "message": "m", "time": "now"})",
                 "event.time: \"now\" is not an RFC 3339 time"}));

}  // namespace
}  // namespace cohort::job
