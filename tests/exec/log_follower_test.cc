// What `cohort run` and `cohort logs -f` pass on of a replica's log under a rate limit.
#include "exec/log_follower.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <string>
#include <vector>

#include "testing/scratch_directory.h"

namespace cohort::exec {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

class LogFollowerTest : public ::testing::Test {
 protected:
  void Append(const std::string& text) {
    std::ofstream(scratch_.path() / "worker-0.log", std::ios::app) << text;
  }
  std::vector<std::string> Poll(LogFollower& follower) {
    std::vector<std::string> lines;
    follower.Poll([&](const std::string&, const std::string& line) { lines.push_back(line); });
    return lines;
  }
  const testing::ScratchDirectory scratch_{"cohort-log-follower"};
};

TEST_F(LogFollowerTest, WithoutALimitEveryLineIsPassedOn) {
  LogFollower follower(scratch_.path());
  Append("one\ntwo\npart");
  EXPECT_THAT(Poll(follower), ElementsAre("one", "two"));
  Append("ial\n");
  EXPECT_THAT(Poll(follower), ElementsAre("partial"));
}

// The budget is spent by the first burst; a line written right after it (far less budget left
// than its length) is still passed on, after a note of what was skipped, so that a reader ends on
// what the replica wrote last.
TEST_F(LogFollowerTest, TheLastCompleteLineIsPassedOnWhenTheBudgetIsSpent) {
  LogFollower follower(scratch_.path());
  follower.LimitRate(16);
  std::string burst;
  for (int i = 0; i < 200; ++i) burst += "line " + std::to_string(i) + "\n";
  Append(burst);
  std::vector<std::string> first = Poll(follower);
  ASSERT_FALSE(first.empty());
  EXPECT_THAT(first.front(), HasSubstr("[cohort: skipped "));
  EXPECT_EQ(first.back(), "line 199");

  Append("many more words than sixteen bytes\nthe very last line of all\n");
  std::vector<std::string> second = Poll(follower);
  ASSERT_EQ(second.size(), 2u);
  EXPECT_THAT(second[0], HasSubstr("[cohort: skipped 35 bytes of worker-0's output, written "
                                   "faster than 16 bytes/s"));
  EXPECT_EQ(second[1], "the very last line of all");
}

}  // namespace
}  // namespace cohort::exec
