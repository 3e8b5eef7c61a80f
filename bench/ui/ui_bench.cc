// bench/ui: how fast `cohort ui` serves its pages' data from a large $COHORT_HOME, and that its
// memory stays bounded while it streams large logs and answers large scalar requests.
//
//   ui_bench [--jobs 200] [--events 10000] [--log-mib 1024] [--points 1000000] [--rounds 20]
//            [--large-replicas 6] [--large-requests 20]
//
// Builds a scratch COHORT_HOME of `--jobs` finished 3-replica jobs (written through the JobStore,
// as a supervisor would), `--events` events spread over them (half on the first job, whose page
// is measured), `--log-mib` MiB of replica logs (half in one log), `--points` loss points in
// TensorBoard event files of one replica of job-0, and `--large-replicas` replicas of job-1 with
// `--points` records of two tags each; then serves it with the real DashboardServer on loopback
// and times, over `--rounds` rounds, what each page asks for:
//   jobs page   GET /apis/kubeflow.org/v1/tfjobs + GET /api/v1/pods
//   job page    the job, its replicas, its last 200 events (fieldSelector, limit), as the page
//   log tail    GET .../pods/POD/log?allRuns=true&tailLines=1000 of the largest log
//   scalars     GET .../scalars of job-0 (--points points): the first read (each round after its
//               event files were replaced by copies, so that nothing is cached) and cached
//   large       `--large-requests` GETs of job-1's scalars with max_points=1000000, a replica and
//               a tag at a time, round robin (the cache's budget is smaller than all of them)
// and the server's peak resident memory (it runs in a child process) before and after
// streaming the largest log whole, and after the first round of large requests and after all.
// Prints one line per figure (median and worst, ms), one "goal:" line per goal of the issue
// (PASS or FAIL) and a summary line "ui: ...".
#include <httplib.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "exec/job_store.h"
#include "exec/supervisor_lock.h"
#include "job/job_file.h"
#include "job/reconciler.h"
#include "train/summary/event_file_writer.h"
#include "ui/dashboard_server.h"
#include "view/local_job_client.h"

namespace {

using namespace cohort;
using Stopwatch = std::chrono::steady_clock;

struct Flags {
  int jobs = 200;
  int events = 10000;
  int log_mib = 1024;
  int64_t points = 1000000;
  int rounds = 20;
  int large_replicas = 6;
  int large_requests = 20;
};

constexpr double kGoalMs = 100;
// The peak memory may grow by this much over the requests after the first round of large ones
// (each answer is built and sent while the last one's pages may not be reused yet).
constexpr long kLargeGrowthSlackKib = 64 << 10;
// Streaming the largest log whole may raise the peak memory by this much at most.
constexpr long kStreamGrowthSlackKib = 16 << 10;

// A figure of /proc/PID/status in KiB: "VmHWM:" the peak resident memory, "VmRSS:" the current.
long StatusKib(pid_t pid, const std::string& field) {
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind(field, 0) == 0) return std::stol(line.substr(field.size()));
  }
  return -1;
}

// The dashboard in a child process of its own, so that the memory figures are the server's alone
// (the client holds each large answer too).
struct ServerProcess {
  pid_t pid = -1;
  int port = 0;

  long PeakResidentKib() const { return StatusKib(pid, "VmHWM:"); }
  long ResidentKib() const { return StatusKib(pid, "VmRSS:"); }
  void Stop() {
    if (pid <= 0) return;
    kill(pid, SIGTERM);
    waitpid(pid, nullptr, 0);
    pid = -1;
  }
};

