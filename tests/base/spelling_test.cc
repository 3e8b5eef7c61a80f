#include "base/spelling.h"

#include <gtest/gtest.h>

namespace cohort {
namespace {

TEST(EditDistanceTest, CountsInsertionsDeletionsAndReplacements) {
  EXPECT_EQ(EditDistance("", ""), 0u);
  EXPECT_EQ(EditDistance("replica", "replicas"), 1u);
  EXPECT_EQ(EditDistance("comand", "command"), 1u);
  EXPECT_EQ(EditDistance("kitten", "sitting"), 3u);
  EXPECT_EQ(EditDistance("abc", ""), 3u);
}

TEST(ClosestWordTest, FindsTheFieldAMisspellingMeant) {
  EXPECT_EQ(ClosestWord("replica", {"restartPolicy", "replicas", "template"}), "replicas");
  EXPECT_EQ(ClosestWord("Replicas", {"replicas"}), "replicas");
  EXPECT_EQ(ClosestWord("rdvzPort", {"rdzvPort", "rdzvHost"}), "rdzvPort");
}

TEST(ClosestWordTest, APrefixOfTwoOrMoreCharactersCounts) {
  EXPECT_EQ(ClosestWord("desc", {"delete", "describe"}), "describe");
  EXPECT_EQ(ClosestWord("d", {"describe"}), "");
}

TEST(ClosestWordTest, NothingNearIsNothing) {
  EXPECT_EQ(ClosestWord("onExit", {"runPolicy", "tfReplicaSpecs", "successPolicy"}), "");
  EXPECT_EQ(ClosestWord("anything", {}), "");
}

TEST(ClosestWordTest, TiesGoToTheEarlierCandidate) {
  EXPECT_EQ(ClosestWord("cat", {"bat", "hat"}), "bat");
}

}  // namespace
}  // namespace cohort
