// Google AI Platform (Cloud ML Engine) training jobs, read as the TFJob they amount to.
//
// Teams moving off AI Platform Training have job specs in its TrainingInput format, either the
// file `gcloud ai-platform jobs submit training --config` takes
//
//   jobId: taxi                          # optional; --name may give it instead
//   labels: {team: forecasting}          # optional
//   trainingInput:
//     scaleTier: CUSTOM
//     masterType: n1-standard-8
//     masterConfig: {imageUri: localhost/taxi-train}
//     workerType: n1-standard-8
//     workerCount: 3
//     parameterServerType: n1-standard-4
//     parameterServerCount: 2
//     args: [--epochs=3]
//     useChiefInTfConfig: true
//
// or the REST Job object (JSON or YAML: the same fields, counts possibly written as strings, as
// proto3's JSON mapping writes int64). Rather than a second executor, such a spec is converted
// to a kubeflow.org/v1 TFJob, which then goes through the same defaulting and validation as any
// manifest (spec_parser.h, defaults.h, validation.h) and runs the same way. A file is taken for
// AI Platform's format by its content: a document with trainingInput and with neither kind nor
// apiVersion.
//
// The cluster. AI Platform starts one master and, by scale tier:
//   BASIC, BASIC_GPU, BASIC_TPU  the master alone
//   STANDARD_1                   the master, 4 workers and 3 parameter servers
//   PREMIUM_1                    the master, 19 workers and 11 parameter servers
//   CUSTOM                       the master, workerCount workers, parameterServerCount
//                                parameter servers and evaluatorCount evaluators
// (an absent scaleTier is BASIC, as gcloud submits it). The REST reference
// (cloud.google.com/ai-platform/training/docs/reference/rest/v1/projects.jobs#ScaleTier) only
// says "many workers and a few parameter servers" and "a large number of workers with many
// parameter servers"; the counts are those of the tier table of AI Platform's former
// machine-types and pricing pages, which could not be re-read here. *Count fields are an error
// with any tier but CUSTOM, and so is a missing masterType (or workerType... when its count is
// above zero) with CUSTOM, as AI Platform refuses both.
//
// The master is the chief: its TF_CONFIG task type is "master", or "chief" with
// useChiefInTfConfig: true (cloud.google.com/ai-platform/training/docs/distributed-training-
// details), so it becomes the replica type Master or Chief. workerCount, parameterServerCount
// and evaluatorCount become Worker, PS and Evaluator replicas. As on AI Platform, the evaluator
// is left out of TF_CONFIG's cluster (the job gets the annotation
// cohort.dev/evaluator-in-cluster: "false").
//
// Each replica's container is named tensorflow and runs <role>Config.imageUri, the master's
// when its own is unset (AI Platform's rule). Its args are trainingInput.args, which every
// replica gets, followed by --job-dir=<jobDir> when jobDir is set (the REST reference: jobDir "is
// passed to your TensorFlow program as the '--job-dir' command-line argument"). A role's
// containerCommand and containerArgs, when set, become the container's command and replace its
// args: Cohort's reading, which the reference does not spell out.
//
// Failures. AI Platform Training's documentation ("Understanding the training service") says that
// a replica that exits non-zero is restarted at once, that a common (permanent) error shuts the
// whole job down, and that other errors allow a replica up to five restarts before the job is
// retried and then failed. A local run reads an exit of 1-127 (the program's own error) as the
// permanent kind and a death by signal (128 + N: a kill, the OOM killer, a stop) as the other, so
// every replica has restartPolicy ExitCode and the job backoffLimit 5: a master that exits 2 fails
// the job at once, as AI Platform fails it, instead of being restarted until the deadline. The
// limit is the job's, not each replica's, and the job is not retried as a whole
// (docs/behaviour.md §10). A TFJob manifest keeps its own policies. scheduling.maxRunningTime
// ("7200s") becomes
// runPolicy.activeDeadlineSeconds, rounded up to whole seconds; unset, it is 604800s (seven
// days), the default the REST reference of Scheduling gives. jobId becomes metadata.name
// (lower-cased, '_' and '.' turned into '-', which must leave a DNS-1035 label) and labels
// become metadata.labels. A job ID that is not the name it gave (train_taxi_1 for train-taxi-1) is
// kept in the annotation cohort.dev/ai-platform-job-id, so that gcloud's commands find the job
// and show it under the ID the user gave.
//
// gcloud's flags. `gcloud ai-platform jobs submit training` sets trainingInput fields with flags
// (--job-dir, --scale-tier, --module-name, --master-image-uri...) that override the --config
// file's, and appends the arguments after `--` to the trainer's. AiPlatformCommandLine carries
// them; messages about a field a flag set name the flag instead of a line of the file.
//
// What a local run cannot honour gives one warning per field, and the job still runs: machine
// types, acceleratorConfig, diskConfig, tpuTfVersion, region, runtimeVersion, pythonVersion,
// scheduling.maxWaitTime and priority, network, serviceAccount, encryptionConfig,
// enableWebAccess. A gs:// jobDir (or any storage URL in the args) gets the warning of every
// local run (validation.h's LocalRunWarnings), positioned where it was written. Fields that are
// not part of TrainingInput warn as the TFJob parser's unknown fields do; output-only fields of a
// fetched Job (state, trainingOutput...) are ignored silently. What cannot run at all is an error:
// packageUris and pythonModule (code for AI Platform's runtime images) without an imageUri,
// hyperparameters (a tuning job of many trials), predictionInput.
//
// Not reproduced: the "job" and "trial" extras of AI Platform's TF_CONFIG, and the CLUSTER_SPEC
// variable it sets for custom containers.
//
// Messages have the TFJob parser's form, positioned where the AI Platform field was written:
//   job.yaml:4:16: trainingInput.workerCount: "-1" must be a non-negative integer
// Errors come back as one InvalidArgument Status, one line per problem. Nothing here throws.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "base/status.h"
#include "job/common_types.h"
#include "job/yaml_document.h"

