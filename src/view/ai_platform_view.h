// Local jobs as `gcloud ai-platform jobs` shows training jobs, for users who come from AI
// Platform: `cohort ai-platform jobs list` prints JOB_ID STATUS CREATED, and `describe` the Job
// resource's fields (jobId, state, createTime, startTime, endTime, errorMessage, trainingInput).
//
// A job is shown under its AI Platform ID (job::AiPlatformJobId: the ID it was submitted under,
// train_taxi_1, though its TFJob is train-taxi-1). A job that failed because a replica exited
// non-zero has AI Platform's errorMessage, "The replica master 0 exited with a non-zero status of
// 2.", followed by the replica's last log line and where to read its logs.
//
// A job's TFJob state maps onto AI Platform's: Created QUEUED, Running and Restarting RUNNING,
// Succeeded SUCCEEDED, Failed FAILED, Suspended CANCELLED (`jobs cancel` suspends a job, so
// that it stays listed as gcloud's cancelled jobs do).
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "base/status.h"
#include "exec/job_state_store.h"
#include "job/common_types.h"

namespace cohort::view {

// The ID `key`'s job is shown under: its spec's AI Platform ID, else its name.
std::string AiPlatformJobId(const exec::JobStateStore& store, const exec::JobKey& key);

// AI Platform's errorMessage for a failed job with these replicas: the first replica to fail
// with a non-zero exit ("The replica worker 1 exited with a non-zero status of 2. Its last log
// line: \"...\". Its logs: cohort ai-platform jobs stream-logs ID"), or `fallback` (the failure
// condition's message) when no replica exited so.
std::string AiPlatformErrorMessage(const std::vector<exec::ReplicaRow>& replicas,
                                   const std::string& job_id, const std::string& fallback);

// AI Platform's state name for a job status ("SUCCEEDED").
std::string AiPlatformState(const job::JobStatus& status);

// gcloud's CREATED column: the time in the local time zone, "2020-03-27T11:57:55".
std::string AiPlatformCreated(Time time);

// `jobs list`: JOB_ID STATUS CREATED, newest first as gcloud lists them, columns two spaces apart.
std::string AiPlatformJobTable(const exec::JobStateStore& store,
                               const std::vector<exec::JobKey>& keys);

// `jobs describe`: the Job resource's fields for a local job; trainingInput is given back from
// the TFJob's replica counts and images.
StatusOr<nlohmann::json> AiPlatformJobObject(const exec::JobStateStore& store,
                                             const exec::JobKey& key);

}  // namespace cohort::view
