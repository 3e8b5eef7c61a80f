// Which bytes of a log the dashboard serves (ui/log_range.h), on files written here.
#include "ui/log_range.h"

#include <gtest/gtest.h>

#include <fstream>

#include "testing/scratch_directory.h"
#include "ui/selectors.h"

namespace cohort::ui {
namespace {

class LogRangeTest : public ::testing::Test {
 protected:
  std::filesystem::path Write(const std::string& contents) {
    std::filesystem::path path = scratch_.path() / "worker-0.log";
    std::ofstream(path, std::ios::binary) << contents;
    return path;
  }
  std::string Read(const std::filesystem::path& path, const LogQuery& query) {
    StatusOr<FileReader> file = FileReader::Open(path);
    EXPECT_TRUE(file.ok());
    RunIndex runs;
    EXPECT_TRUE(runs.Update(*file).ok());
    StatusOr<LogRange> range = SelectLogRange(*file, runs, query);
    if (!range.ok()) return "error: " + range.status().message();
    std::string text;
    EXPECT_TRUE(ForEachChunk(*file, *range, [&](std::string_view chunk) {
                  text.append(chunk);
                  return true;
                }).ok());
    return text;
  }
  testing::ScratchDirectory scratch_{"log-range"};
};

const std::string kRestart1 =
    "===== cohort: restart 1 of worker-0 at 2026-01-01T00:00:10Z (previous exit code 3) =====\n";
const std::string kRestart2 =
    "===== cohort: restart 2 of worker-0 at 2026-01-01T00:00:20Z (previous exit code 3) =====\n";

TEST_F(LogRangeTest, RunsAreSplitAtRestartLines) {
  auto path = Write("a\nb\n" + kRestart1 + "c\n" + kRestart2 + "d\ne");
  EXPECT_EQ(Read(path, {}), kRestart2 + "d\ne");
  EXPECT_EQ(Read(path, LogQuery{.previous = true}), "c\n");
  EXPECT_EQ(Read(path, LogQuery{.all_runs = true}),
            "a\nb\n" + kRestart1 + "c\n" + kRestart2 + "d\ne");
  EXPECT_EQ(Read(path, LogQuery{.all_runs = true, .tail_lines = 2}), "d\ne");
  EXPECT_EQ(Read(path, LogQuery{.all_runs = true, .tail_lines = 3, .limit_bytes = 4}),
            kRestart2.substr(0, 4));
}

TEST_F(LogRangeTest, WithoutRestartPreviousIsAnError) {
  auto path = Write("a\nb\n");
  EXPECT_EQ(Read(path, {}), "a\nb\n");
  EXPECT_NE(Read(path, LogQuery{.previous = true}).find("previous"), std::string::npos);
  EXPECT_EQ(Read(path, LogQuery{.tail_lines = 1}), "b\n");
  EXPECT_EQ(Read(path, LogQuery{.tail_lines = 0}), "");
  EXPECT_EQ(Read(path, LogQuery{.tail_lines = 9}), "a\nb\n");
}

TEST_F(LogRangeTest, TheFirstRunIsThePreviousOneAfterOneRestart) {
  auto path = Write("a\n" + kRestart1 + "b\n");
  EXPECT_EQ(Read(path, LogQuery{.previous = true}), "a\n");
}

TEST_F(LogRangeTest, TailLinesAcrossChunksAndLongLines) {
  std::string long_line(3 * kLogChunkBytes, 'x');
  auto path = Write("first\n" + long_line + "\nlast\n");
  EXPECT_EQ(Read(path, LogQuery{.tail_lines = 2}), long_line + "\nlast\n");
  StatusOr<FileReader> file = FileReader::Open(path);
  RunIndex runs;
  ASSERT_TRUE(runs.Update(*file).ok());
  EXPECT_TRUE(runs.restart_offsets().empty());
}

TEST_F(LogRangeTest, TheIndexScansOnlyWhatWasAppended) {
  std::filesystem::path path = Write("a\n");
  StatusOr<FileReader> file = FileReader::Open(path);
  RunIndex runs;
  ASSERT_TRUE(runs.Update(*file).ok());
  EXPECT_EQ(runs.scanned(), 2u);
  std::ofstream(path, std::ios::app) << kRestart1.substr(0, 10);
  ASSERT_TRUE(runs.Update(*file).ok());
  EXPECT_TRUE(runs.restart_offsets().empty());  // not a whole line yet
  std::ofstream(path, std::ios::app) << kRestart1.substr(10) << "b\n";
  ASSERT_TRUE(runs.Update(*file).ok());
  ASSERT_EQ(runs.restart_offsets().size(), 1u);
  EXPECT_EQ(runs.restart_offsets()[0], 2u);
}

TEST(SelectorTest, KubectlForms) {
  StatusOr<Selector> selector = ParseSelector("a=1,b!=2,c,!d", "labelSelector");
  ASSERT_TRUE(selector.ok()) << selector.status().message();
  EXPECT_TRUE(selector->Matches({{"a", "1"}, {"c", ""}}));
  EXPECT_FALSE(selector->Matches({{"a", "1"}, {"b", "2"}, {"c", ""}}));
  EXPECT_FALSE(selector->Matches({{"a", "1"}, {"c", ""}, {"d", "x"}}));
  EXPECT_FALSE(selector->Matches({{"a", "2"}, {"c", ""}}));
  EXPECT_EQ(selector->RequiredValue("a"), "1");
  EXPECT_FALSE(ParseSelector("a in (x)", "labelSelector").ok());
  EXPECT_FALSE(ParseSelector("a=1,,b", "labelSelector").ok());
  EXPECT_FALSE(ParseSelector(std::string(2000, 'a'), "labelSelector").ok());
}

}  // namespace
}  // namespace cohort::ui
