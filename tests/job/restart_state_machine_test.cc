// Tests of the restart state machine that both executors keep per replica: back-off, counts,
// group restarts, and the record that lets a new controller resume.

#include "job/restart_state_machine.h"

#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

namespace cohort::job {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

const Time kT0 = *ParseTime("2026-11-24T10:00:00Z");

// A machine that has made `restarts` restarts, settled.
RestartStateMachine AfterRestarts(int restarts) {
  return RestartStateMachine::Resume(RestartRecord{restarts, 0, std::nullopt, ""});
}

// The restart decided after `restarts_before` restarts waits the kubelet-like back-off: 1 s
// doubling, at most a minute, counted from the decision.
TEST(RestartStateMachineTest, BackOffDoublesFromOneSecondUpToAMinute) {
  struct Case {
    int restarts_before;
    seconds back_off;
  };
  const std::vector<Case> cases = {{0, seconds(1)},    {1, seconds(2)},
                                   {2, seconds(4)},    {3, seconds(8)},
                                   {4, seconds(16)},   {5, seconds(32)},
                                   {6, seconds(60)},   {7, seconds(60)},
                                   {100, seconds(60)}, {kMaxRecordedRestarts, seconds(60)}};
  for (const Case& c : cases) {
    SCOPED_TRACE("after " + std::to_string(c.restarts_before) + " restarts");
    RestartStateMachine restarts = AfterRestarts(c.restarts_before);
    EXPECT_FALSE(restarts.waiting());
    ASSERT_TRUE(restarts.RestartDecided(false, kT0));
    EXPECT_TRUE(restarts.waiting());
    EXPECT_EQ(restarts.restart_after(), kT0 + c.back_off);
    EXPECT_EQ(RestartBackoff(c.restarts_before), c.back_off);
    // Due exactly when the back-off is over, not a millisecond before.
    EXPECT_FALSE(restarts.IsDue(kT0));
    EXPECT_FALSE(restarts.IsDue(kT0 + c.back_off - milliseconds(1)));
    EXPECT_TRUE(restarts.IsDue(kT0 + c.back_off));
    EXPECT_TRUE(restarts.IsDue(kT0 + c.back_off + seconds(30)));
  }
}

// The back-off grows with each restart made: decided, due, made, and again.
TEST(RestartStateMachineTest, EachRestartMadeDoublesTheNextBackOff) {
  RestartStateMachine restarts;
  Time now = kT0;
  const std::vector<seconds> waits = {seconds(1), seconds(2), seconds(4), seconds(8)};
  for (size_t i = 0; i < waits.size(); ++i) {
    SCOPED_TRACE("restart " + std::to_string(i + 1));
    ASSERT_TRUE(restarts.RestartDecided(false, now));
    EXPECT_EQ(restarts.restarts(), static_cast<int>(i) + 1);  // counted when decided
    EXPECT_EQ(*restarts.restart_after() - now, waits[i]);
    now = *restarts.restart_after();
    ASSERT_TRUE(restarts.IsDue(now));
    restarts.Restarted();
    EXPECT_FALSE(restarts.waiting());
    EXPECT_FALSE(restarts.IsDue(now));
    EXPECT_EQ(restarts.restarts(), static_cast<int>(i) + 1);
    now += seconds(10);  // the new run fails a while later
  }
}

// A group restart (the replica gave up because a peer failed) is a restart like any other, shown
// in the count, but uses nothing of backoffLimit; its back-off is the same.
TEST(RestartStateMachineTest, GroupRestartsAreCountedButNotAgainstTheBackoffLimit) {
  struct Case {
    std::string name;
    std::vector<bool> group_flags;  // one decision (and restart made) each
    int restarts;
    int group_restarts;
    int counted_restarts;
  };
  const std::vector<Case> cases = {
      {"none", {}, 0, 0, 0},
      {"one own failure", {false}, 1, 0, 1},
      {"one group restart", {true}, 1, 1, 0},
      {"peer failed twice", {true, true}, 2, 2, 0},
      {"own, then group, then own", {false, true, false}, 3, 1, 2},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    RestartStateMachine restarts;
    Time now = kT0;
    seconds expected_wait(1);
    for (bool group : c.group_flags) {
      ASSERT_TRUE(restarts.RestartDecided(group, now));
      EXPECT_EQ(*restarts.restart_after() - now, expected_wait);
      expected_wait *= 2;
      now = *restarts.restart_after();
      restarts.Restarted();
    }
    EXPECT_EQ(restarts.restarts(), c.restarts);
    EXPECT_EQ(restarts.group_restarts(), c.group_restarts);
    EXPECT_EQ(restarts.counted_restarts(), c.counted_restarts);
  }
}

// The same restart decided twice while it waits (the executor shows the replica Pending, so the
// reconciler should not, but an executor must not count it twice if it did) changes nothing.
TEST(RestartStateMachineTest, ARestartDecidedWhileOneWaitsIsTheSameRestart) {
  RestartStateMachine restarts;
  ASSERT_TRUE(restarts.RestartDecided(false, kT0, "pod-1"));
  const RestartRecord first = restarts.record();
  EXPECT_FALSE(restarts.RestartDecided(true, kT0 + milliseconds(500), "pod-2"));
  EXPECT_EQ(restarts.record(), first);
}

// Counts stop at kMaxRecordedRestarts; group restarts never pass the restarts.
TEST(RestartStateMachineTest, CountsAreBounded) {
  RestartStateMachine restarts =
      RestartStateMachine::Resume({kMaxRecordedRestarts, kMaxRecordedRestarts, std::nullopt, ""});
  ASSERT_TRUE(restarts.RestartDecided(true, kT0));
  EXPECT_EQ(restarts.restarts(), kMaxRecordedRestarts);
  EXPECT_EQ(restarts.group_restarts(), kMaxRecordedRestarts);
  EXPECT_EQ(restarts.counted_restarts(), 0);
}

// What the executor stores gives back the same machine: the record round-trips unchanged, and
// what is read from outside is bounded as it is resumed.
TEST(RestartStateMachineTest, TheRecordRoundTripsAndIsBoundedWhenResumed) {
  struct Case {
    std::string name;
    RestartRecord stored;
    RestartRecord resumed;
  };
  const Time after = kT0 + seconds(4);
  const std::vector<Case> cases = {
      {"new replica", {}, {}},
      {"settled after restarts", {3, 1, std::nullopt, ""}, {3, 1, std::nullopt, ""}},
      {"waiting", {3, 1, after, "uid-7"}, {3, 1, after, "uid-7"}},
      {"waiting, no name for the run", {1, 0, after, ""}, {1, 0, after, ""}},
      {"negative counts", {-4, -1, std::nullopt, ""}, {0, 0, std::nullopt, ""}},
      {"too many restarts",
       {kMaxRecordedRestarts + 5, 2, after, "u"},
       {kMaxRecordedRestarts, 2, after, "u"}},
      {"more group restarts than restarts", {2, 9, std::nullopt, ""}, {2, 2, std::nullopt, ""}},
      {"a run named with nothing waiting", {2, 0, std::nullopt, "uid-1"}, {2, 0, std::nullopt, ""}},
      {"a run's generation", {2, 1, std::nullopt, "", 4}, {2, 1, std::nullopt, "", 4}},
      {"a negative generation", {0, 0, std::nullopt, "", -3}, {0, 0, std::nullopt, "", 0}},
      {"too late a generation",
       {0, 0, std::nullopt, "", kMaxRecordedRestarts + 1},
       {0, 0, std::nullopt, "", kMaxRecordedRestarts}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const RestartStateMachine resumed = RestartStateMachine::Resume(c.stored);
    EXPECT_EQ(resumed.record(), c.resumed);
    EXPECT_EQ(resumed.waiting(), c.resumed.restart_after.has_value());
    // Storing the resumed record and resuming again changes nothing.
    EXPECT_EQ(RestartStateMachine::Resume(resumed.record()).record(), resumed.record());
  }
}

// A controller (or operator) that stops while a restart waits, and a new one that resumes from the
// stored record, make the restart at the same time with the same counts, and go on from there as
// the first would have.
TEST(RestartStateMachineTest, ARestartedControllerResumesAWaitingRestart) {
  struct Case {
    std::string name;
    RestartRecord before;   // settled, before the failure
    bool group_restart;     // of the restart decided before the controller stops
    milliseconds down_for;  // how long after the decision the new controller resumes
    bool due_when_resumed;
    int restarts_after;  // once the restart is made (and while it waits)
    int group_restarts_after;
    seconds next_back_off;  // of the restart after that
  };
  const std::vector<Case> cases = {
      {"resumed during the back-off", {}, false, milliseconds(300), false, 1, 0, seconds(2)},
      {"resumed after the back-off", {}, false, seconds(90), true, 1, 0, seconds(2)},
      {"a group restart", {2, 1, std::nullopt, ""}, true, milliseconds(0), false, 3, 2, seconds(8)},
      {"at the edge of the back-off",
       {1, 0, std::nullopt, ""},
       false,
       seconds(2),
       true,
       2,
       0,
       seconds(4)},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    RestartStateMachine first = RestartStateMachine::Resume(c.before);
    ASSERT_TRUE(first.RestartDecided(c.group_restart, kT0, "pod-a"));
    const RestartRecord stored = first.record();

    // The controller stops; a new one resumes from what was stored.
    const Time resumed_at = kT0 + c.down_for;
    RestartStateMachine second = RestartStateMachine::Resume(stored);
    EXPECT_TRUE(second.waiting());
    EXPECT_EQ(second.record().replaces, "pod-a");
    EXPECT_EQ(second.restart_after(), first.restart_after());
    EXPECT_EQ(second.restarts(), c.restarts_after);  // shown Pending with the new count
    EXPECT_EQ(second.IsDue(resumed_at), c.due_when_resumed);
    // Not made before the first controller would have made it, and made once it would have.
    EXPECT_FALSE(second.IsDue(*first.restart_after() - milliseconds(1)));
    EXPECT_TRUE(second.IsDue(*first.restart_after()));

    const Time made_at = std::max(resumed_at, *second.restart_after());
    second.Restarted();
    EXPECT_EQ(second.restarts(), c.restarts_after);
    EXPECT_EQ(second.group_restarts(), c.group_restarts_after);
    EXPECT_EQ(second.record().replaces, "");
    ASSERT_TRUE(second.RestartDecided(false, made_at + seconds(5)));
    EXPECT_EQ(*second.restart_after() - (made_at + seconds(5)), c.next_back_off);
  }
}

// ---- Generations: a slow survivor's report about a replica restarted since ----

// A run is tagged with the generation it starts in; starting it makes a waiting restart, as
// Restarted() does, and keeps the counts.
TEST(RestartStateMachineTest, ARunBelongsToTheGenerationItStartedIn) {
  RestartStateMachine restarts;
  EXPECT_EQ(restarts.generation(), 0);
  restarts.RunStarted(0);
  ASSERT_TRUE(restarts.RestartDecided(false, kT0, "pod-1"));
  restarts.RunStarted(3);
  EXPECT_FALSE(restarts.waiting());
  EXPECT_EQ(restarts.generation(), 3);
  EXPECT_EQ(restarts.restarts(), 1);
  EXPECT_EQ(restarts.record().replaces, "");
  // Deciding the next restart does not change the generation of the run that exited.
  ASSERT_TRUE(restarts.RestartDecided(true, kT0 + seconds(10)));
  EXPECT_EQ(restarts.generation(), 3);
}

// Only a replica that failed by itself opens a new generation: the group restarts of its peers,
// however many, belong to the generation its failure opened.
TEST(GroupGenerationsTest, OnlyARestartThatIsNotAGroupRestartOpensAGeneration) {
  GroupGenerations generations;
  EXPECT_EQ(generations.current(), 0);
  EXPECT_EQ(generations.RestartDecided(true), 0);
  EXPECT_EQ(generations.RestartDecided(false), 1);
  EXPECT_EQ(generations.RestartDecided(true), 1);
  EXPECT_EQ(generations.RestartDecided(true), 1);
  EXPECT_EQ(generations.RestartDecided(false), 2);
  EXPECT_EQ(GroupGenerations(-5).current(), 0);
  GroupGenerations last(kMaxRecordedRestarts);
  EXPECT_EQ(last.RestartDecided(false), kMaxRecordedRestarts);
}

// The restart race, step by step with three replicas' machines: worker-1 is killed and restarted
// after its back-off; then master-0, a slow survivor of the old group, exits with its report
// "rank 2 died". That report was made in generation 0 and worker-1 now runs generation 1: it cannot
// be about the run now running. In the new group a report about worker-1 (it hangs) concerns it.
TEST(GroupGenerationsTest, ASlowSurvivorsReportDoesNotConcernTheAccusedsNewRun) {
  GroupGenerations generations;
  RestartStateMachine master;
  RestartStateMachine worker1;
  master.RunStarted(generations.current());
  worker1.RunStarted(generations.current());

  // worker-1 killed: its own restart, which opens generation 1; made after its back-off.
  ASSERT_TRUE(worker1.RestartDecided(false, kT0));
  generations.RestartDecided(false);
  ASSERT_TRUE(worker1.IsDue(kT0 + seconds(1)));
  worker1.RunStarted(generations.current());
  EXPECT_EQ(worker1.generation(), 1);

  // master-0's report, from its run of generation 0, arrives now: stale.
  EXPECT_EQ(master.generation(), 0);
  EXPECT_FALSE(GroupGenerations::ReportMayConcern(master.generation(), worker1.generation()));
  // master-0's restart is a group restart: it joins generation 1 without opening another.
  ASSERT_TRUE(master.RestartDecided(true, kT0 + seconds(5)));
  generations.RestartDecided(true);
  master.RunStarted(generations.current());
  EXPECT_EQ(master.generation(), 1);
  EXPECT_EQ(master.counted_restarts(), 0);

  // In generation 1 worker-1 hangs: master-0's report about it concerns its run.
  EXPECT_TRUE(GroupGenerations::ReportMayConcern(master.generation(), worker1.generation()));
  // And a report from a later generation about a replica not restarted since concerns it too.
  EXPECT_TRUE(GroupGenerations::ReportMayConcern(2, 1));
}

}  // namespace
}  // namespace cohort::job
