// Writing a job of any kind back out in the Kubernetes shape: the normalised spec Cohort saves next
// to a job, and what `cohort get -o yaml|json` and `cohort describe` show.
//
// The object is what `kubectl get tfjob -o yaml` shows for the same manifest once the operator
// has defaulted it (status aside, which status_json.h writes); for a TFJob:
//
//   apiVersion: kubeflow.org/v1
//   kind: TFJob
//   metadata: {name, namespace, labels, annotations}
//   spec:
//     runPolicy: {cleanPodPolicy, ttlSecondsAfterFinished, activeDeadlineSeconds, backoffLimit,
//                 suspend, managedBy, schedulingPolicy}    # the unset optional ones left out
//     successPolicy: AllWorkers                           # the kind's own spec fields
//     enableDynamicWorker: true                            # (only when not the default)
//     tfReplicaSpecs:                                      # the kind's replica-spec field
//       Worker: {replicas, restartPolicy, template}
//
// A template is its PodTemplate::raw (every Kubernetes field as written) with the typed fields
// laid over it, so that defaulting (the tfjob-port) and any change made to the typed fields
// show, and nothing the typed API does not model is lost. Keys come out sorted, as kubectl
// prints them.
//
// JobFromJson reads that object back: JobFromJson(ToJson(job)) writes out equal to ToJson(job)
// for every valid, defaulted job.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "base/status.h"
#include "job/common_types.h"
#include "job/job_kind.h"

namespace cohort::job {

nlohmann::json ToJson(const Job& job);

// One replica's pod template as ToJson writes it: raw, with the typed fields laid over it. The
// Kubernetes backend creates pods from this.
nlohmann::json PodTemplateToJson(const PodTemplate& pod_template);

// Reads what ToJson writes (or any job of a kind in `kinds`, as JSON) with the rules and messages
// of ParseJob, minus line:column. The job is not defaulted or validated again; a saved spec
// already was.
StatusOr<Job> JobFromJson(const nlohmann::json& object,
                          std::vector<std::string>* warnings = nullptr,
                          const KindRegistry& kinds = KindRegistry::Default());

// Block-style YAML for any JSON value, ending in a newline. Text that YAML would read as
// something else ("true", "2", "", "null") is quoted, so the YAML reads back to the same JSON.
std::string ToYaml(const nlohmann::json& value);

}  // namespace cohort::job