// Forks the server (before this process starts any thread) and waits up to 60 s for its port.
StatusOr<ServerProcess> StartServerProcess(const ui::ServerOptions& options) {
  int ports[2];
  if (pipe(ports) != 0) return Status::IOError("pipe failed");
  ServerProcess process;
  process.pid = fork();
  if (process.pid < 0) return Status::IOError("fork failed");
  if (process.pid == 0) {
    close(ports[0]);
    // The jobs of `home`, read as `cohort ui` reads them (tidied at most every 2 s).
    view::LocalJobClient jobs(view::LocalJobClientOptions{options.home, std::chrono::seconds(2)});
    ui::ServerOptions served = options;
    served.jobs = &jobs;
    StatusOr<std::unique_ptr<ui::DashboardServer>> server = ui::DashboardServer::Start(served);
    int port = server.ok() ? (*server)->port() : -1;
    if (!server.ok()) std::fprintf(stderr, "ui_bench: %s\n", server.status().message().c_str());
    if (write(ports[1], &port, sizeof(port)) != sizeof(port) || port < 0) _exit(1);
    close(ports[1]);
    (*server)->Wait();  // until SIGTERM ends the process
    _exit(0);
  }
  close(ports[1]);
  pollfd ready{ports[0], POLLIN, 0};
  const bool answered = poll(&ready, 1, 60000) == 1 &&
                        read(ports[0], &process.port, sizeof(process.port)) ==
                            static_cast<ssize_t>(sizeof(process.port)) &&
                        process.port > 0;
  close(ports[0]);
  if (!answered) {
    process.Stop();
    return Status::Unavailable("the server process did not say its port within 60 s");
  }
  return process;
}

const char* Verdict(bool pass) { return pass ? "PASS" : "FAIL"; }

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
  // job-1's large replicas: `--points` records of two tags each, in files of 250,000 records.
  for (int replica = 0; replica < flags.large_replicas && flags.jobs > 1; ++replica) {
    std::filesystem::path large_run = store.JobDirectory({"default", "job-1"}) / "summaries" /
                                      ("worker-" + std::to_string(replica)) / "train";
    for (int64_t step = 0; step < flags.points;) {
      StatusOr<std::unique_ptr<train::EventFileWriter>> writer =
          train::EventFileWriter::Create(large_run.string());
      if (!writer.ok()) return writer.status();
      for (int64_t end = std::min<int64_t>(flags.points, step + 250000); step < end; ++step) {
        const float loss = 2.0f / (1 + step * 1e-4f);
        Status written =
            (*writer)->WriteScalars(step, {{"batch_loss", loss}, {"accuracy", 1 - loss / 4}});
        if (!written.ok()) return written;
      }
      if (Status flushed = (*writer)->Flush(); !flushed.ok()) return flushed;
    }
  }
  return Status::OK();
}

// Replaces every event file under `directory` by a copy of itself (a new inode), so that the
// server's cache reads it again from its start, as a first read.
Status ReplaceEventFiles(const std::filesystem::path& directory) {
  std::error_code error;
  for (auto it = std::filesystem::recursive_directory_iterator(directory, error);
       !error && it != std::filesystem::recursive_directory_iterator(); it.increment(error)) {
    if (!it->is_regular_file() ||
        it->path().filename().string().find("tfevents") == std::string::npos) {
      continue;
    }
    std::filesystem::path copy = it->path();
    copy += ".copy";
    std::filesystem::copy_file(it->path(), copy, std::filesystem::copy_options::overwrite_existing,
                               error);
    if (!error) std::filesystem::rename(copy, it->path(), error);
    if (error)
      return Status::IOError("cannot replace " + it->path().string() + ": " + error.message());
  }
  return error ? Status::IOError("cannot list " + directory.string() + ": " + error.message())
               : Status::OK();
}

