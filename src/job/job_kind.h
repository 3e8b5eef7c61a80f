// A job kind: the small table of facts and the few hooks that make a Job a TFJob (or, one day, a
// PyTorchJob), so that parsing, defaults, validation, the reconciler, the writers and the
// executors work on any kind without naming one.
//
// Kubeflow's training operator has the same split: the kind-independent types of common_types.go
// and one JobController, with each kind (pkg/controller.v1/tensorflow, .../pytorch) supplying its
// names, replica types, success rule and the environment its pods get. Here:
//
//   KindFacts   what a kind is: its group/version/kind and plural, the field its replica specs are
//               under ("tfReplicaSpecs"), the container a replica runs and its default port, the
//               replica types in the operator's status order and which of them is the chief, the
//               prefix of its condition and event reasons ("TFJob" -> "TFJobRunning"), and its own
//               spec fields (SpecField: read, defaulted and written by the generic code).
//   JobKind     the facts plus the hooks: the success rule, which failures the job tolerates,
//               the checks of its own spec fields, and each replica's environment (TF_CONFIG).
//   KindRegistry the kinds a parser accepts, found by apiVersion and kind.
//
// Adding a kind is one file pair like tfjob.{h,cc} (a JobKind subclass and its accessors), one
// line in KindRegistry::Default, and tests. A test double (tests/job/test_kind.h) runs the parser
// and the reconciler through a kind that shares nothing with TFJob.
#pragma once

#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "job/common_types.h"

namespace cohort::job {

// The "host:port" of replica `index` of `replica_type`, as the executor reaches it: a Kubernetes
// service name or a local address. The type is passed as it is keyed in Job::replica_specs.
using EndpointFunction = std::function<std::string(const std::string& replica_type, int index)>;

// One spec field that belongs to a kind alone, e.g. TFJob's spec.successPolicy. The parser reads
// it (with the type's error messages), keeps it in Job::kind_spec, and ToJson writes it back.
struct SpecField {
  enum class Type { kString, kBool };
  std::string name;  // its JSON name under spec
  Type type = Type::kString;
  nlohmann::json default_value;  // what an absent field means; ToJson leaves a default out
};

// A problem that a kind's hook finds in a job: the field path and what is wrong. The validator
// adds where the field was written.
struct FieldProblem {
  std::string path;
  std::string message;
};

struct KindFacts {
  std::string group;                // "kubeflow.org"
  std::string version;              // "v1"
  std::string kind;                 // "TFJob"
  std::string plural;               // "tfjobs": the resource name, as in "tfjob.kubeflow.org"
  std::string replica_specs_field;  // "tfReplicaSpecs", under spec
  // The container a replica runs, which gets the default port and the kind's environment (e.g.
  // "tensorflow"). Validation requires one of that name in every replica.
  std::string container_name;
  std::string port_name;  // "tfjob-port": the port the replica listens on for its peers
  int port = 0;           // 2222: that port's number when a manifest does not set one
  // The replica types in the operator's status order; a manifest's keys match them
  // case-insensitively and are rewritten to them. Other types run but decide nothing.
  std::vector<std::string> replica_types;
  // The chief-like types (TFJob: Chief, Master). A spec has at most one of them; the first one
  // present alone decides the job's success.
  std::vector<std::string> chief_types;
  // The type whose replicas decide success when the spec has no chief ("Worker").
  std::string worker_type;
  // Condition and event reasons are this + what happened: "TFJob" + "Running".
  std::string reason_prefix;
  // The source of its events as `kubectl describe` shows it ("tfjob-controller").
  std::string controller_name;
  // The variable in which a replica finds its peers ("TF_CONFIG"), for messages.
  std::string cluster_variable;
  // The earlier versions of the group that a manifest may still carry ("v1alpha2, v1beta1 or
  // v1beta2"), for the parser's advice when apiVersion names one; empty for none.
  std::string older_versions;
  std::vector<SpecField> spec_fields;
};

class JobKind {
 public:
  explicit JobKind(KindFacts facts) : facts_(std::move(facts)) {}
  virtual ~JobKind() = default;
  JobKind(const JobKind&) = delete;
  JobKind& operator=(const JobKind&) = delete;

  const KindFacts& facts() const { return facts_; }
  const std::string& name() const { return facts_.kind; }  // "TFJob"
  std::string api_version() const { return facts_.group + "/" + facts_.version; }
  // "tfjob.kubeflow.org", as kubectl names the kind in "tfjob.kubeflow.org/mnist deleted".
  std::string ResourceName() const { return LowerCase(facts_.kind) + "." + facts_.group; }

  // A new, empty job of this kind: job_kind, apiVersion and kind set.
  Job NewJob() const;

  // The reason of a condition or event: Reason("Running") is "TFJobRunning".
  std::string Reason(const std::string& what) const { return facts_.reason_prefix + what; }

  // The replica type that `type` names case-insensitively ("ps" -> "PS"), or `type` itself.
  std::string CanonicalReplicaType(const std::string& type) const;
  bool IsReplicaType(const std::string& type) const;
  bool IsChiefType(const std::string& type) const;

  // The container named facts().container_name, or nullptr.
  const Container* MainContainer(const PodTemplate& pod_template) const;

  // The SpecField named `name`, or nullptr.
  const SpecField* FindSpecField(const std::string& name) const;
  // The value of the kind's spec field `name` in `job`, or its default when absent.
  nlohmann::json SpecFieldValue(const Job& job, const std::string& name) const;

  // ---- Hooks ----

  // Problems with the kind's own spec fields beyond their types, which the parser checks.
  virtual std::vector<FieldProblem> ValidateSpecFields(const Job& job) const;

  // The success rule for a spec without a chief: true when worker 0 exiting 0 (and staying
  // exited) succeeds the job; false when every worker must succeed. With a chief, the chief
  // decides, whatever this says.
  virtual bool FirstWorkerDecidesSuccess(const Job& job) const = 0;

  // Whether a replica of `replica_type` that failed for good leaves the job running instead of
  // failing it.
  virtual bool ToleratesFailure(const Job& job, const std::string& replica_type) const = 0;

  // The variables the kind gives replica `index` of `replica_type` (a type of `job`), in the
  // order to set them, over the container's own env. `endpoint` says where each replica is.
  virtual std::vector<EnvVar> ReplicaEnvironment(const Job& job, const std::string& replica_type,
                                                 int index,
                                                 const EndpointFunction& endpoint) const = 0;

  // Every variable ReplicaEnvironment may set, so that an executor can keep inherited values of
  // them from leaking into a replica that gets none. Default: the cluster variable.
  virtual std::vector<std::string> EnvironmentNames() const;

 private:
  KindFacts facts_;
};

// The kinds a parser accepts. Kinds are static objects that outlive every registry.
class KindRegistry {
 public:
  explicit KindRegistry(std::vector<const JobKind*> kinds) : kinds_(std::move(kinds)) {}

  // Every kind Cohort runs: TFJob.
  static const KindRegistry& Default();

  // The kind of that apiVersion and kind, or nullptr.
  const JobKind* Find(const std::string& api_version, const std::string& kind) const;
  // The kind named `kind` in any version, or nullptr.
  const JobKind* FindByName(const std::string& kind) const;
  const std::vector<const JobKind*>& kinds() const { return kinds_; }
  // The kinds' names joined by `separator`: "TFJob", or "TFJob or PyTorchJob".
  std::string Names(const std::string& separator) const;

 private:
  std::vector<const JobKind*> kinds_;
};

}  // namespace cohort::job
