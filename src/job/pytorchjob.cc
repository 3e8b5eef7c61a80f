#include "job/pytorchjob.h"

#include <algorithm>
#include <cctype>
#include <limits>
#include <utility>

#include "job/yaml_document.h"

namespace cohort::job {
namespace {

using nlohmann::json;

SpecField Int32Field(const char* name, const char* description = "") {
  return SpecField{name, SpecField::Type::kInt32, json(), {}, description};
}

SpecField StringField(const char* name, const char* description = "") {
  return SpecField{name, SpecField::Type::kString, json(), {}, description};
}

// spec.elasticPolicy with the fields of the operator's ElasticPolicy type.
SpecField ElasticPolicyField() {
  SpecField rdzv_conf{
      "rdzvConf",
      SpecField::Type::kObjectList,
      json(),
      {StringField("key"), StringField("value")},
      "Extra rendezvous configuration, given to torchrun as key=value pairs (PET_RDZV_CONF)."};
  SpecField standalone{"standalone",
                       SpecField::Type::kBool,
                       json(),
                       {},
                       "Start a standalone c10d rendezvous store on port 29400 (PET_STANDALONE)."};
  SpecField nproc_per_node = Int32Field("nProcPerNode",
                                        "Processes per node (PET_NPROC_PER_NODE). Deprecated: use "
                                        "spec.nprocPerNode instead.");
  nproc_per_node.deprecation = "use spec.nprocPerNode instead";
  SpecField metrics{"metrics",
                    SpecField::Type::kObjectList,
                    json(),
                    {},
                    "autoscaling/v2 MetricSpecs for a HorizontalPodAutoscaler of the job."};
  return SpecField{
      kElasticPolicyField,
      SpecField::Type::kObject,
      json(),
      {Int32Field("minReplicas",
                  "The fewest nodes the job runs with (default: maxReplicas, else "
                  "the Worker replicas)."),
       Int32Field("maxReplicas",
                  "The most nodes the job runs with (default: minReplicas, else the "
                  "Worker replicas)."),
       StringField("rdzvBackend", "torchrun's rendezvous backend (default c10d)."),
       Int32Field("rdzvPort", "The rendezvous port (default: worker 0's pytorchjob-port)."),
       StringField("rdzvHost", "The rendezvous host (default: worker 0's service)."),
       StringField("rdzvId", "The rendezvous id (PET_RDZV_ID)."), std::move(rdzv_conf),
       std::move(standalone), std::move(nproc_per_node),
       Int32Field("maxRestarts", "Restarts of the worker group before torchrun fails."),
       std::move(metrics)},
      "Elastic training with torchrun: node bounds and rendezvous."};
}

KindFacts PyTorchJobFacts() {
  KindFacts facts;
  facts.group = "kubeflow.org";
  facts.version = "v1";
  facts.kind = "PyTorchJob";
  facts.plural = "pytorchjobs";
  facts.replica_specs_field = "pytorchReplicaSpecs";
  facts.container_name = "pytorch";
  facts.port_name = "pytorchjob-port";
  facts.port = 23456;
  facts.default_restart_policy = RestartPolicy::kOnFailure;
  facts.environment_in_every_container = true;
  facts.replica_types = {kPyTorchMaster, kPyTorchWorker};
  facts.chief_types = {kPyTorchMaster};
  facts.worker_type = kPyTorchWorker;
  facts.reason_prefix = "PyTorchJob";
  facts.controller_name = "pytorchjob-controller";
  facts.cluster_variable = "MASTER_ADDR";
  facts.spec_fields = {
      SpecField{kNprocPerNodeField,
                SpecField::Type::kString,
                json(),
                {},
                "Processes per node: auto (the default), cpu, gpu or a number."},
      ElasticPolicyField(),
  };
  return facts;
}

std::string Quote(const std::string& text) {
  return json(text).dump(-1, ' ', false, json::error_handler_t::replace);
}

bool HasMaster(const Job& job) { return job.replica_specs.count(kPyTorchMaster) != 0; }

const ReplicaSpec* WorkerSpec(const Job& job) {
  auto worker = job.replica_specs.find(kPyTorchWorker);
  return worker == job.replica_specs.end() ? nullptr : &worker->second;
}

// Every replica of every type, as the operator's getTotalReplicas adds them.
int64_t TotalReplicas(const Job& job) {
  int64_t total = 0;
  for (const auto& [type, spec] : job.replica_specs) total += spec.replicas;
  return total;
}

// Go's strconv.Atoi as the operator applies it to nprocPerNode: an optional sign and decimal
// digits that fit in 64 bits, else nothing ("auto", "gpu", "").
std::optional<int64_t> GoAtoi(const std::string& text) {
  size_t i = 0;
  bool negative = false;
  if (i < text.size() && (text[i] == '+' || text[i] == '-')) negative = text[i++] == '-';
  if (i == text.size()) return std::nullopt;
  uint64_t value = 0;
  const uint64_t limit = static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) + negative;
  for (; i < text.size(); ++i) {
    if (!std::isdigit(static_cast<unsigned char>(text[i]))) return std::nullopt;
    const uint64_t digit = static_cast<uint64_t>(text[i] - '0');
    if (value > (limit - digit) / 10) return std::nullopt;
    value = value * 10 + digit;
  }
  if (negative) return value == 0 ? 0 : -static_cast<int64_t>(value - 1) - 1;
  return static_cast<int64_t>(value);
}

// nprocPerNode as the world size counts it: its number, or 1 when it is unset or not a number.
int64_t ProcessesPerNode(const Job& job) {
  std::optional<std::string> nproc = PyTorchNprocPerNode(job);
  if (!nproc) return 1;
  return GoAtoi(*nproc).value_or(1);
}

std::optional<int32_t> Int32Of(const json& object, const char* key) {
  auto found = object.find(key);
  if (found == object.end() || !found->is_number_integer()) return std::nullopt;
  return found->get<int32_t>();
}

std::optional<std::string> StringOf(const json& object, const char* key) {
  auto found = object.find(key);
  if (found == object.end() || !found->is_string()) return std::nullopt;
  return found->get<std::string>();
}

// PET_NNODES under elasticPolicy: "min:max", a missing bound taken from the other as the
// operator's defaulting does, or the Worker replicas when neither is set.
std::string ElasticNodes(const Job& job, const ElasticPolicy& policy) {
  if (!policy.min_replicas && !policy.max_replicas) {
    const ReplicaSpec* worker = WorkerSpec(job);
    return std::to_string(worker == nullptr ? 0 : worker->replicas);
  }
  const int32_t min = policy.min_replicas.value_or(*policy.max_replicas);
  const int32_t max = policy.max_replicas.value_or(*policy.min_replicas);
  return std::to_string(min) + ":" + std::to_string(max);
}

void AppendElasticEnvironment(const Job& job, const ElasticPolicy& policy,
                              const EndpointFunction& endpoint, std::vector<EnvVar>& environment) {
  const std::string host = policy.rdzv_host ? *policy.rdzv_host : endpoint.Host(kPyTorchWorker, 0);
  const int port = policy.rdzv_port ? *policy.rdzv_port : endpoint.Port(kPyTorchWorker, 0);
  environment.push_back({"PET_RDZV_ENDPOINT", host + ":" + std::to_string(port), {}});
  environment.push_back(
      {"PET_RDZV_BACKEND", policy.rdzv_backend.value_or(kDefaultRendezvousBackend), {}});
  environment.push_back({"PET_NNODES", ElasticNodes(job, policy), {}});
  if (policy.max_restarts) {
    environment.push_back({"PET_MAX_RESTARTS", std::to_string(*policy.max_restarts), {}});
  }
  if (policy.nproc_per_node) {
    environment.push_back({"PET_NPROC_PER_NODE", std::to_string(*policy.nproc_per_node), {}});
  }
  if (policy.rdzv_id) environment.push_back({"PET_RDZV_ID", *policy.rdzv_id, {}});
  // The operator's reconcile fails on an empty list (it cuts the last character of ""); Cohort
  // sets nothing for one.
  if (policy.rdzv_conf && !policy.rdzv_conf->empty()) {
    std::string conf;
    for (const auto& [key, value] : *policy.rdzv_conf) {
      conf += (conf.empty() ? "" : ",") + key + "=" + value;
    }
    environment.push_back({"PET_RDZV_CONF", conf, {}});
  }
  if (policy.standalone.value_or(false)) environment.push_back({"PET_STANDALONE", "", {}});
}

class PyTorchJobKindImpl : public JobKind {
 public:
  PyTorchJobKindImpl() : JobKind(PyTorchJobFacts()) {}

