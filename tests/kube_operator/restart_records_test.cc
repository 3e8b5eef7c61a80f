// The operator's persistence of job::RestartRecord (job/restart_state_machine.h) as annotations on
// a replica's objects: the names and formats running clusters hold, and the round trip through
// them that lets a new operator resume a waiting restart.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "job/restart_state_machine.h"
#include "kube/operator/replica_objects.h"

namespace cohort::kube::testing {
namespace {

const Time kT0 = *ParseTime("2026-11-24T10:00:00Z");

nlohmann::json ServiceWith(const nlohmann::json& annotations) {
  return {{"metadata", {{"name", "mnist-worker-1"}, {"annotations", annotations}}}};
}

// Applies a merge patch of annotations to an object, as the API server does (null removes one).
void MergeAnnotations(nlohmann::json& object, const nlohmann::json& patch) {
  nlohmann::json& annotations = object["metadata"]["annotations"];
  for (const auto& [key, value] : patch.items()) {
    if (value.is_null()) {
      annotations.erase(key);
    } else {
      annotations[key] = value;
    }
  }
}

// A waiting restart is written exactly as before the state machine existed.
TEST(RestartRecordsTest, AWaitingRestartIsWrittenInTheAnnotationsClustersHold) {
  job::RestartStateMachine restarts = job::RestartStateMachine::Resume({2, 1, std::nullopt, ""});
  ASSERT_TRUE(restarts.RestartDecided(true, kT0, "uid-9"));
  EXPECT_EQ(WaitingRestartAnnotations(restarts.record()),
            (nlohmann::json{{"cohort.dev/restarts", "3"},
                            {"cohort.dev/restart-after", "2026-11-24T10:00:04Z"},
                            {"cohort.dev/restart-of", "uid-9"},
                            {"cohort.dev/group-restarts", "2"}}));
  // Once made, the record on the service goes.
  restarts.Restarted();
  EXPECT_EQ(WaitingRestartAnnotations(restarts.record()),
            (nlohmann::json{{"cohort.dev/restarts", nullptr},
                            {"cohort.dev/restart-after", nullptr},
                            {"cohort.dev/restart-of", nullptr},
                            {"cohort.dev/group-restarts", nullptr}}));
}

// What is written on a service is read back as the same record, and a machine resumed from it
// makes the restart when the first would have; once made, nothing waits on the service.
TEST(RestartRecordsTest, AWaitingRestartRoundTripsThroughTheService) {
  struct Case {
    std::string name;
    job::RestartRecord before;
    bool group_restart;
    std::string replaces;
  };
  const std::vector<Case> cases = {
      {"first restart", {}, false, "uid-1"},
      {"a group restart after others", {4, 2, std::nullopt, ""}, true, "uid-2"},
      {"the pod's uid unknown", {1, 0, std::nullopt, ""}, false, ""},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    job::RestartStateMachine restarts = job::RestartStateMachine::Resume(c.before);
    ASSERT_TRUE(restarts.RestartDecided(c.group_restart, kT0, c.replaces));
    nlohmann::json service = ServiceWith({{"other", "kept"}});
    MergeAnnotations(service, WaitingRestartAnnotations(restarts.record()));

    std::optional<job::RestartRecord> read = WaitingRestartOf(service);
    ASSERT_TRUE(read);
    EXPECT_EQ(*read, restarts.record());
    job::RestartStateMachine resumed = job::RestartStateMachine::Resume(*read);
    EXPECT_FALSE(resumed.IsDue(*restarts.restart_after() - std::chrono::seconds(1)));
    EXPECT_TRUE(resumed.IsDue(*restarts.restart_after()));

    resumed.Restarted();
    MergeAnnotations(service, WaitingRestartAnnotations(resumed.record()));
    EXPECT_FALSE(WaitingRestartOf(service));
    EXPECT_EQ(service["metadata"]["annotations"], (nlohmann::json{{"other", "kept"}}));
  }
}

// Hand-edited annotations are bounded; an unreadable time makes the restart due at once.
TEST(RestartRecordsTest, AServicesRecordIsReadBounded) {
  EXPECT_FALSE(WaitingRestartOf(ServiceWith({{"cohort.dev/restarts", "2"}})));
  std::optional<job::RestartRecord> read =
      WaitingRestartOf(ServiceWith({{"cohort.dev/restarts", "99999999999"},
                                    {"cohort.dev/group-restarts", "7"},
                                    {"cohort.dev/restart-after", "soon"}}));
  ASSERT_TRUE(read);
  EXPECT_EQ(read->restarts, kMaxRecordedRestarts);
  EXPECT_EQ(read->group_restarts, 7);
  EXPECT_EQ(read->replaces, "");
  EXPECT_TRUE(job::RestartStateMachine::Resume(*read).IsDue(kT0));

  read = WaitingRestartOf(ServiceWith({{"cohort.dev/restarts", "1"},
                                       {"cohort.dev/group-restarts", "5"},
                                       {"cohort.dev/restart-after", "2026-11-24T10:00:04Z"}}));
  ASSERT_TRUE(read);
  EXPECT_EQ(read->group_restarts, 1);
}

// A re-created replica's pod carries the counts that are not 0; read back with the kubelet's
// in-place restarts added.
TEST(RestartRecordsTest, APodCarriesItsReplicasCounts) {
  struct Case {
    std::string name;
    job::RestartRecord record;
    nlohmann::json annotations;
  };
  const std::vector<Case> cases = {
      {"first run", {}, nlohmann::json::object()},
      {"restarted", {3, 0, std::nullopt, ""}, {{"cohort.dev/restarts", "3"}}},
      {"with group restarts",
       {3, 2, std::nullopt, ""},
       {{"cohort.dev/restarts", "3"}, {"cohort.dev/group-restarts", "2"}}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    nlohmann::json pod = {{"metadata", {{"name", "mnist-worker-1"}}}};
    AnnotatePodRestarts(pod, c.record);
    const nlohmann::json& metadata = pod["metadata"];
    EXPECT_EQ(metadata.contains("annotations") ? metadata["annotations"] : nlohmann::json::object(),
              c.annotations);
    EXPECT_EQ(RestartRecordOfPod(pod, "tensorflow"), c.record);

    pod["status"] = {{"containerStatuses", {{{"name", "tensorflow"}, {"restartCount", 2}}}}};
    job::RestartRecord in_place = c.record;
    in_place.restarts += 2;
    EXPECT_EQ(RestartRecordOfPod(pod, "tensorflow"), in_place);
  }
}

}  // namespace
}  // namespace cohort::kube::testing
