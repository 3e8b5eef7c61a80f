// bench/ui: how fast `cohort ui` serves its pages' data from a large $COHORT_HOME, and that its
// memory stays bounded while it streams large logs.
//
//   ui_bench [--jobs 200] [--events 10000] [--log-mib 1024] [--points 1000000] [--rounds 20]
//
// Builds a scratch COHORT_HOME of `--jobs` finished 3-replica jobs (written through the JobStore,
// as a supervisor would), `--events` events spread over them (half on the first job, whose page
// is measured), `--log-mib` MiB of replica logs (half in one log), and `--points` loss points in
// TensorBoard event files of one replica; then serves it with the real DashboardServer on
// loopback and times, over `--rounds` rounds, what each page asks for:
//   jobs page   GET /apis/kubeflow.org/v1/tfjobs + GET /api/v1/pods
//   job page    the job, its replicas, its last 200 events (fieldSelector, limit), as the page
//   log tail    GET .../pods/POD/log?allRuns=true&tailLines=1000 of the largest log
//   scalars     GET .../scalars of the job with --points points, first read and cached
// and the process's peak resident memory before and after streaming the largest log whole.
// Prints one line per figure (median and worst, ms) and a summary line "ui: ...".
#include <httplib.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "exec/job_store.h"
#include "exec/supervisor_lock.h"
#include "job/job_file.h"
#include "job/reconciler.h"
#include "train/summary/event_file_writer.h"
#include "ui/dashboard_server.h"

namespace {

using namespace cohort;
using Stopwatch = std::chrono::steady_clock;

struct Flags {
  int jobs = 200;
  int events = 10000;
  int log_mib = 1024;
  int64_t points = 1000000;
  int rounds = 20;
};

long PeakResidentKib() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmHWM:", 0) == 0) return std::stol(line.substr(6));
  }
  return -1;
}

int Fail(const std::string& message) {
  std::fprintf(stderr, "ui_bench: %s\n", message.c_str());
  return 1;
}

std::string Manifest(const std::string& name) {
  return "apiVersion: kubeflow.org/v1\nkind: TFJob\nmetadata:\n  name: " + name +
         "\nspec:\n  tfReplicaSpecs:\n    Worker:\n      replicas: 3\n      restartPolicy: "
         "OnFailure\n      template:\n        spec:\n          containers:\n            - name: "
         "tensorflow\n              image: cohort/train\n";
}

Status WriteLog(const std::filesystem::path& path, uint64_t bytes) {
  std::filesystem::create_directories(path.parent_path());
  std::ofstream out(path, std::ios::binary);
  std::string line = "epoch 1 step 100/312 - loss 0.4321 - accuracy 0.8765 - 1234 samples/s\n";
  std::string block;
  while (block.size() < (1 << 20)) block += line;
  for (uint64_t written = 0; written < bytes; written += block.size()) {
    out.write(block.data(),
              static_cast<std::streamsize>(std::min<uint64_t>(block.size(), bytes - written)));
  }
  return out ? Status::OK() : Status::IOError("cannot write " + path.string());
}