  std::vector<FieldProblem> ValidateSpecFields(const Job& job) const override {
    std::vector<FieldProblem> problems;
    std::optional<ElasticPolicy> policy = PyTorchElasticPolicy(job);
    if (!policy) return problems;
    if (WorkerSpec(job) == nullptr) {
      problems.push_back({ChildPath(ReplicaSpecsPath(), kPyTorchWorker),
                          "is required when spec.elasticPolicy is set"});
    }
    if (policy->nproc_per_node && job.kind_spec.count(kNprocPerNodeField) != 0) {
      problems.push_back(
          {"spec.elasticPolicy.nProcPerNode", "must not be used with spec.nprocPerNode"});
    }
    return problems;
  }

  std::vector<FieldProblem> ValidateReplicaSpecs(const Job& job) const override {
    std::vector<FieldProblem> problems;
    for (const auto& [type, spec] : job.replica_specs) {
      const std::string path = ChildPath(ReplicaSpecsPath(), type);
      // A key that differs from a known type only by case is the generic rules' to report.
      if (!IsReplicaType(CanonicalReplicaType(type))) {
        problems.push_back({path, Quote(type) + " is not supported: must be " +
                                      std::string(kPyTorchMaster) + " or " + kPyTorchWorker});
        continue;
      }
      // Negative counts are the generic rules' to report.
      if (type == kPyTorchMaster && spec.replicas != 1 && spec.replicas >= 0) {
        problems.push_back(
            {ChildPath(path, "replicas"), "must be 1, got " + std::to_string(spec.replicas)});
      }
      if (type == kPyTorchWorker && spec.replicas == 0) {
        problems.push_back({ChildPath(path, "replicas"), "must be at least 1, got 0"});
      }
    }
    return problems;
  }

