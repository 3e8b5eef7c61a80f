// bench/operator: `cohort operator` against a real Kubernetes API server (etcd, kube-apiserver and
// kube-controller-manager on loopback, tests/testing/kube_test_cluster.h), the operator a child
// process exactly as deployed:
//
//   operator_bench [--jobs 1000] [--resyncs 3] [--rounds 10] [--resync-period-s 20] [--workers 1]
//   operator_bench --smoke   # 10 jobs, 1 resync, 1 round: seconds (ctest bench_operator_smoke)
//
//  (a) Creates --jobs TFJobs of 2 workers each with the API directly (8 client threads), lets the
//      operator create their pods and services and write their status, then measures full
//      resyncs: with --resync-period the operator queues every cached job again each period and
//      syncs it from its warm caches (as client-go's informer resync does for Kubeflow's operator),
//      logging "resync: N jobs queued" and "resync: N jobs synced in T ms". The operator's CPU
//      time for one resync is utime + stime from /proc/PID/stat, sampled every 5 ms: the last
//      sample before the first line arrived to the first sample after the second. The resync that
//      follows the set-up is left out (work left from the set-up may merge into it); the next
//      --resyncs are measured. Then its memory: VmRSS and VmHWM from /proc/PID/status.
//  (b) --rounds times: a watch on pods and one on services (each proven live by a probe object of
//      its own) are started, a TFJob of 8 workers is created (a POST, as `kubectl apply` makes),
//      and the time from just before the POST to the arrival of the 8th pod's (and service's)
//      ADDED event is taken. A round during which a periodic resync ran is left out and repeated.
//
// Prints each measurement, then the summary lines
//   operator: full resync of N TFJobs = X s CPU (goal < 1 s)
//   operator: RSS at N TFJobs = N MiB
//   operator: apply to 8 pods created = X ms median (goal < 200 ms)
// Exit status: 0 measured (goals are reported, not enforced), 1 an error, 77 the Kubernetes
// binaries are missing outside CI (scripts/build-kube-apiserver.sh builds them).
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "base/status.h"
#include "job/tfjob.h"
#include "kube/client/http_api.h"
#include "kube/client/kubeconfig.h"
#include "kube/objects/crd.h"
#include "kube/objects/objects.h"
#include "testing/host.h"
#include "testing/kube_test_cluster.h"
#include "testing/wait.h"

