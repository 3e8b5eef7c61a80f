// The kind-independent job API: what every Kubeflow training job has, whatever its kind.
//
// Kubeflow's training operator keeps these types in pkg/apis/kubeflow.org/v1/common_types.go
// (RunPolicy, ReplicaSpec, JobStatus, JobCondition...) apart from each kind's own file
// (tensorflow_types.go for TFJob); Cohort does the same. A `Job` is one manifest of any kind: its
// metadata, run policy and replica specs are typed here, and what belongs to its kind alone (the
// kind's name, its replica-spec field, its replica types, its success rule, the environment its
// replicas get) is in the JobKind it points at (job_kind.h). The one TFJob kind is in tfjob.h.
//
// These types are the API only: parsing lives in spec_parser.h, defaulting in defaults.h,
// validation in validation.h and the controller logic in reconciler.h. Field names follow the JSON
// names of Kubeflow's Go types.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "base/time.h"

namespace cohort::job {

class JobKind;

// Where a value was written: 1-based line and column in `file`. Zero line means "unknown"
// (a value created by defaulting rather than read from a file).
struct SourcePosition {
  std::string file;
  int line = 0;
  int column = 0;
};

enum class RestartPolicy { kAlways, kOnFailure, kNever, kExitCode };
enum class CleanPodPolicy { kAll, kRunning, kNone };

struct EnvVar {
  std::string name;
  std::string value;
  // Kubernetes-only sources (valueFrom: secretKeyRef, fieldRef...) are kept verbatim for the
  // Kubernetes backend; a local run warns and leaves the variable unset.
  nlohmann::json value_from;
};

struct ContainerPort {
  std::string name;
  int container_port = 0;
  std::string protocol = "TCP";
};

struct Container {
  std::string name;
  std::string image;
  std::vector<std::string> command;
  std::vector<std::string> args;
  std::vector<EnvVar> env;
  std::string working_dir;
  std::vector<ContainerPort> ports;
  SourcePosition position;
};

struct PodTemplate {
  std::map<std::string, std::string> labels;
  std::map<std::string, std::string> annotations;
  std::vector<Container> containers;
  std::string
      restart_policy;  // the template's own spec.restartPolicy, overwritten by the replica's
  // The whole template as written, so the Kubernetes backend loses nothing (resources, volumes,
  // nodeSelector, tolerations, initContainers, sidecars...).
  nlohmann::json raw;
};

struct ReplicaSpec {
  int32_t replicas = 1;
  RestartPolicy restart_policy = RestartPolicy::kNever;
  PodTemplate template_spec;
  SourcePosition position;  // of the replica's key under the kind's replica-spec field
};

struct RunPolicy {
  CleanPodPolicy clean_pod_policy = CleanPodPolicy::kNone;
  std::optional<int32_t> ttl_seconds_after_finished;
  std::optional<int64_t> active_deadline_seconds;
  std::optional<int32_t> backoff_limit;
  bool suspend = false;
  std::optional<std::string> managed_by;
  nlohmann::json scheduling_policy;  // gang scheduling; Kubernetes backend only
};

struct ObjectMeta {
  std::string name;
  std::string namespace_name = "default";
  std::map<std::string, std::string> labels;
  std::map<std::string, std::string> annotations;
};

// One training job of any kind.
struct Job {
  // The kind's facts and hooks. The parser sets it from apiVersion and kind; a job built in code
  // starts from its kind's NewJob (e.g. NewTFJob in tfjob.h). Every step after parsing needs it.
  const JobKind* job_kind = nullptr;
  // The type meta as written (and as ToJson writes it back): validation checks them against
  // job_kind, so a job built by hand with another apiVersion is reported, not run.
  std::string api_version;
  std::string kind;
  ObjectMeta metadata;
  RunPolicy run_policy;
  // Keyed by canonical replica type ("Worker", "PS"...) after defaulting.
  std::map<std::string, ReplicaSpec> replica_specs;
  // The spec fields that belong to the kind alone (TFJob's successPolicy and
  // enableDynamicWorker), keyed by JSON name, as written. Which fields there are, their types and
  // defaults are the kind's SpecField table (job_kind.h): the parser reads only those, the writer
  // writes them back, and the kind's own accessors (e.g. TFJobSuccessPolicy) read them with
  // their default when absent.
  std::map<std::string, nlohmann::json> kind_spec;
  std::string source_file;  // the file it was read from, for messages
  // Where each field was written, keyed by field path as messages print it
  // ("spec.tfReplicaSpecs.Worker.restartPolicy", "...containers[0].image",
  // "metadata.annotations[example.com/key]"), so that defaulting and validation, which run after
  // parsing, still report file:line:column. Empty for a job that was not read from YAML. See
  // FindPosition in spec_parser.h.
  std::map<std::string, SourcePosition> positions;
};

// ---- Status (the job's status subresource, the same for every kind) ----

inline constexpr const char* kConditionCreated = "Created";
inline constexpr const char* kConditionRunning = "Running";
inline constexpr const char* kConditionRestarting = "Restarting";
inline constexpr const char* kConditionSucceeded = "Succeeded";
inline constexpr const char* kConditionSuspended = "Suspended";
inline constexpr const char* kConditionFailed = "Failed";

struct JobCondition {
  std::string type;
  std::string status;  // "True", "False" or "Unknown"
  std::string reason;  // the kind's reason prefix + what happened: "TFJobRunning"
  std::string message;
  Time last_update_time;
  Time last_transition_time;
};

struct ReplicaStatus {
  int32_t active = 0;
  int32_t succeeded = 0;
  int32_t failed = 0;
};

struct JobStatus {
  std::vector<JobCondition> conditions;  // most recent change last
  std::map<std::string, ReplicaStatus> replica_statuses;
  std::optional<Time> start_time;
  std::optional<Time> completion_time;
};

// An event as `kubectl describe` lists it (involved object: the job; source: its controller).
struct Event {
  std::string type;  // "Normal" or "Warning"
  std::string reason;
  std::string message;
  Time time;
};

// ---- Small helpers shared by every layer ----

std::string ToString(RestartPolicy policy);
std::string ToString(CleanPodPolicy policy);
std::optional<RestartPolicy> ParseRestartPolicy(const std::string& text);
std::optional<CleanPodPolicy> ParseCleanPodPolicy(const std::string& text);

// "Worker" -> "worker".
std::string LowerCase(const std::string& text);

// "<job>-<type lower-case>-<index>", the name of a replica (a pod and service in Kubernetes).
std::string ReplicaName(const std::string& job_name, const std::string& replica_type, int index);

}  // namespace cohort::job