  // SetDefaults_PyTorchJob's setElasticPolicy and setDefaultNprocPerNode.
  void ApplySpecFieldDefaults(Job& job) const override {
    auto policy = job.kind_spec.find(kElasticPolicyField);
    const bool elastic = policy != job.kind_spec.end() && policy->second.is_object();
    if (elastic) {
      json& object = policy->second;
      const bool has_min = object.contains("minReplicas");
      const bool has_max = object.contains("maxReplicas");
      if (has_max && !has_min) {
        object["minReplicas"] = object["maxReplicas"];
      } else if (has_min && !has_max) {
        object["maxReplicas"] = object["minReplicas"];
      } else if (!has_min && !has_max) {
        // The operator dereferences a missing Worker spec here; validation reports it instead.
        if (const ReplicaSpec* worker = WorkerSpec(job)) {
          object["minReplicas"] = worker->replicas;
          object["maxReplicas"] = worker->replicas;
        }
      }
    }
    const bool elastic_sets_nproc = elastic && policy->second.contains("nProcPerNode");
    if (!elastic_sets_nproc && job.kind_spec.count(kNprocPerNodeField) == 0) {
      job.kind_spec[kNprocPerNodeField] = kDefaultNprocPerNode;
    }
  }

  // With a Master, only the master decides (ChiefType in the reconciler).
  WorkerSuccess WorkerSuccessRule(const Job& job) const override {
    return PyTorchElasticPolicy(job) ? WorkerSuccess::kAnyWorker : WorkerSuccess::kAllWorkers;
  }

  bool ToleratesFailure(const Job&, const std::string&) const override { return false; }