namespace {

using namespace std::chrono_literals;
using cohort::Status;
using cohort::StatusOr;
using SteadyTime = std::chrono::steady_clock::time_point;
namespace kube = cohort::kube;
namespace fs = std::filesystem;

constexpr const char* kNamespace = "bench";
constexpr const char* kJobNameLabel = "training.kubeflow.org/job-name";
constexpr int kApplyReplicas = 8;

struct Flags {
  int jobs = 1000;
  int resyncs = 3;
  int rounds = 10;
  int resync_period_s = 20;
  int workers = 1;
};

SteadyTime Now() { return std::chrono::steady_clock::now(); }

double Milliseconds(std::chrono::steady_clock::duration duration) {
  return std::chrono::duration<double, std::milli>(duration).count();
}

struct Spread {
  double min = 0, median = 0, max = 0;
};

Spread SpreadOf(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return {values.front(), values[values.size() / 2], values.back()};
}

kube::Resource CrdResource() {
  return {"apiextensions.k8s.io", "v1", "customresourcedefinitions", "CustomResourceDefinition",
          false};
}

// The 1.20 server knows no CEL rules (x-kubernetes-validations): they are removed everywhere.
void StripCelRules(nlohmann::json& schema) {
  if (schema.is_object()) {
    schema.erase("x-kubernetes-validations");
    for (auto& [key, value] : schema.items()) StripCelRules(value);
  } else if (schema.is_array()) {
    for (nlohmann::json& value : schema) StripCelRules(value);
  }
}

bool HasCondition(const nlohmann::json& object, const std::string& type) {
  if (!object.contains("status") || !object["status"].is_object()) return false;
  for (const nlohmann::json& condition :
       object["status"].value("conditions", nlohmann::json::array())) {
    if (condition.value("type", "") == type && condition.value("status", "") == "True") return true;
  }
  return false;
}

// `cohort crd`'s CustomResourceDefinition, created and Established (60 s at most).
Status InstallCrd(kube::Api& api) {
  nlohmann::json crd = kube::CustomResourceDefinition(cohort::job::TFJobKind());
  StripCelRules(crd);
  StatusOr<nlohmann::json> created = api.Create(CrdResource(), "", crd);
  if (!created.ok()) return created.status();
  const std::string name = crd["metadata"].value("name", "");
  bool established = cohort::testing::WaitUntil(
      [&] {
        StatusOr<nlohmann::json> current = api.Get(CrdResource(), "", name);
        return current.ok() && HasCondition(*current, "Established");
      },
      60s, 50ms);
  if (!established) return Status::DeadlineExceeded("CRD " + name + " not Established in 60 s");
  return Status::OK();
}

nlohmann::json TFJob(const std::string& name, int workers) {
  return {{"apiVersion", "kubeflow.org/v1"},
          {"kind", "TFJob"},
          {"metadata", {{"name", name}}},
          {"spec",
           {{"tfReplicaSpecs",
             {{"Worker",
               {{"replicas", workers},
                {"template",
                 {{"spec",
                   {{"automountServiceAccountToken", false},
                    {"containers",
                     {{{"name", "tensorflow"}, {"image", "cohort-bench/none"}}}}}}}}}}}}}}};
}

// Creates `count` TFJobs named job-0... with `threads` clients at once.
Status CreateJobs(kube::Api& api, int count, int threads) {
  std::atomic<int> next{0};
  std::mutex mutex;
  Status first_error = Status::OK();
  std::vector<std::thread> clients;
  for (int t = 0; t < threads; ++t) {
    clients.emplace_back([&] {
      for (int i = next.fetch_add(1); i < count; i = next.fetch_add(1)) {
        StatusOr<nlohmann::json> created =
            api.Create(kube::JobResource(cohort::job::TFJobKind()), kNamespace,
                       TFJob("job-" + std::to_string(i), 2));
        if (!created.ok()) {
          std::lock_guard<std::mutex> lock(mutex);
          if (first_error.ok()) first_error = created.status();
        }
      }
    });
  }
  for (std::thread& client : clients) client.join();
  return first_error;
}

// The operator: `cohort operator` as a child, its standard error read line by line (each stamped
// with its arrival) and its CPU time sampled every 5 ms.
class OperatorProcess {
 public:
  struct Line {
    SteadyTime arrived;
    std::string text;
  };

  ~OperatorProcess() { Stop(); }

  Status Start(const std::vector<std::string>& argv) {
    int pipe_fds[2];
    if (pipe(pipe_fds) != 0) return Status::Internal("pipe failed");
    pid_ = fork();
    if (pid_ < 0) return Status::Internal("fork failed");
    if (pid_ == 0) {
      prctl(PR_SET_PDEATHSIG, SIGKILL);
      dup2(pipe_fds[1], STDERR_FILENO);
      close(pipe_fds[0]);
      close(pipe_fds[1]);
      std::vector<char*> args;
      for (const std::string& arg : argv) args.push_back(const_cast<char*>(arg.c_str()));
      args.push_back(nullptr);
      execv(args[0], args.data());
      std::perror("execv");
      _exit(127);
    }
    close(pipe_fds[1]);
    reader_ = std::thread([this, fd = pipe_fds[0]] { ReadLines(fd); });
    sampler_ = std::thread([this] { SampleCpu(); });
    return Status::OK();
  }

  void Stop() {
    if (pid_ > 0) {
      kill(pid_, SIGTERM);
      bool ended = cohort::testing::WaitUntil(
          [&] { return waitpid(pid_, nullptr, WNOHANG) == pid_; }, 20s, 20ms);
      if (!ended) {
        kill(pid_, SIGKILL);
        waitpid(pid_, nullptr, 0);
      }
      pid_ = -1;
    }
    stopping_.store(true);
    if (sampler_.joinable()) sampler_.join();
    if (reader_.joinable()) reader_.join();  // the pipe closed with the process
  }

