#include "base/time.h"

#include <gtest/gtest.h>

#include <chrono>

namespace cohort {
namespace {

using std::chrono::seconds;

Time At(std::time_t seconds_since_epoch) { return Clock::from_time_t(seconds_since_epoch); }

TEST(FormatTimeTest, WritesUtcWholeSecondsAsKubernetesDoes) {
  EXPECT_EQ(FormatTime(At(0)), "1970-01-01T00:00:00Z");
  EXPECT_EQ(FormatTime(At(1630929000)), "2021-09-06T11:50:00Z");
  // Sub-second parts are dropped, not rounded.
  EXPECT_EQ(FormatTime(At(1630929000) + std::chrono::milliseconds(999)), "2021-09-06T11:50:00Z");
}

TEST(ParseTimeTest, ReadsWhatFormatTimeWrites) {
  for (std::time_t t :
       {std::time_t{0}, std::time_t{951782400}, std::time_t{1630929000}, std::time_t{4102444799}}) {
    std::optional<Time> parsed = ParseTime(FormatTime(At(t)));
    ASSERT_TRUE(parsed.has_value()) << t;
    EXPECT_EQ(*parsed, At(t));
  }
}

TEST(ParseTimeTest, AcceptsAndDropsFractionalSeconds) {
  std::optional<Time> parsed = ParseTime("2021-09-06T11:50:00.123456Z");
  ASSERT_TRUE(parsed.has_value());
  EXPECT_EQ(*parsed, At(1630929000));
}

TEST(ParseTimeTest, RejectsMalformedText) {
  for (const char* text :
       {"", "2021-09-06", "2021-09-06T11:50:00", "2021-09-06T11:50:00+02:00",
        "2021-09-06T11:50:00Zjunk", "2021-13-06T11:50:00Z", "2021-09-00T11:50:00Z",
        "2021-09-06T24:00:00Z", "2021-09-06T11:60:00Z", "yesterday"}) {
    EXPECT_FALSE(ParseTime(text).has_value()) << text;
  }
}

TEST(ParseTimeTest, RejectsYearsTheClockCannotHold) {
  EXPECT_FALSE(ParseTime("5352-01-01T00:00:00Z").has_value());
  EXPECT_FALSE(ParseTime("1600-01-01T00:00:00Z").has_value());
  EXPECT_TRUE(ParseTime("2261-12-31T23:59:59Z").has_value());
}

TEST(FormatAgeTest, KubectlHumanDurations) {
  EXPECT_EQ(FormatAge(seconds(-5)), "0s");
  EXPECT_EQ(FormatAge(seconds(0)), "0s");
  EXPECT_EQ(FormatAge(seconds(45)), "45s");
  EXPECT_EQ(FormatAge(seconds(119)), "119s");
  EXPECT_EQ(FormatAge(seconds(120)), "2m");
  EXPECT_EQ(FormatAge(seconds(309)), "5m9s");
  EXPECT_EQ(FormatAge(seconds(599)), "9m59s");
  EXPECT_EQ(FormatAge(seconds(600)), "10m");
  EXPECT_EQ(FormatAge(seconds(179 * 60 + 59)), "179m");
  EXPECT_EQ(FormatAge(seconds(3 * 3600)), "3h");
  EXPECT_EQ(FormatAge(seconds(47 * 3600 + 3599)), "47h");
  EXPECT_EQ(FormatAge(seconds(48 * 3600)), "2d");
  EXPECT_EQ(FormatAge(seconds(10 * 86400 + 5)), "10d");
}

}  // namespace
}  // namespace cohort
