// The JobStateStore contract, run against both implementations: the $COHORT_HOME directory and
// the in-memory double the controller's and the read model's tests rely on.
#include "exec/job_state_store.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>
#include <thread>

#include "exec/job_store.h"
#include "exec/memory_job_store.h"
#include "exec_test_support.h"
#include "job/reconciler.h"
#include "job/status_json.h"

namespace cohort::exec {
namespace {

using ::testing::HasSubstr;

struct DirectoryStore {
  ScratchDirectory home;
  JobStore store{home.path()};
};

struct MemoryStore {
  MemoryJobStore store;
};

template <typename Holder>
class JobStateStoreTest : public ::testing::Test {
 protected:
  JobStateStore& store() { return holder_.store; }
  job::Job Job(const std::string& name, const std::string& namespace_name = "default") {
    job::Job job = ShellJob(name, 2, "true");
    job.metadata.namespace_name = namespace_name;
    return job;
  }
  Holder holder_;
};

using Stores = ::testing::Types<DirectoryStore, MemoryStore>;
TYPED_TEST_SUITE(JobStateStoreTest, Stores);

TYPED_TEST(JobStateStoreTest, AJobIsCreatedOnceAndListedInOrder) {
  JobStateStore& store = this->store();
  for (const auto& [name, namespace_name] :
       {std::pair{"b", "default"}, {"a", "default"}, {"c", "research"}}) {
    SupervisorLock lock;
    ASSERT_TRUE(store.CreateJob(this->Job(name, namespace_name), &lock).ok());
  }
  SupervisorLock lock;
  EXPECT_EQ(store.CreateJob(this->Job("a"), &lock).code(), Status::Code::kAlreadyExists);

  std::vector<std::string> names;
  for (const JobKey& key : store.ListJobs()) names.push_back(key.ToString());
  EXPECT_EQ(names, (std::vector<std::string>{"default/a", "default/b", "research/c"}));
  EXPECT_EQ(store.ListJobs("research").size(), 1u);
  EXPECT_TRUE(store.Exists({"research", "c"}));
  EXPECT_FALSE(store.Exists({"default", "c"}));
}

TYPED_TEST(JobStateStoreTest, TheSpecReadsBackWithItsCreationTime) {
  JobStateStore& store = this->store();
  SupervisorLock lock;
  Time before = Clock::now() - std::chrono::seconds(1);
  ASSERT_TRUE(store.CreateJob(this->Job("spec"), &lock).ok());
  JobKey key{"default", "spec"};
  StatusOr<job::Job> spec = store.ReadSpec(key);
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  EXPECT_EQ(spec->replica_specs.at("Worker").replicas, 2);
  StatusOr<nlohmann::json> object = store.ReadSpecObject(key);
  ASSERT_TRUE(object.ok()) << object.status().ToString();
  EXPECT_EQ((*object)["kind"], "TFJob");
  EXPECT_EQ(ParseTime((*object)["metadata"]["creationTimestamp"]), store.CreationTime(key));
  EXPECT_GE(store.CreationTime(key), before);
  EXPECT_EQ(store.ReadSpec({"default", "absent"}).status().code(), Status::Code::kNotFound);
  EXPECT_EQ(store.ReadSpecObject({"default", "absent"}).status().code(), Status::Code::kNotFound);
}

TYPED_TEST(JobStateStoreTest, SuspendingRewritesTheSpecAndChangesItsVersion) {
  JobStateStore& store = this->store();
  SupervisorLock lock;
  ASSERT_TRUE(store.CreateJob(this->Job("pausable"), &lock).ok());
  JobKey key{"default", "pausable"};
  int64_t version = store.SpecVersion(key);
  EXPECT_GT(version, 0);
  // Suspend and resume at once, within one tick of any clock: each change is a later version.
  ASSERT_TRUE(store.SetSuspended(key, true).ok());
  int64_t suspended_version = store.SpecVersion(key);
  EXPECT_GT(suspended_version, version);
  ASSERT_TRUE(store.SetSuspended(key, false).ok());
  EXPECT_GT(store.SpecVersion(key), suspended_version);
  ASSERT_TRUE(store.SetSuspended(key, true).ok());
  StatusOr<job::Job> spec = store.ReadSpec(key);
  ASSERT_TRUE(spec.ok());
  EXPECT_TRUE(spec->run_policy.suspend);
  EXPECT_EQ(store.SetSuspended({"default", "absent"}, true).code(), Status::Code::kNotFound);
}

TYPED_TEST(JobStateStoreTest, StatusEventsEndpointsAndReplicasReadBackAsWritten) {
  JobStateStore& store = this->store();
  SupervisorLock lock;
  ASSERT_TRUE(store.CreateJob(this->Job("state"), &lock).ok());
  JobKey key{"default", "state"};
  StatusOr<job::JobStatus> empty = store.ReadStatus(key);
  ASSERT_TRUE(empty.ok());
  EXPECT_TRUE(empty->conditions.empty());

  Time now = *ParseTime("2026-01-01T00:00:00Z");
  job::JobStatus status;
  job::SetCondition(status, job::kConditionRunning, "True", "TFJobRunning", "running", now);
  status.replica_statuses["Worker"].active = 2;
  ASSERT_TRUE(store.WriteStatus(key, status).ok());
  StatusOr<job::JobStatus> read = store.ReadStatus(key);
  ASSERT_TRUE(read.ok());
  EXPECT_EQ(job::JobStatusToJson(*read), job::JobStatusToJson(status));

  ASSERT_TRUE(store.AppendEvents(key, {{"Normal", "A", "first", now}}).ok());
  ASSERT_TRUE(store.AppendEvents(key, {{"Warning", "B", "second", now}}).ok());
  StatusOr<std::vector<job::Event>> events = store.ReadEvents(key);
  ASSERT_TRUE(events.ok());
  ASSERT_EQ(events->size(), 2u);
  EXPECT_EQ((*events)[1].reason, "B");

  ASSERT_TRUE(store.WriteEndpoints(key, {{"worker-0", 4000}, {"worker-1", 4001}}).ok());
  EXPECT_EQ(*store.ReadEndpoints(key),
            (std::map<std::string, int>{{"worker-0", 4000}, {"worker-1", 4001}}));
  std::vector<ReplicaRow> rows = {{"worker-0", "Running", 1, 4000, 42, std::nullopt, now, {}}};
  ReplicaRow failed{"worker-1", "Failed", 2, 4001, 0, 3, now, now};
  failed.removed = true;
  failed.last_log_lines = {"step 3", "error: \"quoted\" and \t tab"};
  rows.push_back(failed);
  ASSERT_TRUE(store.WriteReplicas(key, rows).ok());
  EXPECT_EQ(store.ReadReplicas(key), rows);
  EXPECT_THAT(store.LogLocation(key, "worker-0"), HasSubstr("worker-0.log"));
}

TYPED_TEST(JobStateStoreTest, ADeletedJobIsGone) {
  JobStateStore& store = this->store();
  {
    SupervisorLock lock;
    ASSERT_TRUE(store.CreateJob(this->Job("doomed"), &lock).ok());
  }
  JobKey key{"default", "doomed"};
  ASSERT_TRUE(store.DeleteJob(key).ok());
  EXPECT_FALSE(store.Exists(key));
  EXPECT_TRUE(store.ListJobs().empty());
  EXPECT_EQ(store.DeleteJob(key).code(), Status::Code::kNotFound);
  SupervisorLock lock;
  EXPECT_TRUE(store.CreateJob(this->Job("doomed"), &lock).ok());  // the name is free again
}

}  // namespace
}  // namespace cohort::exec
