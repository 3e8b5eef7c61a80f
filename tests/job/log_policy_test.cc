// Log policies: reading the rules and matching them against a failed run's lines.
#include "job/log_policy.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "job/tfjob.h"

namespace cohort::job {
namespace {

using ::testing::HasSubstr;

std::vector<LogPolicy> Parse(const std::string& json) {
  StatusOr<std::vector<LogPolicy>> policies =
      ParseLogPolicies(nlohmann::json::parse(json), "rules");
  EXPECT_TRUE(policies.ok()) << policies.status().ToString();
  return policies.ok() ? *policies : std::vector<LogPolicy>{};
}

std::string ParseError(const std::string& json) {
  StatusOr<std::vector<LogPolicy>> policies =
      ParseLogPolicies(nlohmann::json::parse(json), "rules");
  EXPECT_FALSE(policies.ok());
  return policies.ok() ? "" : policies.status().message();
}

TEST(LogPolicyTest, ReadsNamePatternAndAction) {
  std::vector<LogPolicy> policies =
      Parse(R"([{"name": "cuda-oom", "pattern": "CUDA out of memory", "action": "permanent"},
                {"pattern": "Connection reset", "action": "retryable"}])");
  ASSERT_EQ(policies.size(), 2u);
  EXPECT_EQ(policies[0].name, "cuda-oom");
  EXPECT_EQ(policies[0].action, LogPolicyAction::kPermanent);
  EXPECT_EQ(policies[1].name, "Connection reset");  // the pattern names an unnamed rule
  EXPECT_EQ(policies[1].action, LogPolicyAction::kRetryable);
}

TEST(LogPolicyTest, RefusesWhatIsWrongNamingTheRule) {
  EXPECT_THAT(ParseError(R"({"pattern": "x"})"), HasSubstr("rules: log policies must be a list"));
  EXPECT_THAT(ParseError(R"([{"pattern": "x", "action": "cancel_retries"}])"),
              HasSubstr("rules[0].action: \"cancel_retries\" is not one of permanent, retryable"));
  EXPECT_THAT(ParseError(R"([{"action": "permanent"}])"), HasSubstr("rules[0].pattern: required"));
  EXPECT_THAT(ParseError(R"([{"pattern": "x", "action": "permanent"}, {"pattern": "(",
                            "action": "permanent"}])"),
              HasSubstr("rules[1].pattern: \"(\" is not a valid regular expression"));
  EXPECT_THAT(ParseError(R"([{"pattern": "x", "action": "permanent", "when": "always"}])"),
              HasSubstr("rules[0]: unknown field \"when\""));
  EXPECT_THAT(ParseError(R"([{"pattern": 3, "action": "permanent"}])"),
              HasSubstr("rules[0].pattern: must be a string"));
  EXPECT_THAT(ParseError("[3]"), HasSubstr("rules[0]: a log policy is an object"));
  nlohmann::json many = nlohmann::json::array();
  for (size_t i = 0; i <= kMaxLogPolicies; ++i) {
    many.push_back({{"pattern", "x"}, {"action", "permanent"}});
  }
  EXPECT_THAT(ParseError(many.dump()), HasSubstr("65 log policies, more than the 64 allowed"));
  nlohmann::json long_pattern = nlohmann::json::array(
      {{{"pattern", std::string(kMaxLogPolicyPatternBytes + 1, 'a')}, {"action", "permanent"}}});
  EXPECT_THAT(ParseError(long_pattern.dump()), HasSubstr("rules[0].pattern: longer than 1024"));
}

TEST(LogPolicyTest, TheFirstRuleThatMatchesDecidesWithItsFirstLine) {
  std::vector<LogPolicy> policies =
      Parse(R"json([{"name": "oom", "pattern": "out of memory", "action": "permanent"},
                    {"name": "net", "pattern": "^Connection (reset|refused)",
                     "action": "retryable"}])json");
  // "net" matches an earlier line, but "oom" comes first among the rules.
  std::optional<LogPolicyMatch> match = MatchLogPolicies(
      policies, {"Connection reset by peer", "CUDA out of memory (1)", "CUDA out of memory (2)"});
  ASSERT_TRUE(match.has_value());
  EXPECT_EQ(match->policy, "oom");
  EXPECT_EQ(match->action, LogPolicyAction::kPermanent);
  EXPECT_EQ(match->line, "CUDA out of memory (1)");

  match = MatchLogPolicies(policies, {"step 1", "Connection refused: ps-0"});
  ASSERT_TRUE(match.has_value());
  EXPECT_EQ(match->policy, "net");
  EXPECT_EQ(match->action, LogPolicyAction::kRetryable);
  // Anchors apply to the line: "^Connection" does not match inside it.
  EXPECT_FALSE(MatchLogPolicies(policies, {"lost Connection reset"}).has_value());
  EXPECT_FALSE(MatchLogPolicies(policies, {}).has_value());
  EXPECT_FALSE(MatchLogPolicies({}, {"out of memory"}).has_value());
}

TEST(LogPolicyTest, OnlyTheStartOfAVeryLongLineIsSearchedAndQuoted) {
  std::vector<LogPolicy> policies = Parse(R"([{"pattern": "FATAL", "action": "permanent"}])");
  const std::string long_line = "FATAL " + std::string(kMaxMatchedLineBytes * 4, 'x');
  std::optional<LogPolicyMatch> match = MatchLogPolicies(policies, {long_line});
  ASSERT_TRUE(match.has_value());
  EXPECT_EQ(match->line.size(), kMaxMatchedLineBytes);
  EXPECT_FALSE(
      MatchLogPolicies(policies, {std::string(kMaxMatchedLineBytes, 'x') + "FATAL"}).has_value());
}

TEST(LogPolicyTest, AJobsRulesAreItsAnnotation) {
  Job job = NewTFJob();
  StatusOr<std::vector<LogPolicy>> none = JobLogPolicies(job);
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->empty());
  job.metadata.annotations[kLogPoliciesAnnotation] =
      R"([{"pattern": "CUDA out of memory", "action": "permanent"}])";
  StatusOr<std::vector<LogPolicy>> one = JobLogPolicies(job);
  ASSERT_TRUE(one.ok()) << one.status().ToString();
  EXPECT_EQ(one->size(), 1u);
  job.metadata.annotations[kLogPoliciesAnnotation] = "pattern: CUDA";
  StatusOr<std::vector<LogPolicy>> bad = JobLogPolicies(job);
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(),
              HasSubstr("metadata.annotations[cohort.dev/log-policies]: not JSON"));
}

TEST(LastErrorLineTest, FindsTheLastLineThatReadsAsAnError) {
  EXPECT_EQ(LastErrorLine({"step 1", "cohort-train: error: bad flag", "Run cohort-train --help."}),
            std::optional<size_t>(1));
  EXPECT_EQ(LastErrorLine({"Traceback (most recent call last):", "  File \"t.py\", line 3",
                           "ValueError: no data"}),
            std::optional<size_t>(2));
  EXPECT_EQ(LastErrorLine({"FATAL: out of disk", "bye"}), std::optional<size_t>(0));
  EXPECT_EQ(LastErrorLine({"open: Permission denied", "exit"}), std::optional<size_t>(0));
}

TEST(LastErrorLineTest, NoErrorWordIsNoLine) {
  EXPECT_EQ(LastErrorLine({}), std::nullopt);
  EXPECT_EQ(LastErrorLine({"epoch 1 done", "terrorist attack averted"}), std::nullopt);
}

}  // namespace
}  // namespace cohort::job
