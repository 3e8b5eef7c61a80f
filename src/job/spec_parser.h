// Reading a job manifest: YAML text -> Job, with every problem reported where it was written.
//
// A manifest becomes a runnable job in three steps, in the operator's order:
//
//   ParseJob (this file) -> ApplyDefaults (defaults.h) -> ValidateJob (validation.h)
//
// and LoadJob / LoadJobFile below run all three. The parser checks what the Kubernetes API server
// checks against the CRD's schema: apiVersion and kind (one of a KindRegistry's kinds, by default
// TFJob or PyTorchJob; job_kind.h), that every field has the right type, nested ones of the
// kind's own fields included (PyTorchJob's elasticPolicy), and enum values (restartPolicy,
// cleanPodPolicy). The kind says where the replica specs are (spec.tfReplicaSpecs) and which spec
// fields are its own (successPolicy, enableDynamicWorker). Rules that span fields (a valid name, a
// container named tensorflow, at most one chief) belong to validation, which runs after defaulting
// as the operator's webhook does.
//
// Every error and warning reads
//
//   <file>:<line>:<column>: <field path>: <what is wrong>
//   job.yaml:12:22: spec.tfReplicaSpecs.Worker.restartPolicy: "Sometimes" is not one of Always,
//       OnFailure, Never, ExitCode
//
// with 1-based line and column. Errors come back as one InvalidArgument Status, one line per
// problem (at most 20, then a count of the rest). Nothing here throws.
//
// What is accepted, beyond the plain kubeflow.org/v1 TFJob:
//  - Multi-document YAML: the document whose kind is a known kind is read and the others (a PVC,
//    a ConfigMap) are ignored, as kubectl applies them separately. Two job documents are an error.
//  - Kubernetes-only pod template fields (resources, volumes, nodeSelector, sidecars...): the
//    whole template is kept verbatim in PodTemplate::raw; the typed Container fields are read
//    from it. LocalRunWarnings (validation.h) says which of them a local run ignores.
//  - spec.cleanPodPolicy, spec.ttlSecondsAfterFinished, spec.activeDeadlineSeconds and
//    spec.backoffLimit, where kubeflow.org/v1 manifests put them before kubeflow/common moved them
//    under spec.runPolicy: they are read as runPolicy's, and spec.runPolicy wins when both are
//    set. The typed API has no place for the old location, so this part of the operator's
//    defaulting happens here rather than in ApplyDefaults.
//  - The status a `get -o yaml` prints, and server-set metadata (uid, creationTimestamp...):
//    ignored silently, so that a saved or fetched object reads back.
//
// Warnings (a vector the caller may pass) are for fields that are not part of the API (an API
// server would prune them: spec.onExit, a misspelt "comand" in a container) and for the legacy
// locations above.
//
// Input larger than 4 MiB, nested deeper than 64 levels, or of more than 100,000 nodes once
// aliases are expanded is refused (see yaml_document.h), so no input can exhaust the stack or
// memory.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "base/status.h"
#include "job/common_types.h"
#include "job/job_kind.h"

namespace cohort::job {

// Parses the job in `yaml_text`, of one of `kinds`. `file_name_for_messages` prefixes every
// message and becomes Job::source_file and the file of every SourcePosition. The job is as
// written: call ApplyDefaults, then ValidateJob, before using it (or call LoadJob). Warnings are
// appended to `warnings` when it is not null.
StatusOr<Job> ParseJob(const std::string& yaml_text, const std::string& file_name_for_messages,
                       std::vector<std::string>* warnings = nullptr,
                       const KindRegistry& kinds = KindRegistry::Default());

// ParseJob on the contents of the file at `path`. NotFound or IOError when it cannot be read.
StatusOr<Job> ParseJobFile(const std::string& path, std::vector<std::string>* warnings = nullptr,
                           const KindRegistry& kinds = KindRegistry::Default());

// The steps after parsing, in the operator's order: ApplyDefaults, then ValidateJob. Passes a
// parse error through, so that `DefaultAndValidate(ParseJob(...))` reads as the pipeline.
StatusOr<Job> DefaultAndValidate(StatusOr<Job> parsed);

// Parse, ApplyDefaults, ValidateJob: a job ready to run, or every error found. `warnings` gets
// the parser's warnings; LocalRunWarnings (validation.h) is separate because only a local run
// needs it.
StatusOr<Job> LoadJob(const std::string& yaml_text, const std::string& file_name_for_messages,
                      std::vector<std::string>* warnings = nullptr,
                      const KindRegistry& kinds = KindRegistry::Default());
StatusOr<Job> LoadJobFile(const std::string& path, std::vector<std::string>* warnings = nullptr,
                          const KindRegistry& kinds = KindRegistry::Default());

// Reads a job from its JSON form with the parser's rules and messages. `positions` (field path
// -> where written) and `file_name_for_messages` may be empty, as they are for JSON that was not
// read from YAML. JobFromJson in spec_writer.h is this with neither.
StatusOr<Job> DecodeJob(const nlohmann::json& object,
                        const std::map<std::string, SourcePosition>& positions,
                        const std::string& file_name_for_messages,
                        std::vector<std::string>* warnings = nullptr,
                        const KindRegistry& kinds = KindRegistry::Default());

// ---- Messages about a field, for every step after parsing ----

// Where `field_path` was written or, when the field is absent (it was defaulted, or its absence
// is the problem), where its nearest enclosing field was written. Line 0 when the job was not
// read from a file.
SourcePosition FindPosition(const Job& job, const std::string& field_path);

// "<file>:<line>:<column>: <field_path>: <message>", the form of every spec error and warning.
std::string FieldMessage(const Job& job, const std::string& field_path, const std::string& message);

}  // namespace cohort::job
