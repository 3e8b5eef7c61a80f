// The operator's parts on their own: reading pods back into replicas, the work queue, the event
// recorder's aggregation and the informer's relist.
#include <gtest/gtest.h>

#include <thread>

#include "fake_api.h"
#include "job/pytorchjob.h"
#include "job/tfjob.h"
#include "kube/operator/event_recorder.h"
#include "kube/operator/informer.h"
#include "kube/operator/replica_objects.h"
#include "kube/operator/work_queue.h"
#include "operator_fixture.h"

namespace cohort::kube::testing {
namespace {

using namespace std::chrono_literals;

job::Job WorkerJob() {
  job::Job job = job::NewTFJob();
  job.metadata.name = "mnist";
  job.replica_specs["Worker"].replicas = 2;
  return job;
}

nlohmann::json PodWithStatus(nlohmann::json status, std::string restarts_annotation = "") {
  nlohmann::json pod = {{"metadata", {{"name", "mnist-worker-1"}, {"namespace", "default"}}},
                        {"status", status}};
  if (!restarts_annotation.empty()) {
    pod["metadata"]["annotations"][kRestartsAnnotation] = restarts_annotation;
  }
  return pod;
}

TEST(ObservePodTest, ReadsPhaseExitCodeAndRestarts) {
  const ReplicaRef worker{"Worker", 1};
  job::ObservedReplica running = ObservePod(
      PodWithStatus({{"phase", "Running"},
                     {"containerStatuses",
                      {{{"name", "sidecar"}, {"restartCount", 9}, {"state", {{"running", {}}}}},
                       {{"name", "tensorflow"},
                        {"restartCount", 2},
                        {"state", {{"running", {{"startedAt", "2026-11-24T10:00:00Z"}}}}}}}}},
                    "3"),
      worker, "tensorflow");
  EXPECT_EQ(running.phase, job::ReplicaPhase::kRunning);
  EXPECT_EQ(running.restart_count, 5);  // 3 before this pod, 2 in place
  EXPECT_EQ(FormatTime(*running.started_at), "2026-11-24T10:00:00Z");

  job::ObservedReplica crash_loop =
      ObservePod(PodWithStatus({{"phase", "Running"},
                                {"containerStatuses",
                                 {{{"name", "tensorflow"},
                                   {"restartCount", 1},
                                   {"state", {{"waiting", {{"reason", "CrashLoopBackOff"}}}}}}}}}),
                 worker, "tensorflow");
  EXPECT_EQ(crash_loop.phase, job::ReplicaPhase::kPending);
  EXPECT_EQ(crash_loop.restart_count, 1);

  job::ObservedReplica killed = ObservePod(
      PodWithStatus(
          {{"phase", "Failed"},
           {"containerStatuses",
            {{{"name", "tensorflow"},
              {"state",
               {{"terminated",
                 {{"exitCode", 0}, {"signal", 9}, {"finishedAt", "2026-11-24T10:01:00Z"}}}}}}}}}),
      worker, "tensorflow");
  EXPECT_EQ(killed.phase, job::ReplicaPhase::kFailed);
  EXPECT_EQ(killed.exit_code, 137);
  EXPECT_EQ(FormatTime(*killed.finished_at), "2026-11-24T10:01:00Z");

  job::ObservedReplica evicted =
      ObservePod(PodWithStatus({{"phase", "Failed"}, {"reason", "Evicted"}}), worker, "tensorflow");
  EXPECT_EQ(evicted.exit_code, 255);

  job::ObservedReplica pending =
      ObservePod(PodWithStatus({{"phase", "Pending"}}, "x12"), worker, "tensorflow");
  EXPECT_EQ(pending.phase, job::ReplicaPhase::kPending);
  EXPECT_EQ(pending.restart_count, 0);  // a malformed annotation counts nothing
  EXPECT_EQ(ParseCount("99999999999"), kMaxRecordedRestarts);
}

// A peer report comes back in the container's termination message, cut to Kubernetes' 4096 bytes;
// the group restarts before the pod come from its annotation, never more than its restarts.
TEST(ObservePodTest, ReadsTheTerminationMessageAndGroupRestarts) {
  const ReplicaRef worker{"Worker", 0};
  nlohmann::json pod = PodWithStatus(
      {{"phase", "Failed"},
       {"containerStatuses",
        {{{"name", "tensorflow"},
          {"state",
           {{"terminated",
             {{"exitCode", 138}, {"message", "peer worker:1 hung (no heartbeat for 30 s)"}}}}}}}}},
      "3");
  pod["metadata"]["annotations"][kGroupRestartsAnnotation] = "2";
  job::ObservedReplica exited = ObservePod(pod, worker, "tensorflow");
  EXPECT_EQ(exited.exit_code, 138);
  EXPECT_EQ(exited.termination_message, "peer worker:1 hung (no heartbeat for 30 s)");
  EXPECT_EQ(exited.restart_count, 3);
  EXPECT_EQ(exited.group_restarts, 2);

  pod["status"]["containerStatuses"][0]["state"]["terminated"]["message"] = std::string(5000, 'x');
  pod["metadata"]["annotations"][kGroupRestartsAnnotation] = "7";
  exited = ObservePod(pod, worker, "tensorflow");
  EXPECT_EQ(exited.termination_message.size(), 4096u);
  EXPECT_EQ(exited.group_restarts, 3);
}

// A terminated replica is Failed from its service's record: with the code the kubelet reported
// while its pod is there, 143 when it reported none or the pod is gone, and the record's counts.
TEST(ObserveTerminatedTest, IsFailedWithTheRecordsCounts) {
  const ReplicaRef worker{"Worker", 1};
  nlohmann::json service = {{"metadata",
                             {{"annotations",
                               {{kTerminatedPodAnnotation, "uid-1"},
                                {kTerminatedAtAnnotation, "2026-11-24T10:02:00Z"},
                                {kRestartsAnnotation, "4"},
                                {kGroupRestartsAnnotation, "1"}}}}}};
  std::optional<TerminationRecord> record = TerminationRecordOf(service);
  ASSERT_TRUE(record);
  EXPECT_EQ(record->pod_uid, "uid-1");
  EXPECT_FALSE(TerminationRecordOf(nlohmann::json{{"metadata", nlohmann::json::object()}}));

  job::ObservedReplica gone = ObserveTerminated(nlohmann::json(), *record, worker, "tensorflow");
  EXPECT_EQ(gone.phase, job::ReplicaPhase::kFailed);
  EXPECT_EQ(gone.exit_code, 143);
  EXPECT_EQ(gone.restart_count, 4);
  EXPECT_EQ(gone.group_restarts, 1);
  EXPECT_EQ(FormatTime(*gone.finished_at), "2026-11-24T10:02:00Z");

  nlohmann::json still_running =
      PodWithStatus({{"phase", "Running"},
                     {"containerStatuses",
                      {{{"name", "tensorflow"},
                        {"state", {{"running", {{"startedAt", "2026-11-24T10:00:00Z"}}}}}}}}});
  job::ObservedReplica terminating =
      ObserveTerminated(still_running, *record, worker, "tensorflow");
  EXPECT_EQ(terminating.phase, job::ReplicaPhase::kFailed);
  EXPECT_EQ(terminating.exit_code, 143);
  EXPECT_EQ(FormatTime(*terminating.started_at), "2026-11-24T10:00:00Z");

  nlohmann::json killed = PodWithStatus(
      {{"phase", "Failed"},
       {"containerStatuses",
        {{{"name", "tensorflow"},
          {"state",
           {{"terminated", {{"exitCode", 137}, {"finishedAt", "2026-11-24T10:02:30Z"}}}}}}}}});
  job::ObservedReplica ended = ObserveTerminated(killed, *record, worker, "tensorflow");
  EXPECT_EQ(ended.exit_code, 137);
  EXPECT_EQ(FormatTime(*ended.finished_at), "2026-11-24T10:02:30Z");
  EXPECT_EQ(ended.restart_count, 4);
}

TEST(ReplicaOfTest, ReadsTheLabelsAgainstTheJobsTypes) {
  const job::Job job = WorkerJob();
  nlohmann::json pod = {
      {"metadata", {{"labels", {{kReplicaTypeLabel, "worker"}, {kReplicaIndexLabel, "1"}}}}}};
  std::optional<ReplicaRef> replica = ReplicaOf(job, pod);
  ASSERT_TRUE(replica);
  EXPECT_EQ(replica->type, "Worker");
  EXPECT_EQ(replica->index, 1);
  pod["metadata"]["labels"][kReplicaTypeLabel] = "ps";
  EXPECT_FALSE(ReplicaOf(job, pod));
  pod["metadata"]["labels"][kReplicaTypeLabel] = "worker";
  pod["metadata"]["labels"][kReplicaIndexLabel] = "-1";
  EXPECT_FALSE(ReplicaOf(job, pod));
}

TEST(ControllerTest, OnlyAControllerReferenceOfTheKindCounts) {
  nlohmann::json pod = {
      {"metadata",
       {{"namespace", "ns"},
        {"ownerReferences",
         {{{"kind", "TFJob"}, {"name", "a"}, {"uid", "1"}},
          {{"kind", "TFJob"}, {"name", "b"}, {"uid", "2"}, {"controller", true}}}}}}};
  EXPECT_EQ(ControllerUid(pod, "TFJob"), "2");
  EXPECT_EQ(ControllerKey(pod, "TFJob"), "ns/b");
  EXPECT_EQ(ControllerUid(pod, "PyTorchJob"), "");
}

TEST(JobQueueKeyTest, CarriesTheKindSoThatKindsNeverShareAKey) {
  EXPECT_EQ(JobQueueKey(job::TFJobKind(), "ns/mnist"), "TFJob/ns/mnist");
  EXPECT_EQ(JobQueueKey(job::PyTorchJobKind(), "ns/mnist"), "PyTorchJob/ns/mnist");
  std::optional<JobQueueKeyParts> parts = ParseJobQueueKey("PyTorchJob/ns/mnist");
  ASSERT_TRUE(parts);
  EXPECT_EQ(parts->kind, "PyTorchJob");
  EXPECT_EQ(parts->object_key, "ns/mnist");
  EXPECT_FALSE(ParseJobQueueKey("mnist"));
  EXPECT_FALSE(ParseJobQueueKey("/ns/mnist"));
}

TEST(OwnedObjectsSelectorTest, NamesEachKindsController) {
  EXPECT_EQ(OwnedObjectsSelector({&job::TFJobKind()}),
            "training.kubeflow.org/operator-name=tfjob-controller");
  EXPECT_EQ(OwnedObjectsSelector({&job::TFJobKind(), &job::PyTorchJobKind()}),
            "training.kubeflow.org/operator-name in (pytorchjob-controller,tfjob-controller)");
}

TEST(WorkQueueTest, DeduplicatesAndHandsAKeyToOneWorkerAtATime) {
  FakeClock clock;
  WorkQueue queue(clock.AsFunction(), 10ms);
  queue.Add("ns/a");
  queue.Add("ns/a");
  EXPECT_EQ(queue.Size(), 1u);
  std::optional<std::string> key = queue.Get(100ms);
  ASSERT_TRUE(key);
  queue.Add("ns/a");              // changed while a worker has it
  EXPECT_FALSE(queue.Get(50ms));  // not handed out twice at once
  queue.Done("ns/a");
  EXPECT_EQ(queue.Get(100ms), "ns/a");  // handed out again after Done
  queue.Done("ns/a");
}

TEST(WorkQueueTest, RequeuesAtTheTimeAskedAndBacksOffFailures) {
  FakeClock clock;
  WorkQueue queue(clock.AsFunction(), 10ms);
  queue.AddAt("ns/later", clock.Now() + 5s);
  EXPECT_FALSE(queue.Get(50ms));
  clock.Advance(5s);
  EXPECT_EQ(queue.Get(100ms), "ns/later");
  queue.Done("ns/later");
  queue.AddRateLimited("ns/failing");
  queue.AddRateLimited("ns/failing");  // 1 s, then 2 s: the earlier time is kept
  EXPECT_EQ(queue.Failures("ns/failing"), 2);
  EXPECT_FALSE(queue.Get(50ms));
  clock.Advance(1s);
  EXPECT_EQ(queue.Get(100ms), "ns/failing");
  queue.Forget("ns/failing");
  EXPECT_EQ(queue.Failures("ns/failing"), 0);
  queue.ShutDown();
  EXPECT_FALSE(queue.Get(1000ms));
}

TEST(EventRecorderTest, AggregatesRepeatsIntoOneEventWithACount) {
  FakeApi api;
  EventRecorder recorder(api, "tfjob-controller", "operator-a");
  nlohmann::json job = {{"apiVersion", "kubeflow.org/v1"},
                        {"kind", "TFJob"},
                        {"metadata", {{"name", "mnist"}, {"namespace", "ns"}, {"uid", "u1"}}}};
  const Time first = Time(std::chrono::seconds(1795514400));
  ASSERT_TRUE(
      recorder.Record(job, {"Warning", "FailedCreatePod", "Error creating: x", first}).ok());
  ASSERT_TRUE(
      recorder.Record(job, {"Warning", "FailedCreatePod", "Error creating: x", first + 60s}).ok());
  ASSERT_TRUE(
      recorder.Record(job, {"Normal", "SuccessfulCreatePod", "Created pod: a", first}).ok());
  std::vector<nlohmann::json> events = api.Objects("events", "ns");
  ASSERT_EQ(events.size(), 2u);
  for (const nlohmann::json& event : events) {
    EXPECT_EQ(event["involvedObject"]["uid"], "u1");
    EXPECT_EQ(event["source"]["component"], "tfjob-controller");
    if (event["reason"] == "FailedCreatePod") {
      EXPECT_EQ(event["count"], 2);
      EXPECT_EQ(event["firstTimestamp"], "2026-11-24T10:00:00Z");
      EXPECT_EQ(event["lastTimestamp"], "2026-11-24T10:01:00Z");
      EXPECT_EQ(event["type"], "Warning");
    }
  }
}

TEST(InformerTest, ListsAgainAfter410AndReportsWhatVanishedMeanwhile) {
  FakeApi api;
  std::vector<std::pair<std::string, bool>> changes;
  std::mutex mutex;
  InformerOptions options;
  options.watch_timeout = 1s;
  Informer informer(api, ServiceResource(), "", {}, options,
                    [&](const nlohmann::json& object, bool deleted) {
                      std::lock_guard<std::mutex> lock(mutex);
                      changes.emplace_back(ObjectKey(object), deleted);
                    });
  ASSERT_TRUE(api.Create(ServiceResource(), "ns", {{"metadata", {{"name", "a"}}}}).ok());
  ASSERT_TRUE(informer.ListOnce().ok());
  EXPECT_TRUE(informer.Get("ns/a"));
  ASSERT_TRUE(api.Delete(ServiceResource(), "ns", "a", {}).ok());
  ASSERT_TRUE(api.Create(ServiceResource(), "ns", {{"metadata", {{"name", "b"}}}}).ok());
  api.ExpireWatches();
  Status watched = informer.WatchOnce();
  EXPECT_EQ(watched.code(), Status::Code::kOutOfRange) << watched.ToString();
  ASSERT_TRUE(informer.ListOnce().ok());
  EXPECT_FALSE(informer.Get("ns/a"));
  EXPECT_TRUE(informer.Get("ns/b"));
  EXPECT_EQ(informer.Lists(), 2);
  std::lock_guard<std::mutex> lock(mutex);
  EXPECT_NE(std::find(changes.begin(), changes.end(), std::make_pair(std::string("ns/a"), true)),
            changes.end());
}

TEST(InformerTest, AnOlderVersionNeverReplacesANewerOne) {
  FakeApi api;
  Informer informer(api, PodResource(), "", {}, {}, [](const nlohmann::json&, bool) {});
  informer.Upsert({{"metadata", {{"name", "p"}, {"namespace", "ns"}, {"resourceVersion", "9"}}},
                   {"status", {{"phase", "Running"}}}});
  informer.Upsert({{"metadata", {{"name", "p"}, {"namespace", "ns"}, {"resourceVersion", "7"}}},
                   {"status", {{"phase", "Pending"}}}});
  EXPECT_EQ((*informer.Get("ns/p"))["status"]["phase"], "Running");
}

TEST(InformerTest, ListsWhatAControllerOwnsFollowingEveryChange) {
  FakeApi api;
  Informer informer(api, PodResource(), "", {}, {}, [](const nlohmann::json&, bool) {});
  auto pod = [](const std::string& name, const std::string& version, const std::string& owner) {
    nlohmann::json object = {
        {"metadata", {{"name", name}, {"namespace", "ns"}, {"resourceVersion", version}}}};
    if (!owner.empty()) {
      object["metadata"]["ownerReferences"] = {
          {{"kind", "TFJob"}, {"name", owner}, {"uid", owner + "-uid"}, {"controller", true}}};
    }
    return object;
  };
  auto names = [&](const std::string& uid) {
    std::vector<std::string> listed;
    for (const nlohmann::json& object : informer.ListControlledBy(uid)) {
      listed.push_back(object["metadata"]["name"]);
    }
    return listed;
  };
  ASSERT_TRUE(api.Create(PodResource(), "ns", pod("a-0", "", "a")).ok());
  ASSERT_TRUE(api.Create(PodResource(), "ns", pod("b-0", "", "b")).ok());
  ASSERT_TRUE(api.Create(PodResource(), "ns", pod("loose", "", "")).ok());
  ASSERT_TRUE(informer.ListOnce().ok());
  EXPECT_EQ(names("a-uid"), std::vector<std::string>{"a-0"});
  EXPECT_TRUE(names("").empty());
  informer.Upsert(pod("a-1", "100", "a"));
  EXPECT_EQ(names("a-uid"), (std::vector<std::string>{"a-0", "a-1"}));
  // A pod whose controller changes moves with it; a removed one leaves the index.
  informer.Upsert(pod("b-0", "101", "a"));
  EXPECT_EQ(names("a-uid"), (std::vector<std::string>{"a-0", "a-1", "b-0"}));
  EXPECT_TRUE(names("b-uid").empty());
  informer.Remove("ns/a-0");
  EXPECT_EQ(names("a-uid"), (std::vector<std::string>{"a-1", "b-0"}));
}

}  // namespace
}  // namespace cohort::kube::testing