  pid_t pid() const { return pid_; }

  std::vector<Line> Lines() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return lines_;
  }

  std::string LastLines(size_t count) const {
    std::vector<Line> lines = Lines();
    std::string text;
    for (size_t i = lines.size() > count ? lines.size() - count : 0; i < lines.size(); ++i) {
      text += "  " + lines[i].text + "\n";
    }
    return text;
  }

  // CPU seconds from the last sample before `begin` to the first sample after `end`; nullopt when
  // there is no such sample yet.
  std::optional<double> CpuSeconds(SteadyTime begin, SteadyTime end) const {
    std::lock_guard<std::mutex> lock(mutex_);
    std::optional<long> before, after;
    for (const auto& [time, ticks] : samples_) {
      if (time < begin) before = ticks;
      if (time > end) {
        after = ticks;
        break;
      }
    }
    if (!before || !after) return std::nullopt;
    return static_cast<double>(*after - *before) / static_cast<double>(sysconf(_SC_CLK_TCK));
  }

  // VmRSS or VmHWM from /proc/PID/status, in MiB.
  double MemoryMiB(const std::string& field) const {
    std::ifstream status("/proc/" + std::to_string(pid_) + "/status");
    std::string line;
    while (std::getline(status, line)) {
      if (line.rfind(field + ":", 0) == 0) return std::atof(line.c_str() + field.size() + 1) / 1024;
    }
    return 0;
  }

 private:
  void ReadLines(int fd) {
    FILE* stream = fdopen(fd, "r");
    char* buffer = nullptr;
    size_t capacity = 0;
    while (getline(&buffer, &capacity, stream) > 0) {
      std::string text(buffer);
      while (!text.empty() && text.back() == '\n') text.pop_back();
      std::lock_guard<std::mutex> lock(mutex_);
      lines_.push_back({Now(), std::move(text)});
    }
    std::free(buffer);
    std::fclose(stream);
  }

  // utime + stime of the whole process (every thread, live or ended), in clock ticks.
  std::optional<long> CpuTicks() const {
    std::ifstream stat("/proc/" + std::to_string(pid_) + "/stat");
    std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
    const size_t paren = text.rfind(')');
    if (paren == std::string::npos) return std::nullopt;
    std::istringstream fields(text.substr(paren + 2));
    std::vector<std::string> tokens;
    for (std::string token; fields >> token && tokens.size() < 13;) tokens.push_back(token);
    if (tokens.size() < 13) return std::nullopt;
    return std::atol(tokens[11].c_str()) + std::atol(tokens[12].c_str());  // fields 14 and 15
  }

  void SampleCpu() {
    while (!stopping_.load()) {
      const SteadyTime time = Now();
      if (std::optional<long> ticks = CpuTicks()) {
        std::lock_guard<std::mutex> lock(mutex_);
        samples_.emplace_back(time, *ticks);
      }
      std::this_thread::sleep_for(5ms);
    }
  }

  pid_t pid_ = -1;
  std::thread reader_;
  std::thread sampler_;
  std::atomic<bool> stopping_{false};
  mutable std::mutex mutex_;
  std::vector<Line> lines_;
  std::vector<std::pair<SteadyTime, long>> samples_;
};