// Times `requests` (all answered 200) over `rounds`; prints median and worst in ms.
// `before_round`, when given, runs untimed before each round.
double Measure(httplib::Client& client, const ServerProcess& server, const std::string& what,
               const std::vector<std::string>& requests, int rounds, size_t* bytes,
               const std::function<Status()>& before_round = nullptr) {
  std::vector<double> times;
  for (int round = 0; round < rounds; ++round) {
    if (before_round) {
      if (Status ready = before_round(); !ready.ok()) {
        std::fprintf(stderr, "ui_bench: %s\n", ready.message().c_str());
        return -1;
      }
    }
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
              what.c_str(), times[times.size() / 2], times.back(), *bytes,
              server.PeakResidentKib());
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
    else if (flag == "--large-replicas")
      flags.large_replicas = static_cast<int>(value);
    else if (flag == "--large-requests")
      flags.large_requests = static_cast<int>(value);
    else
      return Fail("unknown flag " + flag);
  }
  if (flags.jobs < 1 || flags.rounds < 1) return Fail("--jobs and --rounds must be at least 1");
  if (flags.large_replicas < 0 || flags.large_requests < 0 || flags.points < 0) {
    return Fail("--large-replicas, --large-requests and --points must not be negative");
  }
  char pattern[] = "/tmp/cohort-ui-bench-XXXXXX";
  if (mkdtemp(pattern) == nullptr) return Fail("mkdtemp failed");
  std::filesystem::path home = pattern;
  auto built_start = Stopwatch::now();
  if (Status built = BuildHome(home, flags); !built.ok()) return Fail(built.message());
  std::printf(
      "home: %d jobs, %d events, %d MiB of logs, %lld points, %d large replicas (built in %.1f "
      "s)\n",
      flags.jobs, flags.events, flags.log_mib, static_cast<long long>(flags.points),
      flags.large_replicas, std::chrono::duration<double>(Stopwatch::now() - built_start).count());
  ui::ServerOptions options;
  options.port = 0;
  options.home = home;
  StatusOr<ServerProcess> started = StartServerProcess(options);
  if (!started.ok()) return Fail(started.status().message());
  ServerProcess server = *started;
  struct StopOnReturn {
    ServerProcess& server;
    ~StopOnReturn() { server.Stop(); }
  } stop_on_return{server};
  httplib::Client client("127.0.0.1", server.port);
  client.set_read_timeout(120, 0);
  const std::string job = "/apis/kubeflow.org/v1/namespaces/default/tfjobs/job-0";
  size_t bytes = 0;
  long rss_start = server.PeakResidentKib();
  double jobs_page =
      Measure(client, server, "jobs page (tfjobs + pods)",
              {"/apis/kubeflow.org/v1/tfjobs", "/api/v1/pods"}, flags.rounds, &bytes);
  double job_page = Measure(
      client, server, "job page (job, replicas, events)",
      {job, job + "/replicas",
       "/api/v1/namespaces/default/events?fieldSelector=involvedObject.name%3Djob-0&limit=200"},
      flags.rounds, &bytes);
  double tail =
      Measure(client, server, "log tail (1000 lines, largest log)",
              {"/api/v1/namespaces/default/pods/job-0-worker-0/log?allRuns=true&tailLines=1000"},
              flags.rounds, &bytes);
  const std::filesystem::path job_summaries =
      exec::JobStore(home).JobDirectory({"default", "job-0"}) / "summaries";
  double scalars_first =
      Measure(client, server, "scalars (first read)", {job + "/scalars?tag=batch_loss"},
              std::min(flags.rounds, 5), &bytes, [&] { return ReplaceEventFiles(job_summaries); });
  double scalars = Measure(client, server, "scalars (cached, 2000 of them)",
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
  long rss_before_stream = server.PeakResidentKib();
  // The largest log, whole: streamed, so the peak memory should not grow by its size.
  uint64_t streamed = 0;
  auto stream_start = Stopwatch::now();
  auto response = client.Get("/api/v1/namespaces/default/pods/job-0-worker-0/log?allRuns=true",
                             [&](const char*, size_t length) {
                               streamed += length;
                               return true;
                             });
  double stream_seconds = std::chrono::duration<double>(Stopwatch::now() - stream_start).count();
  long rss_after_stream = server.PeakResidentKib();
  if (!response || response->status != 200) return Fail("streaming the log failed");
  std::printf("log streamed whole: %.0f MiB in %.2f s; peak RSS %ld -> %ld KiB (bench start %ld)\n",
              streamed / 1048576.0, stream_seconds, rss_before_stream, rss_after_stream, rss_start);
  // Large answers, a replica and a tag at a time: the first round touches each once.
  long rss_before_large = server.PeakResidentKib();
  long rss_after_first_large = rss_before_large;
  std::vector<double> large_times;
  const int large_series = flags.jobs > 1 ? flags.large_replicas * 2 : 0;
  const int large_requests = large_series > 0 ? flags.large_requests : 0;
  for (int request = 0; request < large_requests; ++request) {
    const int series = request % large_series;
    const std::string path = "/apis/kubeflow.org/v1/namespaces/default/tfjobs/job-1/scalars?" +
                             std::string("replica=worker-") + std::to_string(series / 2) +
                             "&tag=" + (series % 2 == 0 ? "batch_loss" : "accuracy") +
                             "&max_points=1000000";
    auto start = Stopwatch::now();
    auto answer = client.Get(path);
    large_times.push_back(
        std::chrono::duration<double, std::milli>(Stopwatch::now() - start).count());
    if (!answer || answer->status != 200) return Fail(path + " failed");
    bytes = answer->body.size();
    if (request + 1 == std::min(large_series, large_requests)) {
      rss_after_first_large = server.PeakResidentKib();
    }
  }
  long rss_after_large = server.PeakResidentKib();
  if (!large_times.empty()) {
    std::vector<double> sorted = large_times;
    std::sort(sorted.begin(), sorted.end());
    std::printf(
        "large scalars (%d x max_points=1000000, %d series of %lld points) median %8.1f ms  "
        "worst %8.1f ms  (last answer %zu bytes)\n",
        large_requests, large_series, static_cast<long long>(flags.points),
        sorted[sorted.size() / 2], sorted.back(), bytes);
    std::printf(
        "large scalars peak RSS: %ld KiB before, %ld KiB after the first %d, %ld KiB after all %d; "
        "RSS now %ld KiB\n",
        rss_before_large, rss_after_first_large, std::min(large_series, large_requests),
        rss_after_large, large_requests, server.ResidentKib());
  }
  server.Stop();
  std::filesystem::remove_all(home);
  if (jobs_page < 0 || job_page < 0 || tail < 0 || scalars < 0 || scalars_first < 0) return 1;
  const long stream_growth = rss_after_stream - rss_before_stream;
  const long large_growth = rss_after_large - rss_after_first_large;
  std::printf("goal: jobs page under %.0f ms: %.1f ms %s\n", kGoalMs, jobs_page,
              Verdict(jobs_page < kGoalMs));
  std::printf("goal: job page under %.0f ms: %.1f ms %s\n", kGoalMs, job_page,
              Verdict(job_page < kGoalMs));
  std::printf("goal: log tail under %.0f ms: %.1f ms %s\n", kGoalMs, tail, Verdict(tail < kGoalMs));
  std::printf("goal: scalars of %lld points, first read, under %.0f ms: %.1f ms %s\n",
              static_cast<long long>(flags.points), kGoalMs, scalars_first,
              Verdict(scalars_first < kGoalMs));
  std::printf("goal: scalars of %lld points, cached, under %.0f ms: %.1f ms %s\n",
              static_cast<long long>(flags.points), kGoalMs, scalars, Verdict(scalars < kGoalMs));
  std::printf("goal: memory bounded streaming the log: peak RSS growth %ld KiB (at most %ld) %s\n",
              stream_growth, kStreamGrowthSlackKib,
              Verdict(stream_growth <= kStreamGrowthSlackKib));
  if (large_requests > 0) {
    std::printf(
        "goal: memory bounded over %d large scalar answers: peak RSS growth after the first %d "
        "%ld KiB (at most %ld), peak %ld KiB %s\n",
        large_requests, std::min(large_series, large_requests), large_growth, kLargeGrowthSlackKib,
        rss_after_large, Verdict(large_growth <= kLargeGrowthSlackKib));
  }
  std::printf(
      "ui: jobs page %.1f ms, job page %.1f ms, log tail %.1f ms, scalars %.1f ms "
      "(first %.1f ms), peak RSS growth streaming the log %ld KiB, over large scalar answers "
      "%ld KiB (peak %ld KiB)\n",
      jobs_page, job_page, tail, scalars, scalars_first, stream_growth, large_growth,
      rss_after_large);
  return 0;
}