  std::vector<EnvVar> ReplicaEnvironment(const Job& job, const std::string& replica_type, int index,
                                         const EndpointFunction& endpoint) const override {
    return PyTorchEnvironment(job, replica_type, index, endpoint);
  }

  std::vector<std::string> EnvironmentNames() const override {
    return {"PYTHONUNBUFFERED",
            "MASTER_PORT",
            "PET_MASTER_PORT",
            "MASTER_ADDR",
            "PET_MASTER_ADDR",
            "WORLD_SIZE",
            "RANK",
            "PET_NODE_RANK",
            "PET_NPROC_PER_NODE",
            "PET_RDZV_ENDPOINT",
            "PET_RDZV_BACKEND",
            "PET_NNODES",
            "PET_MAX_RESTARTS",
            "PET_RDZV_ID",
            "PET_RDZV_CONF",
            "PET_STANDALONE"};
  }

  // Cohort's torch.distributed backend names a peer by its process rank ("rank:2"), and the
  // environment fixes which replica runs which ranks when the job has a Master and no
  // elasticPolicy: replica r of RANK r (master 0, worker i at i + 1) runs ranks r * nprocPerNode
  // to r * nprocPerNode + nprocPerNode - 1 (one rank when nprocPerNode is not a number). Under
  // elasticPolicy, or without a Master, the rendezvous hands out the ranks and no replica can be
  // named from one. Any other task name is read as for every kind.
  std::optional<std::pair<std::string, int>> ReplicaOfTask(const Job& job,
                                                           const std::string& task_type,
                                                           int task_index) const override {
    if (task_type != kPeerRankTaskType) return JobKind::ReplicaOfTask(job, task_type, task_index);
    if (!HasMaster(job) || PyTorchElasticPolicy(job) || task_index < 0) return std::nullopt;
    const int64_t per_node = std::max<int64_t>(ProcessesPerNode(job), 1);
    const int64_t node = task_index / per_node;
    if (node == 0) return std::make_pair(std::string(kPyTorchMaster), 0);
    const ReplicaSpec* workers = WorkerSpec(job);
    if (workers == nullptr || node - 1 >= workers->replicas) return std::nullopt;
    return std::make_pair(std::string(kPyTorchWorker), static_cast<int>(node - 1));
  }

  // initcontainer.go: workers of a job with a Master wait until the master's service resolves.
  std::vector<json> InitContainers(const Job& job, const std::string& replica_type,
                                   int) const override {
    if (!HasMaster(job) || replica_type != kPyTorchWorker) return {};
    const std::string master = ReplicaName(job.metadata.name, kPyTorchMaster, 0);
    const std::string script = "err=1;for i in $(seq " + std::to_string(kInitContainerMaxTries) +
                               "); do if nslookup " + master +
                               "; then err=0 && break; fi;echo waiting for master; sleep 2; "
                               "done; exit $err";
    return {json{{"name", "init-pytorch"},
                 {"image", kInitContainerImage},
                 {"imagePullPolicy", "IfNotPresent"},
                 {"resources",
                  {{"limits", {{"cpu", "100m"}, {"memory", "20Mi"}}},
                   {"requests", {{"cpu", "50m"}, {"memory", "10Mi"}}}}},
                 {"command", json::array({"sh", "-c", script})}}};
  }

  // UpdateJobStatus words its messages by whether the job has a Master.
  std::string RunningMessage(const Job& job) const override {
    return name() + " " + NameForStatus(job) + " is running.";
  }

  std::string SucceededMessage(const Job& job) const override {
    return HasMaster(job) ? name() + " " + job.metadata.name + " is successfully completed."
                          : name() + " " + QualifiedName(job) + " successfully completed.";
  }

  std::string ReplicasFailedMessage(const Job& job, int failed,
                                    const std::string& replica_type) const override {
    return name() + " " + job.metadata.name + " is failed because " + std::to_string(failed) + " " +
           replica_type + " replica(s) failed.";
  }

 private:
  std::string ReplicaSpecsPath() const { return ChildPath("spec", facts().replica_specs_field); }

