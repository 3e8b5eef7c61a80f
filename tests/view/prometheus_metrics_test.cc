// /metrics text on a store of fixed contents: families, labels, values and escaping. (The
// format itself is checked by a real Prometheus parser in tests/prometheus_text.)
#include "view/prometheus_metrics.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "exec/memory_job_store.h"
#include "job/reconciler.h"
#include "job/spec_parser.h"

namespace cohort::view {
namespace {

using std::chrono::seconds;
using ::testing::HasSubstr;
using ::testing::Not;

class PrometheusMetricsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    AddJob("mnist", "default");
    AddJob("done", "research");
    job::JobStatus running;
    job::SetCondition(running, job::kConditionCreated, "True", "TFJobCreated", "", created_);
    job::SetCondition(running, job::kConditionRunning, "True", "TFJobRunning", "", created_);
    running.start_time = created_ + seconds(1);
    running.replica_statuses["Worker"].active = 2;
    ASSERT_TRUE(store_.WriteStatus(mnist_, running).ok());
    exec::ReplicaRow worker1;
    worker1.name = "worker-1";
    worker1.phase = "Running";
    worker1.restarts = 2;
    exec::ReplicaRow worker0 = worker1;
    worker0.name = "worker-0";
    worker0.restarts = 0;
    ASSERT_TRUE(store_.WriteReplicas(mnist_, {worker0, worker1}).ok());

    job::JobStatus done;
    job::SetCondition(done, job::kConditionSucceeded, "True", "TFJobSucceeded", "", created_);
    done.start_time = created_;
    done.completion_time = created_ + seconds(90);
    ASSERT_TRUE(store_.WriteStatus(done_, done).ok());
  }

  void AddJob(const std::string& name, const std::string& namespace_name) {
    StatusOr<job::Job> job = job::LoadJob(
        "apiVersion: kubeflow.org/v1\nkind: TFJob\nmetadata: {name: " + name +
            ", namespace: " + namespace_name +
            "}\nspec:\n  tfReplicaSpecs:\n    Worker:\n      replicas: 2\n      template:\n"
            "        spec:\n          containers:\n"
            "            - {name: tensorflow, image: trainer}\n",
        "job.yaml");
    ASSERT_TRUE(job.ok()) << job.status().ToString();
    ASSERT_TRUE(store_.CreateJob(*job, nullptr).ok());
  }

  static std::vector<ScalarSeries> Figures(const exec::JobKey& key) {
    if (key.name != "mnist") return {};
    return {{"worker-0", "train", "batch_loss", {{120, 1700000000.5, 0.25}}, 10},
            {"worker-0", "train", "batch_samples_per_second", {{120, 1700000000.5, 3000}}, 10},
            {"worker-0", "train", "batch_allreduce_wait_seconds", {{120, 1700000000.5, 0.004}}, 10},
            {"worker-0", "validation", "epoch_loss", {{100, 1700000000, 0.5}}, 1}};
  }

  const Time created_ = *ParseTime("2026-01-01T00:00:00Z");
  exec::MemoryJobStore store_;
  const exec::JobKey mnist_{"default", "mnist"};
  const exec::JobKey done_{"research", "done"};
};

TEST_F(PrometheusMetricsTest, JobsByStateWithTheTrainingOperatorsLabels) {
  const std::string text = PrometheusMetrics(store_, Figures, created_ + seconds(61));
  EXPECT_THAT(text, HasSubstr("# HELP cohort_jobs Number of jobs in each state.\n"
                              "# TYPE cohort_jobs gauge\n"));
  EXPECT_THAT(text, HasSubstr("cohort_jobs{job_namespace=\"default\",framework=\"tensorflow\","
                              "state=\"Running\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("cohort_jobs{job_namespace=\"default\",framework=\"tensorflow\","
                              "state=\"Failed\"} 0\n"));
  EXPECT_THAT(text, HasSubstr("cohort_job_state{namespace=\"research\",job_name=\"done\","
                              "framework=\"tensorflow\",state=\"Succeeded\"} 1\n"));
}

TEST_F(PrometheusMetricsTest, DurationsRestartsAndReplicas) {
  const std::string text = PrometheusMetrics(store_, Figures, created_ + seconds(61));
  EXPECT_THAT(text, HasSubstr("cohort_job_duration_seconds{namespace=\"default\","
                              "job_name=\"mnist\"} 60\n"));
  EXPECT_THAT(text, HasSubstr("cohort_job_duration_seconds{namespace=\"research\","
                              "job_name=\"done\"} 90\n"));
  EXPECT_THAT(text, HasSubstr("cohort_job_completion_time_seconds{namespace=\"research\","
                              "job_name=\"done\"} 1767225690\n"));
  EXPECT_THAT(text, HasSubstr("# TYPE cohort_replica_restarts_total counter\n"));
  EXPECT_THAT(text, HasSubstr("cohort_replica_restarts_total{namespace=\"default\","
                              "pod=\"mnist-worker-1\",container=\"tensorflow\",job_name=\"mnist\","
                              "replica_type=\"worker\",replica_index=\"1\"} 2\n"));
  EXPECT_THAT(text, HasSubstr("cohort_job_replicas{namespace=\"default\",job_name=\"mnist\","
                              "replica_type=\"worker\",status=\"active\"} 2\n"));
}

TEST_F(PrometheusMetricsTest, TheLatestTrainingFiguresOfUnfinishedJobs) {
  const std::string text = PrometheusMetrics(store_, Figures, created_ + seconds(61));
  const std::string labels =
      "{namespace=\"default\",job_name=\"mnist\",pod=\"mnist-worker-0\",replica_type=\"worker\","
      "replica_index=\"0\"}";
  EXPECT_THAT(text, HasSubstr("cohort_training_global_step" + labels + " 120\n"));
  EXPECT_THAT(text, HasSubstr("cohort_training_loss" + labels + " 0.25\n"));
  EXPECT_THAT(text, HasSubstr("cohort_training_samples_per_second" + labels + " 3000\n"));
  EXPECT_THAT(text, HasSubstr("cohort_training_allreduce_wait_seconds" + labels + " 0.004\n"));
  EXPECT_THAT(text, HasSubstr("cohort_training_last_update_seconds" + labels + " 1700000000.5\n"));
  EXPECT_THAT(text, Not(HasSubstr("cohort_training_step_seconds")));  // never logged
  EXPECT_THAT(text, Not(HasSubstr("job_name=\"done\",pod=")));
}

TEST_F(PrometheusMetricsTest, NoFiguresWithoutScalars) {
  const std::string text = PrometheusMetrics(store_, nullptr, created_ + seconds(61));
  EXPECT_THAT(text, Not(HasSubstr("cohort_training_")));
  EXPECT_THAT(text, HasSubstr("cohort_jobs{"));
}

TEST(EscapeLabelValueTest, EscapesBackslashQuoteAndNewline) {
  EXPECT_EQ(EscapeLabelValue("a\\b\"c\nd"), "a\\\\b\\\"c\\nd");
  EXPECT_EQ(EscapeLabelValue("plain"), "plain");
}

}  // namespace
}  // namespace cohort::view