// Waits until every job has its Created condition and 2 pods and services exist per job.
Status WaitForJobsCreated(kube::Api& api, int jobs, std::chrono::seconds bound) {
  const kube::Selector owned{"training.kubeflow.org/operator-name=tfjob-controller", ""};
  std::string last;
  bool done = cohort::testing::WaitUntil(
      [&] {
        StatusOr<kube::ObjectList> pods = api.List(kube::PodResource(), kNamespace, owned);
        StatusOr<kube::ObjectList> services = api.List(kube::ServiceResource(), kNamespace, owned);
        StatusOr<kube::ObjectList> tfjobs =
            api.List(kube::JobResource(cohort::job::TFJobKind()), kNamespace);
        if (!pods.ok() || !services.ok() || !tfjobs.ok()) return false;
        int created = 0;
        for (const nlohmann::json& job : tfjobs->items) created += HasCondition(job, "Created");
        last = std::to_string(pods->items.size()) + " pods, " +
               std::to_string(services->items.size()) + " services, " + std::to_string(created) +
               " jobs Created";
        return static_cast<int>(pods->items.size()) == 2 * jobs &&
               static_cast<int>(services->items.size()) == 2 * jobs && created == jobs;
      },
      std::chrono::duration_cast<std::chrono::milliseconds>(bound), 1000ms);
  if (!done) {
    return Status::DeadlineExceeded("the operator did not create the pods and services of " +
                                    std::to_string(jobs) + " jobs in " +
                                    std::to_string(bound.count()) + " s (" + last + ")");
  }
  return Status::OK();
}

struct Resync {
  SteadyTime queued, synced;
  double reported_ms = 0;  // the operator's own "synced in T ms"
};

// The next resync whose "queued" line arrives after `after`, once its "synced" line has arrived.
StatusOr<Resync> NextResync(const OperatorProcess& op, SteadyTime after,
                            std::chrono::seconds bound) {
  std::optional<Resync> found;
  std::string error;
  bool done = cohort::testing::WaitUntil(
      [&] {
        std::optional<SteadyTime> queued;
        for (const OperatorProcess::Line& line : op.Lines()) {
          if (line.arrived <= after) continue;
          if (line.text.find("resync: ") == std::string::npos) continue;
          const bool is_queued = line.text.find(" jobs queued") != std::string::npos;
          const size_t in = line.text.find(" synced in ");
          if (is_queued && queued) {
            error = "a resync began before the last one ended: the period is too short";
            return true;
          }
          if (is_queued) queued = line.arrived;
          if (in != std::string::npos && queued) {
            found = Resync{*queued, line.arrived, std::atof(line.text.c_str() + in + 11)};
            return true;
          }
        }
        return false;
      },
      std::chrono::duration_cast<std::chrono::milliseconds>(bound), 20ms);
  if (!error.empty()) return Status::FailedPrecondition(error);
  if (!done || !found) {
    return Status::DeadlineExceeded("no whole resync within " + std::to_string(bound.count()) +
                                    " s");
  }
  return *found;
}

// Watches `resource` in the bench namespace for objects labelled with `job`; the probe object
// (created by the caller, labelled the same) proves the watch is live.
class CreationWatch {
 public:
  CreationWatch(kube::Api& api, kube::Resource resource, std::string job, std::string probe)
      : api_(api), resource_(std::move(resource)), job_(std::move(job)), probe_(std::move(probe)) {
    thread_ = std::thread([this] { Run(); });
  }
  ~CreationWatch() {
    stop_.store(true);
    thread_.join();
  }

  bool ProbeSeen() const { return probe_seen_.load(); }
  // When the `count`th object other than the probe arrived.
  std::optional<SteadyTime> Arrival(int count) const {
    std::lock_guard<std::mutex> lock(mutex_);
    if (static_cast<int>(arrivals_.size()) < count) return std::nullopt;
    return arrivals_[count - 1];
  }
  Status status() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return status_;
  }

 private:
  void Run() {
    Status watched =
        api_.Watch(resource_, kNamespace, {std::string(kJobNameLabel) + "=" + job_, ""}, "", 120s,
                   [&](const kube::WatchEvent& event) {
                     if (event.type == kube::WatchEvent::Type::kAdded) {
                       const std::string name = event.object["metadata"].value("name", "");
                       if (name == probe_) {
                         probe_seen_.store(true);
                       } else {
                         std::lock_guard<std::mutex> lock(mutex_);
                         arrivals_.push_back(Now());
                       }
                     }
                     std::lock_guard<std::mutex> lock(mutex_);
                     return !stop_.load() && static_cast<int>(arrivals_.size()) < kApplyReplicas;
                   });
    std::lock_guard<std::mutex> lock(mutex_);
    status_ = watched;
  }

  kube::Api& api_;
  const kube::Resource resource_;
  const std::string job_, probe_;
  std::atomic<bool> stop_{false}, probe_seen_{false};
  mutable std::mutex mutex_;
  std::vector<SteadyTime> arrivals_;
  Status status_ = Status::OK();
  std::thread thread_;
};

