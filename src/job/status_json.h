// A job's status and its events as JSON (the same for every kind), in the shapes Kubernetes writes
// them.
//
// A status is what `kubectl get tfjob -o json` shows under "status":
//
//   {"conditions": [{"type": "Created", "status": "True", "reason": "TFJobCreated",
//                    "message": "TFJob mnist is created.",
//                    "lastUpdateTime": "2021-09-06T11:48:10Z",
//                    "lastTransitionTime": "2021-09-06T11:48:10Z"}, ...],
//    "replicaStatuses": {"Worker": {"active": 1, "succeeded": 1}, "PS": {}},
//    "startTime": "2021-09-06T11:48:10Z",
//    "completionTime": "2021-09-06T11:49:30Z"}
//
// Like the Go types, zero counters, empty reasons and messages, absent times and an empty
// conditions list are left out; replicaStatuses is always written. Times are RFC 3339 in whole
// seconds (base/time.h). An event is one line of events.jsonl:
//
//   {"type": "Normal", "reason": "ExitedWithCode",
//    "message": "Pod: default.mnist-worker-0 exited with code 0", "time": "2021-09-06T11:49:30Z"}
//
// Reading accepts what Kubernetes may add (selector, lastReconcileTime...) and ignores it, and
// rejects anything malformed with the JSON path of the offending value.
#pragma once

#include <nlohmann/json.hpp>

#include "base/status.h"
#include "job/common_types.h"

namespace cohort::job {

nlohmann::json JobStatusToJson(const JobStatus& status);
StatusOr<JobStatus> JobStatusFromJson(const nlohmann::json& json);

nlohmann::json EventToJson(const Event& event);
StatusOr<Event> EventFromJson(const nlohmann::json& json);

}  // namespace cohort::job
