// The read model: how jobs look to a person and to a program, in kubectl's shapes. `cohort get`,
// `cohort describe` and `-o json|yaml` print these, and a dashboard can show the same, from any
// JobStateStore.
//
// Ages are measured to `now` (the clock by default), so that the same store gives the same text.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "base/status.h"
#include "base/time.h"
#include "exec/job_state_store.h"

namespace cohort::view {

// The whole job object as `kubectl get KIND NAME -o json` shows it: its kind's apiVersion and
// kind, metadata, spec (normalised) and status.
StatusOr<nlohmann::json> JobObject(const exec::JobStateStore& store, const exec::JobKey& key);

// `cohort get -o json|yaml`: one job's object, or with `list` a List of every job's.
nlohmann::json JobObjects(const exec::JobStateStore& store, const std::vector<exec::JobKey>& keys,
                          bool list);

// `cohort get`: NAME STATE AGE (NAMESPACE first with `show_namespace`), and with `wide` the
// replica counts, restarts, replica specs and the last condition's message too.
std::string JobTable(const exec::JobStateStore& store, const std::vector<exec::JobKey>& keys,
                     bool wide, bool show_namespace, Time now = Clock::now());

// `cohort describe`: spec, status with conditions, the replicas, and events aggregated as
// kubectl does ("5m48s (x3 over 6m)").
StatusOr<std::string> DescribeJob(const exec::JobStateStore& store, const exec::JobKey& key,
                                  Time now = Clock::now());

}  // namespace cohort::view