struct ApplyRound {
  double pods_ms = 0, services_ms = 0;
};

// One round of (b): nullopt when a resync ran meanwhile (the round is repeated).
StatusOr<std::optional<ApplyRound>> MeasureApply(kube::Api& api, const OperatorProcess& op,
                                                 int round) {
  const std::string job = "apply-" + std::to_string(round);
  const std::string probe = job + "-probe";
  const nlohmann::json labels = {{kJobNameLabel, job}};
  const SteadyTime round_start = Now();
  CreationWatch pods(api, kube::PodResource(), job, probe);
  CreationWatch services(api, kube::ServiceResource(), job, probe);
  nlohmann::json probe_pod = {
      {"apiVersion", "v1"},
      {"kind", "Pod"},
      {"metadata", {{"name", probe}, {"labels", labels}}},
      {"spec",
       {{"automountServiceAccountToken", false},
        {"containers", {{{"name", "probe"}, {"image", "cohort-bench/none"}}}}}}};
  nlohmann::json probe_service = {{"apiVersion", "v1"},
                                  {"kind", "Service"},
                                  {"metadata", {{"name", probe}, {"labels", labels}}},
                                  {"spec", {{"clusterIP", "None"}, {"ports", {{{"port", 1}}}}}}};
  // A watch from no resourceVersion starts with an ADDED event for each object that exists, so
  // the probe's event arrives whether it was created before or after the watch began.
  if (StatusOr<nlohmann::json> made = api.Create(kube::PodResource(), kNamespace, probe_pod);
      !made.ok()) {
    return made.status();
  }
  if (StatusOr<nlohmann::json> made =
          api.Create(kube::ServiceResource(), kNamespace, probe_service);
      !made.ok()) {
    return made.status();
  }
  bool live = cohort::testing::WaitUntil([&] { return pods.ProbeSeen() && services.ProbeSeen(); },
                                         30s, 1ms);
  if (!live) return Status::DeadlineExceeded("the watches of round " + job + " saw no probe");

  const SteadyTime posted = Now();
  StatusOr<nlohmann::json> created = api.Create(kube::JobResource(cohort::job::TFJobKind()),
                                                kNamespace, TFJob(job, kApplyReplicas));
  if (!created.ok()) return created.status();
  bool all = cohort::testing::WaitUntil(
      [&] { return pods.Arrival(kApplyReplicas) && services.Arrival(kApplyReplicas); }, 60s, 1ms);
  if (!all) {
    return Status::DeadlineExceeded(
        "the 8 pods and services of " + job +
        " did not all arrive in 60 s; pod watch: " + pods.status().ToString());
  }
  ApplyRound measured{Milliseconds(*pods.Arrival(kApplyReplicas) - posted),
                      Milliseconds(*services.Arrival(kApplyReplicas) - posted)};
  // The operator's pass ends with the status write: wait for it, so rounds do not overlap.
  bool written = cohort::testing::WaitUntil(
      [&] {
        StatusOr<nlohmann::json> current =
            api.Get(kube::JobResource(cohort::job::TFJobKind()), kNamespace, job);
        return current.ok() && HasCondition(*current, "Created");
      },
      60s, 5ms);
  if (!written) return Status::DeadlineExceeded(job + " not Created within 60 s");
  const SteadyTime round_end = Now();
  for (const OperatorProcess::Line& line : op.Lines()) {
    if (line.arrived >= round_start && line.arrived <= round_end &&
        line.text.find("resync: ") != std::string::npos) {
      return std::optional<ApplyRound>();
    }
  }
  return std::optional<ApplyRound>(measured);
}