  static std::string QualifiedName(const Job& job) {
    return job.metadata.namespace_name + "/" + job.metadata.name;
  }

  // "mnist" with a Master, "default/mnist" without one.
  static std::string NameForStatus(const Job& job) {
    return HasMaster(job) ? job.metadata.name : QualifiedName(job);
  }
};

}  // namespace

const JobKind& PyTorchJobKind() {
  static const PyTorchJobKindImpl kind;
  return kind;
}

Job NewPyTorchJob() { return PyTorchJobKind().NewJob(); }

std::optional<ElasticPolicy> PyTorchElasticPolicy(const Job& job) {
  json value = PyTorchJobKind().SpecFieldValue(job, kElasticPolicyField);
  if (!value.is_object()) return std::nullopt;
  ElasticPolicy policy;
  policy.min_replicas = Int32Of(value, "minReplicas");
  policy.max_replicas = Int32Of(value, "maxReplicas");
  policy.rdzv_backend = StringOf(value, "rdzvBackend");
  policy.rdzv_port = Int32Of(value, "rdzvPort");
  policy.rdzv_host = StringOf(value, "rdzvHost");
  policy.rdzv_id = StringOf(value, "rdzvId");
  if (auto conf = value.find("rdzvConf"); conf != value.end() && conf->is_array()) {
    policy.rdzv_conf.emplace();
    for (const json& item : *conf) {
      if (!item.is_object()) continue;
      policy.rdzv_conf->emplace_back(StringOf(item, "key").value_or(""),
                                     StringOf(item, "value").value_or(""));
    }
  }
  if (auto standalone = value.find("standalone");
      standalone != value.end() && standalone->is_boolean()) {
    policy.standalone = standalone->get<bool>();
  }
  policy.nproc_per_node = Int32Of(value, "nProcPerNode");
  policy.max_restarts = Int32Of(value, "maxRestarts");
  return policy;
}

std::optional<std::string> PyTorchNprocPerNode(const Job& job) {
  json value = PyTorchJobKind().SpecFieldValue(job, kNprocPerNodeField);
  if (!value.is_string()) return std::nullopt;
  return value.get<std::string>();
}

std::vector<EnvVar> PyTorchEnvironment(const Job& job, const std::string& replica_type, int index,
                                       const EndpointFunction& endpoint) {
  std::vector<EnvVar> environment;
  // No output buffering, so that logs show as they are written.
  environment.push_back({"PYTHONUNBUFFERED", "1", {}});
  if (HasMaster(job)) {
    const std::string port = std::to_string(endpoint.Port(kPyTorchMaster, 0));
    const std::string host = endpoint.Host(kPyTorchMaster, 0);
    const int64_t rank = replica_type == kPyTorchWorker ? index + 1 : index;
    environment.push_back({"MASTER_PORT", port, {}});
    environment.push_back({"PET_MASTER_PORT", port, {}});
    environment.push_back({"MASTER_ADDR", host, {}});
    environment.push_back({"PET_MASTER_ADDR", host, {}});
    // Go's int arithmetic, which wraps on overflow.
    const int64_t world_size = static_cast<int64_t>(static_cast<uint64_t>(TotalReplicas(job)) *
                                                    static_cast<uint64_t>(ProcessesPerNode(job)));
    environment.push_back({"WORLD_SIZE", std::to_string(world_size), {}});
    environment.push_back({"RANK", std::to_string(rank), {}});
    environment.push_back({"PET_NODE_RANK", std::to_string(rank), {}});
  }
  if (std::optional<std::string> nproc = PyTorchNprocPerNode(job)) {
    environment.push_back({"PET_NPROC_PER_NODE", *nproc, {}});
  }
  if (std::optional<ElasticPolicy> policy = PyTorchElasticPolicy(job)) {
    AppendElasticEnvironment(job, *policy, endpoint, environment);
  } else {
    environment.push_back({"PET_NNODES", std::to_string(TotalReplicas(job)), {}});
  }
  return environment;
}

}  // namespace cohort::job
