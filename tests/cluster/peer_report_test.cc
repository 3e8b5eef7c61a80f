#include "cluster/peer_report.h"

#include <gtest/gtest.h>

#include <string>

namespace cohort::cluster {
namespace {

TEST(PeerReportTest, FormatsTheLineJobControlReads) {
  EXPECT_EQ(FormatPeerReport({{"worker", 1}, "hung", "no heartbeat for 30 s"}),
            "peer worker:1 hung (no heartbeat for 30 s)");
  EXPECT_EQ(FormatPeerReport({{"chief", 0}, "died", ""}), "peer chief:0 died");
}

TEST(PeerReportTest, RoundTrips) {
  const PeerReport report{{"worker", 12}, "died", "closed the connection (reported by chief:0)"};
  EXPECT_EQ(ParsePeerReport(FormatPeerReport(report)), report);
}

TEST(PeerReportTest, ReadsOnlyTheFirstLine) {
  std::optional<PeerReport> report = ParsePeerReport("peer ps:0 hung (silent)\nmore words\n");
  ASSERT_TRUE(report.has_value());
  EXPECT_EQ(report->peer, (TaskId{"ps", 0}));
  EXPECT_EQ(report->what, "hung");
  EXPECT_EQ(report->detail, "silent");
}

TEST(PeerReportTest, OtherLastWordsAreNoReport) {
  for (const char* message :
       {"", "error: out of memory", "peer", "peer worker:1", "peer worker:x hung",
        "peer worker:-1 hung", "peer Worker:1 hung", "peer worker:1 HUNG", "peer worker1 hung",
        "peer worker:1 hung no parentheses", "peer worker:1 hung (unclosed",
        "peer worker:99999999999999999999 hung"}) {
    EXPECT_FALSE(ParsePeerReport(message).has_value()) << message;
  }
}

TEST(PeerReportTest, NewlinesInTheDetailCannotStartASecondLine) {
  EXPECT_EQ(FormatPeerReport({{"worker", 0}, "died", "a\nb"}), "peer worker:0 died (a b)");
}

TEST(PeerReportTest, IsBoundedLikeAKubernetesTerminationMessage) {
  const std::string long_detail(10000, 'x');
  EXPECT_EQ(FormatPeerReport({{"worker", 0}, "died", long_detail}).size(),
            kMaxTerminationMessageBytes);
  // A report longer than the bound loses its closing parenthesis and is not read.
  EXPECT_FALSE(ParsePeerReport("peer worker:0 died (" + long_detail + ")").has_value());
}

}  // namespace
}  // namespace cohort::cluster
