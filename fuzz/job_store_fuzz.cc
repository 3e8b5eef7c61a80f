// Fuzzes the job store's readers and the views over them (issue 29): one job's files in a
// scratch $COHORT_HOME hold valid state, and the fuzzer's bytes replace one of them (the first
// byte picks which: spec.json, status.json, replicas.json, events.jsonl or endpoints.json).
// Every reader and every view (`get`, `get -o wide|json`, `get pods`, `describe`) must answer
// without crashing or throwing, and a job whose Health is OK must also describe.
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "exec/job_store.h"
#include "job/defaults.h"
#include "job/reconciler.h"
#include "job/spec_parser.h"
#include "job/spec_writer.h"
#include "job/status_json.h"
#include "view/job_view.h"
#include "view/pod_view.h"

namespace {

namespace fs = std::filesystem;
using cohort::StatusOr;

constexpr const char* kManifest = R"(apiVersion: kubeflow.org/v1
kind: TFJob
metadata: {name: fuzzed}
spec:
  tfReplicaSpecs:
    Worker:
      replicas: 2
      restartPolicy: OnFailure
      template:
        spec:
          containers: [{name: tensorflow, image: example/trainer}]
)";

constexpr const char* kFiles[] = {"spec.json", "status.json", "replicas.json", "events.jsonl",
                                  "endpoints.json"};

[[noreturn]] void Fail(const std::string& what) {
  std::fprintf(stderr, "job_store_fuzz: %s\n", what.c_str());
  std::abort();
}

void Write(const fs::path& path, const std::string& contents) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << contents;
}

// The valid contents of each file, made once.
struct ValidJob {
  fs::path home;
  fs::path directory;
  std::string files[5];
};

const ValidJob& Valid() {
  static const ValidJob* valid = [] {
    auto* made = new ValidJob;
    char pattern[] = "/tmp/job-store-fuzz-XXXXXX";
    if (mkdtemp(pattern) == nullptr) Fail("mkdtemp");
    made->home = pattern;
    made->directory = made->home / "jobs" / "default" / "fuzzed";
    fs::create_directories(made->directory / "logs");
    StatusOr<cohort::job::Job> job = cohort::job::ParseJob(kManifest, "fuzz.yaml");
    if (!job.ok()) Fail(job.status().ToString());
    cohort::job::ApplyDefaults(*job);
    nlohmann::json spec = cohort::job::ToJson(*job);
    spec["metadata"]["creationTimestamp"] = "2026-01-01T00:00:00Z";
    spec["metadata"]["generation"] = 1;
    made->files[0] = spec.dump(2);
    cohort::job::JobStatus status;
    cohort::job::SetCondition(status, "Running", "True", "TFJobRunning", "running",
                              *cohort::ParseTime("2026-01-01T00:00:01Z"));
    status.replica_statuses["Worker"].active = 2;
    made->files[1] = cohort::job::JobStatusToJson(status).dump(2);
    made->files[2] =
        R"([{"name": "worker-0", "phase": "Running", "restarts": 1, "port": 2222, "pid": 7,
             "startedAt": "2026-01-01T00:00:01Z"},
            {"name": "worker-1", "phase": "Failed", "restarts": 0, "port": 2223, "exitCode": 1,
             "finishedAt": "2026-01-01T00:00:02Z", "lastLogLines": ["boom"]}])";
    made->files[3] =
        cohort::job::EventToJson(cohort::job::Event{"Normal", "SuccessfulCreatePod", "created",
                                                    *cohort::ParseTime("2026-01-01T00:00:01Z")})
            .dump() +
        "\n";
    made->files[4] = R"({"worker-0": 2222, "worker-1": 2223})";
    return made;
  }();
  return *valid;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const ValidJob& valid = Valid();
  const size_t corrupted = data[0] % 5;
  for (size_t i = 0; i < 5; ++i) {
    Write(valid.directory / kFiles[i],
          i == corrupted ? std::string(reinterpret_cast<const char*>(data + 1), size - 1)
                         : valid.files[i]);
  }
  cohort::exec::JobStore store(valid.home);
  const cohort::exec::JobKey key{"default", "fuzzed"};
  const std::vector<cohort::exec::JobKey> keys = store.ListJobs();
  if (keys.size() != 1) Fail("the job is not listed");
  const cohort::Status health = store.Health(key);
  (void)store.ReadSpec(key).ok();
  (void)store.ReadSpecObject(key).ok();
  (void)store.ReadStatus(key).ok();
  (void)store.ReadEvents(key).ok();
  (void)store.ReadEndpoints(key).ok();
  (void)store.ReadReplicas(key);
  (void)store.SpecVersion(key);
  (void)store.CreationTime(key);
  const cohort::Time now = *cohort::ParseTime("2026-01-01T01:00:00Z");
  const std::string table = cohort::view::JobTable(store, keys, /*wide=*/true, true, now);
  if (!health.ok() && table.find("Broken") == std::string::npos) {
    Fail("a broken job is not listed as Broken: " + health.ToString());
  }
  (void)cohort::view::JobTable(store, keys, /*wide=*/false, false, now);
  (void)cohort::view::JobObjects(store, keys, true).dump();
  for (const cohort::view::PodRef& pod : cohort::view::JobPods(store, key, true)) {
    (void)cohort::view::PodObject(store, pod).dump();
  }
  (void)cohort::view::PodTable(store, cohort::view::JobPods(store, key), true, true, now);
  StatusOr<std::string> described = cohort::view::DescribeJob(store, key, now);
  if (health.ok() && !described.ok()) {
    Fail("a healthy job does not describe: " + described.status().ToString());
  }
  return 0;
}
