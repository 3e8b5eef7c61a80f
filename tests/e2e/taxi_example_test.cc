// The taxi example as a user runs it: examples/taxi/tfjob.yaml and its AI Platform form, each under
// `cohort run` with taxi-train, only their output directories moved into the test's sandbox.
// Each must train every role to an eval AUC within 0.02 of the data set's ceiling (the AUC of the
// true tip probability), and the evaluator side-car must evaluate the final checkpoint before it
// exits. About 35 s per form on 2 cores.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>

#include "testing/cohort_runner.h"
#include "testing/scratch_directory.h"

namespace {

namespace fs = std::filesystem;
using cohort::testing::ReadText;
using std::chrono::seconds;

const fs::path kTaxiTrain = fs::path(COHORT_BINARY_DIR) / "examples/taxi/taxi-train";
const fs::path kExamples = fs::path(COHORT_SOURCE_DIR) / "examples/taxi";

// The generated data set (the same generator and seed as the example's), once per test process
// in a directory of its own, removed at exit: generating it takes seconds, and a data set an
// earlier run left could be of another generator version. (Its name must not start with
// /tmp/cohort-taxi, which Relocated replaces.)
const fs::path& DataDir() {
  static const cohort::testing::ScratchDirectory dir("cohort-example-data");
  return dir.path();
}

// The example's text with its data in DataDir() and every other /tmp/cohort-taxi path under
// `out`.
std::string Relocated(const fs::path& example, const fs::path& out) {
  const std::string text = std::regex_replace(
      ReadText(example), std::regex("/tmp/cohort-taxi/data"), DataDir().string());
  return std::regex_replace(text, std::regex("/tmp/cohort-taxi"), out.string());
}

class TaxiExampleTest : public ::testing::TestWithParam<const char*> {
 protected:
  cohort::testing::CohortSandbox sandbox_;
};

TEST_P(TaxiExampleTest, ReachesTheAucGoalWithEveryRoleDoingItsPart) {
  ASSERT_TRUE(fs::exists(kTaxiTrain)) << kTaxiTrain;
  const fs::path outputs = sandbox_.root() / "taxi";
  const fs::path out = outputs / "taxi";  // the job's own directory: $(COHORT_JOB_NAME)
  const fs::path manifest =
      sandbox_.WriteFile(GetParam(), Relocated(kExamples / GetParam(), outputs));
  const fs::path log = sandbox_.root() / "job.log";
  const pid_t cohort = sandbox_.StartCohort(
      {"run", manifest.string(), "--image", "localhost/taxi-train=" + kTaxiTrain.string()}, log);
  ASSERT_EQ(cohort::testing::WaitForChildOrStop(cohort, seconds(600)), 0) << ReadText(log);
  const std::string output = ReadText(log);
  EXPECT_NE(output.find("job default/taxi Succeeded"), std::string::npos) << output;

  const double ceiling = nlohmann::json::parse(ReadText(DataDir() / "ground_truth.json"))
                             .at("ceiling_auc")
                             .get<double>();
  std::smatch match;
  ASSERT_TRUE(std::regex_search(output, match, std::regex("\\[chief-0\\] auc ([0-9.]+)")))
      << output;
  const double auc = std::stod(match[1]);
  EXPECT_GE(auc, ceiling - 0.02) << output;

  // Both ps served, every worker trained (the lines of Fit's Progress callback).
  for (const auto& [replica, task] :
       std::vector<std::pair<std::string, std::string>>{{"ps-0", "ps:0 serving"},
                                                        {"ps-1", "ps:1 serving"},
                                                        {"worker-0", "worker:0 starts at"},
                                                        {"worker-1", "worker:1 starts at"},
                                                        {"worker-2", "worker:2 starts at"}}) {
    EXPECT_NE(output.find("[" + replica + "] " + task), std::string::npos) << replica << "\n"
                                                                           << output;
  }
  // The evaluator evaluated the final checkpoint, the one the chief evaluated: same AUC. The
  // servers' checkpoints are in <--checkpoint_path>/ps (BackupAndRestore's layout).
  std::ifstream marker(out / "checkpoints" / "ps" / "final_checkpoint");
  long long final_step = -1;
  ASSERT_TRUE(marker >> final_step) << "no final_checkpoint marker";
  const auto metrics =
      nlohmann::json::parse(ReadText(out / "checkpoints" / "ps" / "eval" / "metrics.json"));
  EXPECT_EQ(metrics.at("global_step").get<long long>(), final_step) << metrics.dump(2);
  EXPECT_NEAR(metrics.at("auc").get<double>(), auc, 1e-4) << metrics.dump(2);
  EXPECT_FALSE(fs::is_empty(out / "logs" / "eval"));
  EXPECT_TRUE(fs::exists(out / "saved_model" / "manifest.json"));
  EXPECT_TRUE(fs::exists(out / "saved_model" / "weights.pt"));
}

INSTANTIATE_TEST_SUITE_P(BothForms, TaxiExampleTest,
                         ::testing::Values("tfjob.yaml", "ai-platform.yaml"), [](const auto& info) {
                           return std::string(info.param[0] == 't' ? "TFJob" : "AiPlatform");
                         });

}  // namespace
