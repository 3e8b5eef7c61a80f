// ShellJob, a job kind for tests that shares nothing with TFJob: another group, kind, plural,
// replica-spec field, container, port, replica types (Leader, Node), reason prefix ("Shell"),
// success rule (every Node must succeed: Node 0 alone never decides), tolerated failures (Nodes,
// when spec.tolerateNodeFailures is true), checks of its own spec field (spec.mode), and
// environment (SHELL_PEERS and SHELL_RANK in every replica, even a job's only one).
//
// The parser, validation, writer and reconciler tests run jobs of this kind to show that nothing
// in them is bound to TFJob. It is in no KindRegistry but ShellRegistry() and
// BothKindsRegistry().
#pragma once

#include <string>
#include <vector>

#include "job/job_kind.h"
#include "job/tfjob.h"

namespace cohort::job::testing {

inline constexpr const char* kLeader = "Leader";
inline constexpr const char* kNode = "Node";
inline constexpr const char* kModeField = "mode";
inline constexpr const char* kTolerateNodeFailuresField = "tolerateNodeFailures";

class ShellJobKind : public JobKind {
 public:
  ShellJobKind() : JobKind(Facts()) {}

  std::vector<FieldProblem> ValidateSpecFields(const Job& job) const override {
    const std::string mode = SpecFieldValue(job, kModeField).get<std::string>();
    if (mode == "parallel" || mode == "serial") return {};
    return {FieldProblem{std::string("spec.") + kModeField,
                         "\"" + mode + "\" is not one of parallel, serial"}};
  }

  WorkerSuccess WorkerSuccessRule(const Job&) const override { return WorkerSuccess::kAllWorkers; }

  bool ToleratesFailure(const Job& job, const std::string& replica_type) const override {
    return replica_type == kNode && SpecFieldValue(job, kTolerateNodeFailuresField).get<bool>();
  }

  std::vector<EnvVar> ReplicaEnvironment(const Job& job, const std::string& replica_type, int index,
                                         const EndpointFunction& endpoint) const override {
    std::string peers;
    for (const auto& [type, spec] : job.replica_specs) {
      for (int i = 0; i < spec.replicas; ++i) {
        peers += (peers.empty() ? "" : ",") + endpoint(type, i);
      }
    }
    return {EnvVar{"SHELL_PEERS", peers, {}},
            EnvVar{"SHELL_RANK", LowerCase(replica_type) + "/" + std::to_string(index), {}}};
  }

  std::vector<std::string> EnvironmentNames() const override {
    return {"SHELL_PEERS", "SHELL_RANK"};
  }

 private:
  static KindFacts Facts() {
    KindFacts facts;
    facts.group = "example.com";
    facts.version = "v1alpha1";
    facts.kind = "ShellJob";
    facts.plural = "shelljobs";
    facts.replica_specs_field = "shellReplicaSpecs";
    facts.container_name = "shell";
    facts.port_name = "peer-port";
    facts.port = 7000;
    facts.replica_types = {kLeader, kNode};
    facts.chief_types = {kLeader};
    facts.worker_type = kNode;
    facts.reason_prefix = "Shell";
    facts.controller_name = "shell-controller";
    facts.cluster_variable = "SHELL_PEERS";
    facts.spec_fields = {
        SpecField{kModeField, SpecField::Type::kString, "parallel"},
        SpecField{kTolerateNodeFailuresField, SpecField::Type::kBool, false},
    };
    return facts;
  }
};

inline const JobKind& ShellKind() {
  static const ShellJobKind kind;
  return kind;
}

inline const KindRegistry& ShellRegistry() {
  static const KindRegistry registry({&ShellKind()});
  return registry;
}

inline const KindRegistry& BothKindsRegistry() {
  static const KindRegistry registry({&TFJobKind(), &ShellKind()});
  return registry;
}

}  // namespace cohort::job::testing
