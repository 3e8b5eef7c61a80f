// /metrics: jobs, replicas and training figures in the Prometheus text exposition format 0.0.4,
// for the monitoring tools operators already run.
//
// Label names follow the exporters people already query: Kubeflow's training-operator
// (`job_namespace`, `framework` on its job counts), kube-state-metrics (`namespace`, `pod`,
// `container` on restarts; `namespace`, `job_name` on a job's times). Families (all gauges but
// the restart counter):
//   cohort_jobs{job_namespace,framework,state}          jobs in each state (Created, Running,
//                                                       Restarting, Suspended, Succeeded, Failed;
//                                                       Unknown before the first status)
//   cohort_job_state{namespace,job_name,framework,state} 1 for the job's state, 0 for the others
//   cohort_job_start_time_seconds{namespace,job_name}      status.startTime, Unix seconds
//   cohort_job_completion_time_seconds{namespace,job_name} status.completionTime, once finished
//   cohort_job_duration_seconds{namespace,job_name}        start to completion, or to now
//   cohort_job_replicas{namespace,job_name,replica_type,status}  active, succeeded, failed
//   cohort_replica_restarts_total{namespace,pod,container,job_name,replica_type,replica_index}
// and, for each replica of an unfinished job that has written TensorBoard scalars
// (view/training_scalars.h), its latest figures, labelled
// {namespace,job_name,pod,replica_type,replica_index}:
//   cohort_training_global_step, cohort_training_loss, cohort_training_samples_per_second,
//   cohort_training_step_seconds, cohort_training_allreduce_wait_seconds (per step: what a step
//   waited for the gradient sums after its backward pass), cohort_training_last_update_seconds
//   (the wall time of the latest figure).
// A pod is named as on Kubernetes, `<job>-<type>-<index>`. Label values are escaped (\\, \", \n).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "base/time.h"
#include "exec/job_state_store.h"
#include "view/training_scalars.h"

namespace cohort::view {

// The latest point of each of a job's scalar series (ScalarQuery::latest_only); empty when it
// has none.
using LatestScalars = std::function<std::vector<ScalarSeries>(const exec::JobKey& key)>;

// Every job of `store`, with the training figures `latest_scalars` gives (may be empty: no
// training figures), measured at `now`.
std::string PrometheusMetrics(const exec::JobStateStore& store, const LatestScalars& latest_scalars,
                              Time now = Clock::now());

// The LatestScalars of the event files of a $COHORT_HOME store, read through `cache` (which must
// outlive the function returned).
LatestScalars LatestScalarsOf(const exec::JobStore& store, ScalarCache* cache);

// `value` as a label value: backslash, double quote and line feed escaped.
std::string EscapeLabelValue(const std::string& value);

}  // namespace cohort::view