int Run(const Flags& flags) {
  auto fail = [](const std::string& what, const Status& status) {
    std::fprintf(stderr, "operator_bench: %s: %s\n", what.c_str(), status.ToString().c_str());
    return 1;
  };
  StatusOr<cohort::testing::KubeBinaries> binaries = cohort::testing::FindKubeBinaries();
  if (!binaries.ok()) {
    if (binaries.status().code() == Status::Code::kNotFound && !cohort::testing::RunningInCi()) {
      std::printf("operator_bench: skipped: %s\n", binaries.status().ToString().c_str());
      return 77;
    }
    return fail("Kubernetes binaries", binaries.status());
  }
  const SteadyTime cluster_start = Now();
  StatusOr<std::unique_ptr<cohort::testing::KubeTestCluster>> cluster =
      cohort::testing::KubeTestCluster::Start(*binaries, 180s);
  if (!cluster.ok()) return fail("control plane", cluster.status());
  std::printf("# control plane (etcd, kube-apiserver, kube-controller-manager) up in %.1f s\n",
              Milliseconds(Now() - cluster_start) / 1000);
  StatusOr<kube::ConnectionConfig> config =
      kube::LoadKubeconfig({(*cluster)->admin_kubeconfig()}, "");
  if (!config.ok()) return fail("kubeconfig", config.status());
  kube::HttpApi api(*config, kube::HttpApiOptions{});
  if (Status installed = InstallCrd(api); !installed.ok()) return fail("CRD", installed);
  if (Status created = (*cluster)->CreateNamespace(kNamespace); !created.ok()) {
    return fail("namespace", created);
  }

  const fs::path self = fs::canonical("/proc/self/exe").parent_path();
  const std::string cohort = (self / ".." / ".." / "apps" / "cohort" / "cohort").lexically_normal();
  OperatorProcess op;
  Status started =
      op.Start({cohort, "operator", "--kubeconfig", (*cluster)->admin_kubeconfig().string(),
                "--namespace", kNamespace, "--workers", std::to_string(flags.workers),
                "--resync-period", std::to_string(flags.resync_period_s)});
  if (!started.ok()) return fail("cohort operator", started);
  auto fail_with_log = [&](const std::string& what, const Status& status) {
    fail(what, status);
    std::fprintf(stderr, "the operator's last lines:\n%s", op.LastLines(20).c_str());
    return 1;
  };

  // (a) N jobs, then full resyncs.
  const SteadyTime create_start = Now();
  if (Status created = CreateJobs(api, flags.jobs, 8); !created.ok()) {
    return fail_with_log("creating TFJobs", created);
  }
  const double create_s = Milliseconds(Now() - create_start) / 1000;
  const auto settle_bound = std::chrono::seconds(120 + flags.jobs / 2);
  if (Status settled = WaitForJobsCreated(api, flags.jobs, settle_bound); !settled.ok()) {
    return fail_with_log("set-up", settled);
  }
  std::printf(
      "# %d TFJobs created in %.1f s (8 clients); their %d pods and services created by "
      "the operator %.1f s after the first\n",
      flags.jobs, create_s, 2 * flags.jobs, Milliseconds(Now() - create_start) / 1000);
  const auto resync_bound = std::chrono::seconds(3 * flags.resync_period_s + 120);
  StatusOr<Resync> warm_up = NextResync(op, Now(), resync_bound);
  if (!warm_up.ok()) return fail_with_log("first resync", warm_up.status());
  std::vector<double> cpu_seconds;
  SteadyTime after = warm_up->synced;
  for (int i = 0; i < flags.resyncs; ++i) {
    StatusOr<Resync> resync = NextResync(op, after, resync_bound);
    if (!resync.ok()) return fail_with_log("resync", resync.status());
    std::optional<double> cpu;
    cohort::testing::WaitUntil(
        [&] { return (cpu = op.CpuSeconds(resync->queued, resync->synced)).has_value(); }, 5s, 5ms);
    if (!cpu) return fail_with_log("resync", Status::Internal("no CPU sample after the resync"));
    std::printf("resync %d: %d jobs, %.3f s CPU, %.0f ms wall (the operator's own figure)\n", i + 1,
                flags.jobs, *cpu, resync->reported_ms);
    cpu_seconds.push_back(*cpu);
    after = resync->synced;
  }
  const double rss = op.MemoryMiB("VmRSS"), hwm = op.MemoryMiB("VmHWM");
  std::printf("memory at %d TFJobs (%d pods, %d services cached): VmRSS %.1f MiB, VmHWM %.1f MiB\n",
              flags.jobs, 2 * flags.jobs, 2 * flags.jobs, rss, hwm);

  // (b) apply -> 8 pods.
  std::vector<double> pods_ms, services_ms;
  int attempts = 0;
  for (int round = 0; static_cast<int>(pods_ms.size()) < flags.rounds; ++round) {
    if (++attempts > 5 * flags.rounds) {
      return fail_with_log("apply rounds",
                           Status::DeadlineExceeded("a resync overlapped too many rounds"));
    }
    StatusOr<std::optional<ApplyRound>> measured = MeasureApply(api, op, round);
    if (!measured.ok()) return fail_with_log("apply round", measured.status());
    if (!measured->has_value()) {
      std::printf("apply round %d: a resync ran meanwhile, left out\n", round + 1);
      continue;
    }
    std::printf("apply round %d: 8 pods in %.1f ms, 8 services in %.1f ms\n", round + 1,
                (*measured)->pods_ms, (*measured)->services_ms);
    pods_ms.push_back((*measured)->pods_ms);
    services_ms.push_back((*measured)->services_ms);
  }
  op.Stop();

  const Spread cpu = SpreadOf(cpu_seconds), pods = SpreadOf(pods_ms),
               services = SpreadOf(services_ms);
  std::printf("# full resync CPU over %d resyncs: min %.3f s, median %.3f s, max %.3f s\n",
              flags.resyncs, cpu.min, cpu.median, cpu.max);
  std::printf(
      "# apply -> 8 pods over %d rounds: min %.1f ms, median %.1f ms, max %.1f ms; "
      "-> 8 services: min %.1f, median %.1f, max %.1f ms\n",
      flags.rounds, pods.min, pods.median, pods.max, services.min, services.median, services.max);
  std::printf("operator: full resync of %d TFJobs = %.3f s CPU (goal < 1 s)\n", flags.jobs,
              cpu.median);
  std::printf("operator: RSS at %d TFJobs = %.1f MiB\n", flags.jobs, rss);
  std::printf("operator: apply to 8 pods created = %.1f ms median (goal < 200 ms)\n", pods.median);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  setvbuf(stdout, nullptr, _IOLBF, 0);  // each figure as it is measured, also into a file
  Flags flags;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (flag == "--smoke") {
      flags.jobs = 10;
      flags.resyncs = 1;
      flags.rounds = 1;
      flags.resync_period_s = 2;
      continue;
    }
    if (i + 1 >= argc) {
      std::fprintf(stderr, "operator_bench: %s needs a value\n", flag.c_str());
      return 2;
    }
    const int value = std::atoi(argv[++i]);
    int* target = flag == "--jobs"              ? &flags.jobs
                  : flag == "--resyncs"         ? &flags.resyncs
                  : flag == "--rounds"          ? &flags.rounds
                  : flag == "--resync-period-s" ? &flags.resync_period_s
                  : flag == "--workers"         ? &flags.workers
                                                : nullptr;
    if (target == nullptr) {
      std::fprintf(stderr, "operator_bench: unknown flag %s\n", flag.c_str());
      return 2;
    }
    if (value < 1 || value > 100000) {
      std::fprintf(stderr, "operator_bench: %s %s: must be from 1 to 100000\n", flag.c_str(),
                   argv[i]);
      return 2;
    }
    *target = value;
  }
  return Run(flags);
}
