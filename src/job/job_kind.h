// A job kind: the small table of facts and the few hooks that make a Job a TFJob or a PyTorchJob,
// so that parsing, defaults, validation, the reconciler, the writers and the executors work on
// any kind without naming one.
//
// Kubeflow's training operator has the same split: the kind-independent types of common_types.go
// and one JobController, with each kind (pkg/controller.v1/tensorflow, .../pytorch) supplying its
// names, replica types, success rule and the environment its pods get. Here:
//
//   KindFacts   what a kind is: its group/version/kind and plural, the field its replica specs are
//               under ("tfReplicaSpecs"), the container a replica runs and its default port, the
//               replica types in the operator's status order and which of them is the chief, the
//               prefix of its condition and event reasons ("TFJob" -> "TFJobRunning"), a
//               replica's default restartPolicy, whether its environment goes into every
//               container, and its own spec fields (SpecField: read, defaulted and written by the
//               generic code, objects such as elasticPolicy included).
//   JobKind     the facts plus the hooks: the success rule, which failures the job tolerates,
//               the checks and defaults of its own fields, the rules of its webhook on replica
//               specs, each replica's environment (TF_CONFIG; PyTorchJob's MASTER_ADDR...), the
//               init containers its operator adds, and the wording of its condition messages.
//   KindRegistry the kinds a parser accepts, found by apiVersion and kind.
//
// Adding a kind is one file pair like tfjob.{h,cc} or pytorchjob.{h,cc} (a JobKind subclass and
// its accessors), one line in KindRegistry::Default, and tests. A test double
// (tests/testing/test_kind.h) runs the parser and the reconciler through a kind that shares
// nothing with TFJob.
#pragma once

#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "job/common_types.h"

namespace cohort::job {

// Where each replica of a job is, as an executor lets its peers reach it. Called as a function it
// gives the "host:port" of replica `index` of `replica_type` (a Kubernetes service's DNS name, or
// a local address); Host gives the host alone, in the form a kind's operator writes it when it
// names one replica (PyTorchJob's MASTER_ADDR: the short service name "<job>-master-0" on
// Kubernetes, "localhost" locally). The type is passed as it is keyed in Job::replica_specs.
//
// Any callable that maps (type, index) to "host:port" converts to one; its hosts are then the
// host parts of its endpoints.
class EndpointFunction {
 public:
  using Function = std::function<std::string(const std::string& replica_type, int index)>;

  template <typename Callable,
            typename = std::enable_if_t<
                std::is_invocable_r_v<std::string, Callable, const std::string&, int> &&
                !std::is_same_v<std::decay_t<Callable>, EndpointFunction>>>
  EndpointFunction(Callable endpoint)  // NOLINT(google-explicit-constructor): a function's form
      : endpoint_(std::move(endpoint)) {}
  // `host` names the replicas where the host part of `endpoint` would not.
  EndpointFunction(Function endpoint, Function host)
      : endpoint_(std::move(endpoint)), host_(std::move(host)) {}

  std::string operator()(const std::string& replica_type, int index) const {
    return endpoint_(replica_type, index);
  }
  std::string Host(const std::string& replica_type, int index) const;
  // The port of the replica's endpoint (the digits after its last ':'), 0 when there is none or
  // it is not a port (above 65535).
  int Port(const std::string& replica_type, int index) const;

 private:
  Function endpoint_;
  Function host_;  // empty: the host part of endpoint_
};

// One spec field that belongs to a kind alone, e.g. TFJob's spec.successPolicy or PyTorchJob's
// spec.elasticPolicy. The parser reads it (with the type's error messages, at the line and column
// of each nested field), keeps it in Job::kind_spec as JSON, ToJson writes it back, and the CRD
// generator (kube/objects/crd.h) gives it its schema.
struct SpecField {
  enum class Type {
    kString,
    kBool,
    kInt32,
    // A mapping of `fields`; any other key is warned about and dropped, as an API server prunes
    // it. With no `fields`, a Kubernetes object kept as written.
    kObject,
    // A list of such mappings.
    kObjectList,
  };
  std::string name;  // its JSON name under spec (or under the enclosing object)
  Type type = Type::kString;
  nlohmann::json default_value;        // what an absent field means; ToJson leaves a default out
  std::vector<SpecField> fields = {};  // kObject and kObjectList: the fields of each mapping
  std::string description = {};        // for the CRD's schema; may be empty
  // Not empty for a field that still works but should no longer be written: the parser warns
  // "deprecated: <this>" where it is written.
  std::string deprecation = {};
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
  // A replica's restartPolicy when its manifest leaves it unset or "" (TFJob Never, PyTorchJob
  // OnFailure). The parser starts every replica from it.
  RestartPolicy default_restart_policy = RestartPolicy::kNever;
  // Whether the kind's environment (ReplicaEnvironment) goes into every container of a replica's
  // pod (PyTorchJob) or only into the kind's container (TFJob's TF_CONFIG). Init containers get
  // none either way.
  bool environment_in_every_container = false;
  // The replica types in the operator's status order; a manifest's keys match them
  // case-insensitively and are rewritten to them. Other types run but decide nothing, unless the
  // kind's ValidateReplicaSpecs refuses them (PyTorchJob).
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