namespace cohort::job {

// Whether `document` is an AI Platform job spec rather than a Kubernetes object: it is a
// mapping with trainingInput, and has neither kind nor apiVersion.
bool IsAiPlatformJob(const YamlDocument& document);

// The annotation that keeps a job's AI Platform ID where it differs from the TFJob's name.
inline constexpr const char* kAiPlatformJobIdAnnotation = "cohort.dev/ai-platform-job-id";

// The backoffLimit of a converted job: AI Platform's five restarts of a replica after a
// non-permanent error (see above).
inline constexpr int32_t kAiPlatformBackoffLimit = 5;

// What gcloud's submit line sets beside the --config file.
struct AiPlatformCommandLine {
  // trainingInput fields, as the file writes them ({"jobDir": "...", "masterConfig":
  // {"imageUri": "..."}}); each replaces the file's (a ReplicaConfig's imageUri only its own key).
  nlohmann::json training_input = nlohmann::json::object();
  // The flag that set each field, by field path ("trainingInput.jobDir" -> "--job-dir"), for
  // messages.
  std::map<std::string, std::string> flag_of_field;
  // The words after `--`: appended to trainingInput.args, before --job-dir.
  std::vector<std::string> user_args;
  bool empty() const { return training_input.empty() && user_args.empty(); }
};

struct AiPlatformOptions {
  // The TFJob's name. Empty: taken from jobId, else `name_without_job_id`, and an error when
  // there is neither.
  std::string job_name;
  std::string name_without_job_id;
  // The job ID the user gave for `job_name` (gcloud's JOB argument, say train_taxi_1); kept in
  // kAiPlatformJobIdAnnotation when it differs from the name. Empty: jobId's, when it names the
  // job.
  std::string job_id;
  AiPlatformCommandLine command_line;
};

// The TFJob-kind Job that `document` (for which IsAiPlatformJob holds) amounts to, as ParseJob
// returns one: not yet defaulted or validated. Its positions map TFJob field paths to the AI
// Platform fields they came from, so that later messages point at the lines written. Warnings are
// appended to `warnings` when it is not null.
StatusOr<Job> ConvertAiPlatformJob(const YamlDocument& document,
                                   const std::string& file_name_for_messages,
                                   const AiPlatformOptions& options,
                                   std::vector<std::string>* warnings = nullptr);

// The AI Platform ID of a job: its kAiPlatformJobIdAnnotation, else its name.
std::string AiPlatformJobId(const Job& job);

// The Kubernetes name a jobId gives its job: lower-cased, with '_' and '.' turned into '-'.
// InvalidArgument (without a position; the caller adds it) when that is not a DNS-1035 label.
StatusOr<std::string> JobNameForJobId(const std::string& job_id);

}  // namespace cohort::job
