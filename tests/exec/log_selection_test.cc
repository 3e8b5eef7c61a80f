// Which log lines `cohort logs` prints for --tail, --since and --previous.
#include "exec/log_selection.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <random>

#include "testing/scratch_directory.h"

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

// SelectLogSpan reads a replica's file backwards instead of every line: for every selection it
// must keep exactly the lines SelectLogLines keeps, on logs of random runs and lines (empty
// lines, a last line without its newline, lines longer than a read chunk, restart lines at the
// start, at the end and back to back).
TEST(LogSpanTest, KeepsWhatSelectLogLinesKeeps) {
  cohort::testing::ScratchDirectory scratch("log-span");
  std::mt19937 random(29);
  const Time start = *ParseTime("2026-01-01T00:00:00Z");
  const Time now = start + seconds(3600);
  for (int trial = 0; trial < 300; ++trial) {
    std::vector<LogLine> lines;
    std::string text;
    int restarts = 0;
    const int count = static_cast<int>(random() % 12);
    for (int i = 0; i < count; ++i) {
      std::string line;
      switch (random() % 6) {
        case 0:
          ++restarts;
          line = "===== cohort: restart " + std::to_string(restarts) + " of worker-0 at " +
                 FormatTime(start + seconds(300 * restarts)) + " (previous exit code 1) =====";
          break;
        case 1:
          line = "";
          break;
        case 2:
          line = std::string(70000 + random() % 70000, 'x');  // longer than a chunk
          break;
        default:
          line = "line " + std::to_string(i);
      }
      lines.push_back({"worker-0", line});
      text += line + "\n";
    }
    if (count > 0 && random() % 3 == 0) {  // the last line without its newline
      text.pop_back();
      if (lines.back().text.empty()) {
        lines.pop_back();
        text.clear();
        for (size_t i = 0; i < lines.size(); ++i)
          text += lines[i].text + (i + 1 < lines.size() ? "\n" : "");
        if (lines.empty()) continue;
        if (lines.back().text.empty()) continue;
      }
    }
    const std::filesystem::path path = scratch.path() / "worker-0.log";
    std::ofstream(path, std::ios::trunc | std::ios::binary) << text;
    StatusOr<FileReader> file = FileReader::Open(path);
    ASSERT_TRUE(file.ok());
    const Time last_written = start + seconds(300 * restarts + 100);
    std::vector<LogSelection> selections;
    for (std::optional<size_t> tail : {std::optional<size_t>(), std::optional<size_t>(0),
                                       std::optional<size_t>(1), std::optional<size_t>(3)}) {
      for (std::optional<seconds> since :
           {std::optional<seconds>(), std::optional<seconds>(seconds(3100)),
            std::optional<seconds>(seconds(1))}) {
        for (int mode = 0; mode < 3; ++mode) {
          LogSelection selection;
          selection.tail = tail;
          selection.since = since;
          selection.previous = mode == 1;
          selection.latest = mode == 2;
          selections.push_back(selection);
        }
      }
    }
    for (const LogSelection& selection : selections) {
      SCOPED_TRACE("trial " + std::to_string(trial) + " tail " +
                   std::to_string(selection.tail.value_or(99)) + " since " +
                   std::to_string(selection.since ? selection.since->count() : -1) + " previous " +
                   std::to_string(selection.previous) + " latest " +
                   std::to_string(selection.latest));
      StatusOr<std::vector<LogLine>> expected =
          lines.empty() ? StatusOr<std::vector<LogLine>>(std::vector<LogLine>{})
                        : SelectLogLines(lines, selection, {{"worker-0", last_written}}, now);
      StatusOr<LogSpan> span = SelectLogSpan(*file, "worker-0", selection, last_written, now);
      if (lines.empty() && selection.previous) {
        EXPECT_FALSE(span.ok());
        continue;
      }
      ASSERT_EQ(span.ok(), expected.ok()) << span.status().ToString();
      if (!span.ok()) continue;
      std::vector<std::string> streamed;
      std::string pieces;
      StatusOr<uint64_t> end =
          StreamLogLines(*file, *span, /*flush_partial=*/true, [&](std::string_view line) {
            if (line.size() == kMaxLogLineBytes) {
              pieces += line;
              return;
            }
            streamed.push_back(pieces + std::string(line));
            pieces.clear();
          });
      ASSERT_TRUE(end.ok());
      EXPECT_EQ(*end, span->end);
      std::vector<std::string> texts;
      for (const LogLine& line : *expected) texts.push_back(line.text);
      EXPECT_EQ(streamed, texts);
    }
  }
}

TEST(LogSpanTest, TailOfALargeLogReadsOnlyItsEnd) {
  cohort::testing::ScratchDirectory scratch("log-span");
  const std::filesystem::path path = scratch.path() / "worker-0.log";
  {
    std::ofstream out(path, std::ios::binary);
    const std::string block(1 << 20, 'y');
    for (int i = 0; i < 64; ++i) out << block << "\n";  // 64 lines of 1 MiB
    out << "last\n";
  }
  StatusOr<FileReader> file = FileReader::Open(path);
  ASSERT_TRUE(file.ok());
  LogSelection selection;
  selection.tail = 1;
  selection.latest = true;
  const Time now = Clock::now();
  StatusOr<LogSpan> span = SelectLogSpan(*file, "worker-0", selection, now, now);
  ASSERT_TRUE(span.ok());
  EXPECT_EQ(span->end - span->begin, 5u);
  // A line longer than the bound comes in pieces of at most kMaxLogLineBytes.
  size_t longest = 0;
  size_t count = 0;
  StatusOr<uint64_t> end =
      StreamLogLines(*file, LogSpan{0, file->Size()}, true, [&](std::string_view line) {
        longest = std::max(longest, line.size());
        ++count;
      });
  ASSERT_TRUE(end.ok());
  EXPECT_LE(longest, kMaxLogLineBytes);
  EXPECT_EQ(count, 65u);
}

TEST(DurationTest, KubectlDurations) {
  EXPECT_EQ(*ParseDuration("30s"), seconds(30));
  EXPECT_EQ(*ParseDuration("1h30m"), seconds(5400));
  for (const char* bad : {"", "5", "5d", "m", "1h30"}) EXPECT_FALSE(ParseDuration(bad).ok()) << bad;
}

}  // namespace
}  // namespace cohort::exec