  // Problems with the replica specs that only this kind's webhook finds (PyTorchJob: replica
  // types other than Master and Worker, a Master of other than 1 replica), beyond the rules every
  // kind shares (validation.h). Default: none.
  virtual std::vector<FieldProblem> ValidateReplicaSpecs(const Job& job) const;

  // The kind's defaults for its own spec fields (PyTorchJob: nprocPerNode "auto", elasticPolicy's
  // replica bounds), applied by ApplyDefaults after the generic ones, so that replica types are
  // canonical and replica counts set. Idempotent. Default: nothing.
  virtual void ApplySpecFieldDefaults(Job& job) const;

  // How the workers decide success when the spec has no chief. With a chief, the chief decides,
  // whatever this says.
  enum class WorkerSuccess {
    kAllWorkers,   // every worker must succeed
    kFirstWorker,  // worker 0 exiting 0 (and staying exited) succeeds the job, as do all workers
    kAnyWorker,    // any worker succeeding succeeds the job, as do all workers
  };
  virtual WorkerSuccess WorkerSuccessRule(const Job& job) const = 0;

  // Whether a replica of `replica_type` that failed for good leaves the job running instead of
  // failing it.
  virtual bool ToleratesFailure(const Job& job, const std::string& replica_type) const = 0;

  // The variables the kind gives replica `index` of `replica_type` (a type of `job`), in the
  // order to set them, over the container's own env. `endpoint` says where each replica is.
  virtual std::vector<EnvVar> ReplicaEnvironment(const Job& job, const std::string& replica_type,
                                                 int index,
                                                 const EndpointFunction& endpoint) const = 0;

  // The replica of `job` that a task named in a peer report (cluster/peer_report.h) is, as its
  // type (as keyed in Job::replica_specs) and index, or nullopt when the name is no replica of the
  // job. The reconciler uses it to tell a group restart (a replica that gave up because another
  // one failed) from a failure of its own. Default: the task type is a replica type in lower case
  // ("worker:1" is Worker 1), as TF_CONFIG and Cohort's training runtime name tasks.
  virtual std::optional<std::pair<std::string, int>> ReplicaOfTask(const Job& job,
                                                                   const std::string& task_type,
                                                                   int task_index) const;

  // Every variable ReplicaEnvironment may set, so that an executor can keep inherited values of
  // them from leaking into a replica that gets none. Default: the cluster variable.
  virtual std::vector<std::string> EnvironmentNames() const;

  // The init containers the kind's operator adds to the pod of replica `index` of `replica_type`
  // on Kubernetes, after the template's own (PyTorchJob: init-pytorch on workers, waiting for the
  // master's name to resolve), as core/v1 Container objects. Default: none.
  virtual std::vector<nlohmann::json> InitContainers(const Job& job,
                                                     const std::string& replica_type,
                                                     int index) const;

  // The messages of the conditions (and events) that the kind's UpdateJobStatus writes, which
  // differ by kind. Defaults, as the TFJob operator words them: "<Kind> <ns>/<name> is running.",
  // "<Kind> <ns>/<name> successfully completed." and "<Kind> <ns>/<name> has failed because
  // <failed> <Type> replica(s) failed.".
  virtual std::string RunningMessage(const Job& job) const;
  virtual std::string SucceededMessage(const Job& job) const;
  virtual std::string ReplicasFailedMessage(const Job& job, int failed,
                                            const std::string& replica_type) const;

 private:
  KindFacts facts_;
};

// The kinds a parser accepts. Kinds are static objects that outlive every registry.
class KindRegistry {
 public:
  explicit KindRegistry(std::vector<const JobKind*> kinds) : kinds_(std::move(kinds)) {}

  // Every kind Cohort runs: TFJob and PyTorchJob.
  static const KindRegistry& Default();

  // The kind of that apiVersion and kind, or nullptr.
  const JobKind* Find(const std::string& api_version, const std::string& kind) const;
  // The kind named `kind` in any version, or nullptr.
  const JobKind* FindByName(const std::string& kind) const;
  // The kind a person names on a command line or in a flag: its kind or its plural, in any case
  // ("tfjob", "TFJob", "pytorchjobs"), alone or with its group ("tfjobs.kubeflow.org"), or nullptr.
  const JobKind* FindByUserName(const std::string& name) const;
  const std::vector<const JobKind*>& kinds() const { return kinds_; }
  // The kinds' names joined by `separator`: "TFJob", or "TFJob or PyTorchJob".
  std::string Names(const std::string& separator) const;

 private:
  std::vector<const JobKind*> kinds_;
};

}  // namespace cohort::job