Status BuildHome(const std::filesystem::path& home, const Flags& flags) {
  exec::JobStore store(home);
  Time now = cohort::Clock::now();
  uint64_t log_bytes = uint64_t(flags.log_mib) << 20;
  uint64_t other_logs = flags.jobs * 3 > 1 ? (log_bytes / 2) / (flags.jobs * 3 - 1) : 0;
  for (int i = 0; i < flags.jobs; ++i) {
    std::string name = "job-" + std::to_string(i);
    StatusOr<job::JobFile> loaded = job::LoadJobFromText(Manifest(name), name + ".yaml", {});
    if (!loaded.ok()) return loaded.status();
    exec::JobKey key{"default", name};
    // Held while the job is written, as by its supervisor; free once it is (a finished job).
    exec::SupervisorLock lock;
    if (Status created = store.CreateJob(loaded->job, &lock); !created.ok()) return created;
    job::JobStatus status;
    status.start_time = now;
    status.completion_time = now;
    status.conditions.push_back({"Created", "True", "TFJobCreated", "created", now, now});
    status.conditions.push_back({"Succeeded", "True", "TFJobSucceeded", "done", now, now});
    status.replica_statuses["Worker"].succeeded = 3;
    if (Status written = store.WriteStatus(key, status); !written.ok()) return written;
    int events = i == 0 ? flags.events / 2 : (flags.events / 2) / std::max(1, flags.jobs - 1);
    std::vector<job::Event> batch;
    for (int e = 0; e < events; ++e) {
      batch.push_back({"Normal", "SuccessfulCreatePod",
                       "Created pod: " + name + "-worker-" + std::to_string(e % 3), now});
    }
    if (Status appended = store.AppendEvents(key, batch); !appended.ok()) return appended;
    std::vector<exec::ReplicaRow> rows;
    for (int r = 0; r < 3; ++r) {
      exec::ReplicaRow row;
      row.name = "worker-" + std::to_string(r);
      row.phase = "Succeeded";
      row.exit_code = 0;
      row.started_at = now;
      row.finished_at = now;
      row.port = 20000 + r;
      rows.push_back(row);
      uint64_t size = i == 0 && r == 0 ? log_bytes / 2 : other_logs;
      if (Status log = WriteLog(store.LogPath(key, row.name), size); !log.ok()) return log;
    }
    if (Status written = store.WriteReplicas(key, rows); !written.ok()) return written;
  }
  // The loss of job-0's worker-0, in event files of at most 250,000 points each.
  std::filesystem::path run = store.JobDirectory({"default", "job-0"}) / "summaries/worker-0/train";
  for (int64_t step = 0; step < flags.points;) {
    StatusOr<std::unique_ptr<train::EventFileWriter>> writer =
        train::EventFileWriter::Create(run.string());
    if (!writer.ok()) return writer.status();
    for (int64_t end = std::min<int64_t>(flags.points, step + 250000); step < end; ++step) {
      Status written = (*writer)->WriteScalars(step, {{"batch_loss", 2.0f / (1 + step * 1e-4f)}});
      if (!written.ok()) return written;
    }
    if (Status flushed = (*writer)->Flush(); !flushed.ok()) return flushed;
  }
  return Status::OK();
}

