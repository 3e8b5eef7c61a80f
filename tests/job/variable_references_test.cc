// $(VAR) references in args, expanded as the kubelet expands them (the cases of Kubernetes'
// expansion tests): known names replaced, unknown ones and unfinished ones kept, `$$` escaping.
#include "job/variable_references.h"

#include <gtest/gtest.h>

namespace cohort::job {
namespace {

const std::map<std::string, std::string> kVariables = {
    {"COHORT_JOB_NAME", "taxi-2"}, {"EMPTY", ""}, {"A", "a"}};

TEST(VariableReferencesTest, ReplacesKnownNamesAndKeepsEverythingElseAsKubernetesDoes) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"--work_dir=/tmp/cohort/$(COHORT_JOB_NAME)/ckpt", "--work_dir=/tmp/cohort/taxi-2/ckpt"},
      {"$(A)$(A)-$(EMPTY)-", "aa--"},
      {"$(UNKNOWN)", "$(UNKNOWN)"},                   // not the container's: kept as written
      {"$$(COHORT_JOB_NAME)", "$(COHORT_JOB_NAME)"},  // escaped
      {"$$$(A)", "$a"},
      {"cost $5 and $$", "cost $5 and $"},  // a `$` that starts no reference stays
      {"$(A", "$(A"},                       // unfinished
      {"$()", "$()"},
      {"ends with $", "ends with $"},
      {"$HOME ${A}", "$HOME ${A}"},  // shell forms are not Kubernetes references
      {"", ""},
  };
  for (const auto& [text, expected] : cases) {
    EXPECT_EQ(ExpandVariableReferences(text, kVariables), expected) << text;
  }
}

TEST(VariableReferencesTest, ExpandsEachArgument) {
  EXPECT_EQ(ExpandVariableReferences(std::vector<std::string>{"--a=$(A)", "$(B)"}, kVariables),
            (std::vector<std::string>{"--a=a", "$(B)"}));
}

}  // namespace
}  // namespace cohort::job
