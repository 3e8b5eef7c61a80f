// Which log lines `cohort logs` prints for --tail, --since and --previous.
#include "exec/log_selection.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace cohort::exec {
namespace {

using std::chrono::seconds;

class LogSelectionTest : public ::testing::Test {
 protected:
  // worker-0 ran twice (restarted at 00:01:00); worker-1 once.
  std::vector<LogLine> Lines() const {
    return {{"worker-0", "first run 1"},
            {"worker-1", "only run 1"},
            {"worker-0", "first run 2"},
            {"worker-0",
             "===== cohort: restart 1 of worker-0 at 2026-01-01T00:01:00Z (previous exit code "
             "137) ====="},
            {"worker-0", "second run 1"},
            {"worker-1", "only run 2"}};
  }
  static std::vector<std::string> Texts(const StatusOr<std::vector<LogLine>>& lines) {
    std::vector<std::string> texts;
    for (const LogLine& line : *lines) texts.push_back(line.text);
    return texts;
  }
  const Time start_ = *ParseTime("2026-01-01T00:00:00Z");
  const Time now_ = start_ + seconds(600);
};

TEST_F(LogSelectionTest, RestartLinesGiveTheRunsStart) {
  EXPECT_EQ(RestartLineTime(Lines()[3].text), start_ + seconds(60));
  EXPECT_EQ(RestartLineTime("===== not a restart"), std::nullopt);
}

TEST_F(LogSelectionTest, TailKeepsTheLastLinesOfEachReplica) {
  LogSelection selection;
  selection.tail = 1;
  EXPECT_EQ(Texts(SelectLogLines(Lines(), selection, {}, now_)),
            (std::vector<std::string>{"second run 1", "only run 2"}));
}

TEST_F(LogSelectionTest, LatestIsTheLastRunOfEachReplica) {
  LogSelection selection;
  selection.latest = true;
  EXPECT_EQ(
      Texts(SelectLogLines(Lines(), selection, {}, now_)),
      (std::vector<std::string>{Lines()[3].text, "second run 1", "only run 1", "only run 2"}));
}

TEST_F(LogSelectionTest, PreviousIsTheRunBeforeTheLastRestart) {
  LogSelection selection;
  selection.previous = true;
  std::vector<LogLine> worker0;
  for (const LogLine& line : Lines()) {
    if (line.replica == "worker-0") worker0.push_back(line);
  }
  EXPECT_EQ(Texts(SelectLogLines(worker0, selection, {}, now_)),
            (std::vector<std::string>{"first run 1", "first run 2"}));
  StatusOr<std::vector<LogLine>> none = SelectLogLines(Lines(), selection, {}, now_);
  EXPECT_EQ(none.status().code(), Status::Code::kFailedPrecondition);
  EXPECT_THAT(none.status().message(), ::testing::HasSubstr("worker-1"));
}

TEST_F(LogSelectionTest, SinceKeepsTheRunsThatWroteWithinIt) {
  LogSelection selection;
  selection.since = seconds(300);
  // worker-0's first run ended at 00:01:00, ten minutes before now; its second run and worker-1
  // were written a minute ago.
  std::map<std::string, Time> written = {{"worker-0", now_ - seconds(60)},
                                         {"worker-1", now_ - seconds(60)}};
  EXPECT_EQ(
      Texts(SelectLogLines(Lines(), selection, written, now_)),
      (std::vector<std::string>{Lines()[3].text, "second run 1", "only run 1", "only run 2"}));
  written["worker-1"] = start_;
  EXPECT_EQ(Texts(SelectLogLines(Lines(), selection, written, now_)).size(), 2u);
}

TEST(DurationTest, KubectlDurations) {
  EXPECT_EQ(*ParseDuration("30s"), seconds(30));
  EXPECT_EQ(*ParseDuration("1h30m"), seconds(5400));
  for (const char* bad : {"", "5", "5d", "m", "1h30"}) EXPECT_FALSE(ParseDuration(bad).ok()) << bad;
}

}  // namespace
}  // namespace cohort::exec