// Times `requests` (all answered 200) over `rounds`; prints median and worst in ms.
double Measure(httplib::Client& client, const std::string& what,
               const std::vector<std::string>& requests, int rounds, size_t* bytes) {
  std::vector<double> times;
  for (int round = 0; round < rounds; ++round) {
    auto start = Stopwatch::now();
    for (const std::string& path : requests) {
      auto response = client.Get(path);
      if (!response || response->status != 200) {
        std::fprintf(stderr, "ui_bench: %s failed\n", path.c_str());
        return -1;
      }
      *bytes = response->body.size();
    }
    times.push_back(std::chrono::duration<double, std::milli>(Stopwatch::now() - start).count());
  }
  std::sort(times.begin(), times.end());
  std::printf("%-34s median %8.1f ms  worst %8.1f ms  (last answer %zu bytes; peak RSS %ld KiB)\n",
              what.c_str(), times[times.size() / 2], times.back(), *bytes, PeakResidentKib());
  return times[times.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  Flags flags;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string flag = argv[i];
    long long value = std::atoll(argv[i + 1]);
    if (flag == "--jobs")
      flags.jobs = static_cast<int>(value);
    else if (flag == "--events")
      flags.events = static_cast<int>(value);
    else if (flag == "--log-mib")
      flags.log_mib = static_cast<int>(value);
    else if (flag == "--points")
      flags.points = value;
    else if (flag == "--rounds")
      flags.rounds = static_cast<int>(value);
    else
      return Fail("unknown flag " + flag);
  }
  if (flags.jobs < 1 || flags.rounds < 1) return Fail("--jobs and --rounds must be at least 1");
  char pattern[] = "/tmp/cohort-ui-bench-XXXXXX";
  if (mkdtemp(pattern) == nullptr) return Fail("mkdtemp failed");
  std::filesystem::path home = pattern;
  auto built_start = Stopwatch::now();
  if (Status built = BuildHome(home, flags); !built.ok()) return Fail(built.message());
  std::printf("home: %d jobs, %d events, %d MiB of logs, %lld points (built in %.1f s)\n",
              flags.jobs, flags.events, flags.log_mib, static_cast<long long>(flags.points),
              std::chrono::duration<double>(Stopwatch::now() - built_start).count());
  ui::ServerOptions options;
  options.port = 0;
  options.home = home;
  StatusOr<std::unique_ptr<ui::DashboardServer>> server = ui::DashboardServer::Start(options);
  if (!server.ok()) return Fail(server.status().message());
  httplib::Client client("127.0.0.1", (*server)->port());
  client.set_read_timeout(120, 0);
  const std::string job = "/apis/kubeflow.org/v1/namespaces/default/tfjobs/job-0";
  size_t bytes = 0;
  long rss_start = PeakResidentKib();
  double jobs_page =
      Measure(client, "jobs page (tfjobs + pods)", {"/apis/kubeflow.org/v1/tfjobs", "/api/v1/pods"},
              flags.rounds, &bytes);
  double job_page = Measure(
      client, "job page (job, replicas, events)",
      {job, job + "/replicas",
       "/api/v1/namespaces/default/events?fieldSelector=involvedObject.name%3Djob-0&limit=200"},
      flags.rounds, &bytes);
  double tail =
      Measure(client, "log tail (1000 lines, largest log)",
              {"/api/v1/namespaces/default/pods/job-0-worker-0/log?allRuns=true&tailLines=1000"},
              flags.rounds, &bytes);
  double scalars_first =
      Measure(client, "scalars (first read)", {job + "/scalars?tag=batch_loss"}, 1, &bytes);
  double scalars = Measure(client, "scalars (cached, 2000 of them)",
                           {job + "/scalars?tag=batch_loss"}, flags.rounds, &bytes);
  if (auto answer = client.Get(job + "/scalars?tag=batch_loss"); answer) {
    const size_t at = answer->body.find("\"totalPoints\":");
    const std::string total =
        at == std::string::npos
            ? "no"
            : answer->body.substr(
                  at + 14, answer->body.find_first_not_of("0123456789", at + 14) - (at + 14));
    std::printf("scalars: %s points in the series\n", total.c_str());
  }
  long rss_before_stream = PeakResidentKib();
  // The largest log, whole: streamed, so the peak memory should not grow by its size.
  uint64_t streamed = 0;
  auto stream_start = Stopwatch::now();
  auto response = client.Get("/api/v1/namespaces/default/pods/job-0-worker-0/log?allRuns=true",
                             [&](const char*, size_t length) {
                               streamed += length;
                               return true;
                             });
  double stream_seconds = std::chrono::duration<double>(Stopwatch::now() - stream_start).count();
  long rss_after_stream = PeakResidentKib();
  if (!response || response->status != 200) return Fail("streaming the log failed");
  std::printf("log streamed whole: %.0f MiB in %.2f s; peak RSS %ld -> %ld KiB (bench start %ld)\n",
              streamed / 1048576.0, stream_seconds, rss_before_stream, rss_after_stream, rss_start);
  (*server)->Stop();
  std::filesystem::remove_all(home);
  if (jobs_page < 0 || job_page < 0 || tail < 0 || scalars < 0 || scalars_first < 0) return 1;
  std::printf(
      "ui: jobs page %.1f ms, job page %.1f ms, log tail %.1f ms, scalars %.1f ms "
      "(first %.1f ms), peak RSS growth streaming the log %ld KiB\n",
      jobs_page, job_page, tail, scalars, scalars_first, rss_after_stream - rss_before_stream);
  return 0;
}
