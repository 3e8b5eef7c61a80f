// The dashboard in a real browser: headless Chromium (headless_browser.h) opens the job page of a
// 3-worker cohort-train job while it trains, and the test reads the rendered DOM: the replica
// table lists every replica, the loss chart's points grow between two looks, and after worker 1
// is SIGKILLed its restart count shows 1 on the same page, never reloaded. Screenshots of the
// job, jobs, logs and curves pages go to <build>/ui-screenshots/.
#include <gtest/gtest.h>
#include <signal.h>

#include <cstdlib>
#include <filesystem>

#include "testing/cohort_runner.h"
#include "testing/host.h"
#include "testing/processes.h"
#include "testing/wait.h"
#include "ui/ui_server.h"
#include "ui_browser/headless_browser.h"

namespace cohort::testing {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using namespace std::chrono_literals;

const fs::path kCohortTrain = fs::path(COHORT_BINARY_DIR) / "apps/cohort-train/cohort-train";
const fs::path kScreenshots = fs::path(COHORT_BINARY_DIR) / "ui-screenshots";

// A 3-worker job whose replicas write their TensorBoard files where job control tells them
// (COHORT_SUMMARY_DIR), a loss point every 5 steps.
std::string TrainingManifest(const fs::path& out) {
  std::string command = "exec " + kCohortTrain.string() +
                        " --epochs=3 --steps_per_epoch=60 --per_worker_batch=64 --seed=7"
                        " --threads=1 --backup_every_steps=20 --tensorboard_update_steps=5"
                        " --checkpoint_path=" +
                        (out / "backup").string() +
                        " --saved_model_path=" + (out / "model").string() +
                        " --tensorboard_dir=\\\"$COHORT_SUMMARY_DIR\\\"";
  return "apiVersion: kubeflow.org/v1\nkind: TFJob\nmetadata:\n  name: mnist\nspec:\n"
         "  runPolicy:\n    backoffLimit: 6\n  tfReplicaSpecs:\n    Worker:\n      replicas: 3\n"
         "      restartPolicy: OnFailure\n      template:\n        spec:\n          containers:\n"
         "            - name: tensorflow\n              image: cohort/train\n"
         "              command: [\"/bin/sh\", \"-c\", \"" +
         command + "\"]\n";
}

class BrowserTest : public ::testing::Test {
 protected:
  // The value of `expression` once `accept` holds for it, waiting at most `timeout`.
  json WaitForValue(const std::string& expression, const std::function<bool(const json&)>& accept,
                    std::chrono::seconds timeout) {
    json value;
    WaitUntil(
        [&] {
          StatusOr<json> result = browser_.Evaluate(expression);
          if (!result.ok()) return false;
          value = *result;
          return accept(value);
        },
        timeout, 250ms);
    return value;
  }
  void Screenshot(const std::string& name) {
    fs::create_directories(kScreenshots);
    Status shot = browser_.Screenshot(kScreenshots / (name + ".png"));
    EXPECT_TRUE(shot.ok()) << shot.message();
  }

  CohortSandbox sandbox_;
  HeadlessBrowser browser_;
};

TEST_F(BrowserTest, JobPageFollowsATrainingJobLive) {
  if (!browser_.ok()) COHORT_SKIP_OR_FAIL_IN_CI(browser_.error());
  ASSERT_TRUE(fs::exists(kCohortTrain)) << kCohortTrain;
  UiServer server(sandbox_);
  ASSERT_TRUE(server.ok()) << server.Output();
  const fs::path log = sandbox_.root() / "run.log";
  pid_t run = sandbox_.StartCohort(
      {"run", sandbox_.WriteFile("mnist.yaml", TrainingManifest(sandbox_.root() / "out")).string()},
      log);

  ASSERT_TRUE(browser_.Open(server.Url() + "#/jobs/default/mnist").ok());
  // A mark on this page: a reload would lose it.
  ASSERT_TRUE(browser_.Evaluate("window.cohortTestMark = 42").ok());
  json replicas = WaitForValue(
      "[...document.querySelectorAll('#replicas tr[data-replica]')].map(r => r.dataset.replica)",
      [](const json& v) { return v.is_array() && v.size() == 3; }, 60s);
  EXPECT_EQ(replicas, json({"worker-0", "worker-1", "worker-2"})) << ReadText(log);

  const std::string points = "Number(document.getElementById('loss-chart').dataset.points)";
  json first = WaitForValue(
      points, [](const json& v) { return v.is_number() && v > 0; }, 300s);
  ASSERT_TRUE(first.is_number() && first > 0) << "no loss points shown\n" << ReadText(log);
  json second = WaitForValue(
      points, [&](const json& v) { return v.is_number() && v > first; }, 180s);
  EXPECT_GT(second, first) << "the loss chart did not grow";

  pid_t worker = FindTrainerProcess("mnist", "worker", 1);
  ASSERT_GT(worker, 0);
  ASSERT_EQ(kill(worker, SIGKILL), 0);
  json restarts = WaitForValue(
      "document.querySelector('#replicas tr[data-replica=\"worker-1\"] td.restarts')"
      "?.textContent",
      [](const json& v) { return v == "1"; }, 180s);
  EXPECT_EQ(restarts, "1") << ReadText(log);
  EXPECT_EQ(*browser_.Evaluate("window.cohortTestMark"), 42) << "the page was reloaded";
  WaitForValue(
      points, [&](const json& v) { return v.is_number() && v > second; }, 120s);
  Screenshot("job");

  ASSERT_TRUE(browser_.Evaluate("location.hash = '#/jobs/default/mnist/curves'").ok());
  json charts = WaitForValue(
      "document.querySelectorAll('#curves .chart[data-tag]').length",
      [](const json& v) { return v.is_number() && v >= 2; }, 60s);
  EXPECT_GE(charts, 2);
  Screenshot("curves");

  ASSERT_TRUE(browser_.Evaluate("location.hash = '#/jobs/default/mnist/logs/worker-1'").ok());
  json markers = WaitForValue(
      "document.querySelectorAll('#log .restart-marker').length",
      [](const json& v) { return v.is_number() && v >= 1; }, 60s);
  EXPECT_GE(markers, 1) << "no restart line in worker-1's live log";
  Screenshot("logs");

  ASSERT_TRUE(browser_.Evaluate("location.hash = '#/'").ok());
  json row = WaitForValue(
      "document.querySelector('#jobs tr[data-job=\"default/mnist\"] td.restarts')?.textContent",
      [](const json& v) { return v.is_string() && v != "0"; }, 60s);
  EXPECT_TRUE(row.is_string() && row != "0") << "the jobs page shows no restart";
  WaitForValue(
      "document.querySelectorAll('#jobs svg.sparkline polyline').length",
      [](const json& v) { return v.is_number() && v >= 1; }, 30s);
  Screenshot("jobs");
  EXPECT_EQ(*browser_.Evaluate("window.cohortTestMark"), 42);

  EXPECT_EQ(WaitForChildOrStop(run, 600s), 0) << ReadText(log);
}

}  // namespace
}  // namespace cohort::testing
