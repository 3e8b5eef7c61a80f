// Writes the /metrics text of a store of fixed contents (view/prometheus_metrics.h) to the file
// named on the command line, for check.mjs to parse with a parser Cohort did not write. One
// replica's name holds a double quote, a backslash and a line feed, to exercise escaping.
#include <cstdio>
#include <fstream>

#include "exec/memory_job_store.h"
#include "job/reconciler.h"
#include "job/spec_parser.h"
#include "view/prometheus_metrics.h"

namespace {

using namespace cohort;
using std::chrono::seconds;

Status AddJob(exec::MemoryJobStore& store, const std::string& name,
              const std::string& namespace_name) {
  StatusOr<job::Job> job = job::LoadJob(
      "apiVersion: kubeflow.org/v1\nkind: TFJob\nmetadata: {name: " + name +
          ", namespace: " + namespace_name +
          "}\nspec:\n  tfReplicaSpecs:\n    Worker:\n      replicas: 2\n      template:\n"
          "        spec:\n          containers:\n"
          "            - {name: tensorflow, image: trainer}\n",
      "job.yaml");
  if (!job.ok()) return job.status();
  return store.CreateJob(*job, nullptr);
}

Status Fill(exec::MemoryJobStore& store, Time created) {
  const exec::JobKey mnist{"default", "mnist"};
  const exec::JobKey done{"research", "done"};
  COHORT_RETURN_IF_ERROR(AddJob(store, mnist.name, mnist.namespace_name));
  COHORT_RETURN_IF_ERROR(AddJob(store, done.name, done.namespace_name));
  job::JobStatus running;
  job::SetCondition(running, job::kConditionCreated, "True", "TFJobCreated", "", created);
  job::SetCondition(running, job::kConditionRunning, "True", "TFJobRunning", "", created);
  running.start_time = created;
  running.replica_statuses["Worker"].active = 2;
  COHORT_RETURN_IF_ERROR(store.WriteStatus(mnist, running));
  std::vector<exec::ReplicaRow> rows(3);
  rows[0].name = "worker-0";
  rows[1].name = "worker-1";
  rows[1].restarts = 2;
  rows[2].name = "worker-\"odd\"\\name\nline";
  rows[2].restarts = 3;
  COHORT_RETURN_IF_ERROR(store.WriteReplicas(mnist, rows));
  job::JobStatus finished;
  job::SetCondition(finished, job::kConditionSucceeded, "True", "TFJobSucceeded", "", created);
  finished.start_time = created;
  finished.completion_time = created + seconds(90);
  return store.WriteStatus(done, finished);
}

std::vector<view::ScalarSeries> Figures(const exec::JobKey& key) {
  if (key.name != "mnist") return {};
  const double wall_time = 1700000000.5;
  return {{"worker-0", "train", "batch_loss", {{120, wall_time, 0.25}}, 10},
          {"worker-0", "train", "batch_samples_per_second", {{120, wall_time, 3000}}, 10},
          {"worker-0", "train", "batch_step_seconds", {{120, wall_time, 0.043}}, 10},
          {"worker-0", "train", "batch_allreduce_wait_seconds", {{120, wall_time, 0.004}}, 10}};
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s OUTPUT_FILE\n", argv[0]);
    return 2;
  }
  const Time created = *ParseTime("2026-01-01T00:00:00Z");
  exec::MemoryJobStore store;
  if (Status filled = Fill(store, created); !filled.ok()) {
    std::fprintf(stderr, "%s\n", filled.ToString().c_str());
    return 1;
  }
  std::ofstream(argv[1]) << view::PrometheusMetrics(store, Figures, created + seconds(60));
  return 0;
}
