// What differs between two specs of a job, for `cohort apply -f FILE` on a job that exists:
// kubectl would update the object; a local job's replicas run with the spec they were started
// with, so apply says what differs instead ("spec.tfReplicaSpecs.Worker.replicas: 2 -> 3").
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace cohort::view {

// One line per differing field, by its path, "PATH: RUNNING -> FILE" ("<none>" for a field one
// side lacks), in path order. Empty when the specs are the same.
std::vector<std::string> SpecDifferences(const nlohmann::json& running, const nlohmann::json& file);

}  // namespace cohort::view
