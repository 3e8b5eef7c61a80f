// allreduce_bench: Cohort's all-reduce against Gloo, side by side, on loopback.
//
// For each rank count, the benchmark forks that many processes. Each process connects three
// meshes: Cohort with its default algorithms (the same-host path where the kernel allows it),
// Cohort restricted to TCP (the ring), and Gloo's TCP transport running AllreduceRingChunked.
// For each size, every library sums a float32 buffer of that size in place (each its own buffer,
// same contents), in rotating order, for several rounds; the per-operation time is the slowest
// rank's average over a block of iterations, and the reported time is the median over rounds.
// Bandwidths follow NCCL-tests: algbw = size / time, busbw = algbw * 2(n-1)/n. The single-stream
// loopback TCP throughput, measured first in the same run between 64 MiB buffers (and, for
// reference, between buffers that stay in cache), is the ceiling; for the 64 MiB, 2-rank goal it
// is measured again in turn with that all-reduce (CheckAgainstTheCeiling).
//
//   allreduce_bench [--ranks=2,4] [--min-bytes=4096] [--max-bytes=268435456] [--factor=4]
//                   [--min-time=0.25] [--rounds=3] [--segment-bytes=N] [--receive-slots=N]
//                   [--same-host-min-bytes=N]
//
// The last line is the summary: allreduce: min busbw ratio vs gloo (>= 1 MiB) = X.XX
#include <poll.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "collective/communicator.h"
#include "collective/reduction.h"
#include "net/socket.h"
#include "net/transport.h"
#include "tcp_ceiling.h"

#ifdef COHORT_HAVE_GLOO
#include <gloo/allreduce_ring_chunked.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/file_store.h>
#include <gloo/transport/tcp/device.h>
#endif

namespace cohort::bench {
namespace {

using Clock = std::chrono::steady_clock;
using collective::Communicator;
using collective::DataType;
using collective::ReduceOp;

struct Options {
  std::vector<int> ranks = {2, 4};
  size_t min_bytes = 4096;
  size_t max_bytes = 256u << 20;
  size_t factor = 4;
  double min_time = 0.25;
  int rounds = 3;
  collective::RingTuning ring;  // Cohort's defaults unless overridden
  size_t same_host_min_bytes = collective::CommunicatorOptions().same_host_min_bytes;
};

Options ParseOptions(int argc, char** argv) {
  Options options;
  for (int i = 1; i < argc; ++i) {
    std::string argument = argv[i];
    auto value = [&](const char* name) -> const char* {
      size_t length = std::strlen(name);
      return argument.compare(0, length, name) == 0 ? argument.c_str() + length : nullptr;
    };
    if (const char* v = value("--ranks=")) {
      options.ranks.clear();
      std::stringstream list(v);
      std::string item;
      while (std::getline(list, item, ',')) options.ranks.push_back(std::stoi(item));
    } else if (const char* v = value("--min-bytes=")) {
      options.min_bytes = std::stoull(v);
    } else if (const char* v = value("--max-bytes=")) {
      options.max_bytes = std::stoull(v);
    } else if (const char* v = value("--factor=")) {
      options.factor = std::max<size_t>(2, std::stoull(v));
    } else if (const char* v = value("--min-time=")) {
      options.min_time = std::stod(v);
    } else if (const char* v = value("--rounds=")) {
      options.rounds = std::max(1, std::stoi(v));
    } else if (const char* v = value("--segment-bytes=")) {
      options.ring.segment_bytes = std::stoull(v);
    } else if (const char* v = value("--receive-slots=")) {
      options.ring.receive_slots = std::stoi(v);
    } else if (const char* v = value("--same-host-min-bytes=")) {
      options.same_host_min_bytes = std::stoull(v);
    } else {
      std::fprintf(stderr, "unknown argument %s\n", argv[i]);
      std::exit(2);
    }
  }
  return options;
}

std::string FormatBytes(size_t bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB"};
  int unit = 0;
  double value = static_cast<double>(bytes);
  while (value >= 1024 && unit < 3) {
    value /= 1024;
    ++unit;
  }
  char text[32];
  std::snprintf(text, sizeof(text), "%g %s", value, units[unit]);
  return text;
}

// ---- One rank of one rank count ----

struct Mesh {
  cluster::ClusterSpec spec;
  std::vector<int> listeners;
};

Mesh MakeMesh(int ranks) {
  Mesh mesh;
  for (int rank = 0; rank < ranks; ++rank) {
    auto listener = net::ListenTcp("127.0.0.1", 0, 128);
    if (!listener.ok()) {
      std::fprintf(stderr, "%s\n", listener.status().ToString().c_str());
      std::exit(1);
    }
    mesh.spec.jobs["worker"].push_back("127.0.0.1:" +
                                       std::to_string(*net::LocalPort(listener->fd())));
    mesh.listeners.push_back(listener->Release());
  }
  return mesh;
}

std::unique_ptr<Communicator> Connect(Mesh& mesh, int rank, bool same_host,
                                      const Options& bench_options) {
  net::TransportOptions options;
  options.job_name = "allreduce-bench";
  options.secret = "allreduce-bench secret";
  options.listening_fd = mesh.listeners[rank];
  options.log_warning = [](const std::string& message) {
    std::fprintf(stderr, "warning: %s\n", message.c_str());
  };
  for (size_t i = 0; i < mesh.listeners.size(); ++i) {
    if (static_cast<int>(i) != rank) close(mesh.listeners[i]);
  }
  auto transport = net::Transport::Connect(mesh.spec, {"worker", rank}, options);
  if (!transport.ok()) {
    std::fprintf(stderr, "rank %d: %s\n", rank, transport.status().ToString().c_str());
    std::exit(1);
  }
  collective::CommunicatorOptions communicator_options;
  communicator_options.same_host_memory = same_host;
  communicator_options.ring = bench_options.ring;
  communicator_options.same_host_min_bytes = bench_options.same_host_min_bytes;
  auto communicator = Communicator::Create(std::move(*transport), communicator_options);
  if (!communicator.ok()) {
    std::fprintf(stderr, "rank %d: %s\n", rank, communicator.status().ToString().c_str());
    std::exit(1);
  }
  return std::move(*communicator);
}

void Check(const Status& status, const char* what) {
  if (!status.ok()) {
    std::fprintf(stderr, "%s: %s\n", what, status.ToString().c_str());
    std::exit(1);
  }
}

// The libraries compared, in column order.
enum Library { kCohort = 0, kCohortTcp = 1, kGloo = 2, kLibraries = 3 };
const char* kLibraryNames[] = {"cohort", "cohort-tcp", "gloo"};

int RunRank(int rank, int ranks, Mesh& default_mesh, Mesh& tcp_mesh, const std::string& gloo_dir,
            const Options& options, int report_fd) {
  std::unique_ptr<Communicator> cohort = Connect(default_mesh, rank, true, options);
  std::unique_ptr<Communicator> cohort_tcp = Connect(tcp_mesh, rank, false, options);
  auto report = [&](const std::string& line) {
    if (rank != 0) return;
    std::string text = line + "\n";
    [[maybe_unused]] ssize_t ignored = write(report_fd, text.data(), text.size());
  };
#ifdef COHORT_HAVE_GLOO
  auto store = std::make_shared<gloo::rendezvous::FileStore>(gloo_dir);
  auto device = gloo::transport::tcp::CreateDevice("127.0.0.1");
  auto gloo_context = std::make_shared<gloo::rendezvous::Context>(rank, ranks);
  gloo_context->setTimeout(std::chrono::seconds(600));
  gloo_context->connectFullMesh(*store, device);
  const bool have_gloo = true;
#else
  const bool have_gloo = false;
#endif
  if (rank == 0) {
    report("# " + std::to_string(ranks) + " ranks; cohort uses " +
           (cohort->uses_same_host_memory() ? "the same-host path (cross-memory attach) from " +
                                                  FormatBytes(options.same_host_min_bytes) + " up"
                                            : "TCP only (cross-memory attach unavailable)") +
           "; reduction kernels: " + collective::ReductionKernelName());
  }

  const size_t max_count = options.max_bytes / sizeof(float);
  std::vector<float> buffers[kLibraries];
  for (auto& buffer : buffers) buffer.assign(max_count, 0.0f);

  for (size_t bytes = options.min_bytes; bytes <= options.max_bytes; bytes *= options.factor) {
    const size_t count = bytes / sizeof(float);
#ifdef COHORT_HAVE_GLOO
    gloo::AllreduceRingChunked<float> gloo_allreduce(gloo_context, {buffers[kGloo].data()},
                                                     static_cast<int>(count));
#endif
    auto run_once = [&](int library) {
      switch (library) {
        case kCohort:
          Check(
              cohort->AllReduce(buffers[kCohort].data(), count, DataType::kFloat32, ReduceOp::kSum),
              "cohort all-reduce");
          break;
        case kCohortTcp:
          Check(cohort_tcp->AllReduce(buffers[kCohortTcp].data(), count, DataType::kFloat32,
                                      ReduceOp::kSum),
                "cohort (tcp) all-reduce");
          break;
        case kGloo:
#ifdef COHORT_HAVE_GLOO
          gloo_allreduce.run();
#endif
          break;
      }
    };
    const int libraries = have_gloo ? kLibraries : kGloo;

    // Correctness first: every library must produce 1 + 2 + ... + n.
    const float expected = static_cast<float>(ranks * (ranks + 1) / 2);
    for (int library = 0; library < libraries; ++library) {
      std::fill_n(buffers[library].data(), count, static_cast<float>(rank + 1));
      run_once(library);
      for (size_t i = 0; i < count; i += 97) {
        if (buffers[library][i] != expected) {
          std::fprintf(stderr, "%s: wrong sum %g at %zu (expected %g)\n", kLibraryNames[library],
                       buffers[library][i], i, expected);
          return 1;
        }
      }
      std::fill_n(buffers[library].data(), count, 0.0f);  // sums of zeros stay finite
    }

    // Iterations per block: enough for min_time, agreed by all ranks.
    int64_t iterations[kLibraries] = {1, 1, 1};
    for (int library = 0; library < libraries; ++library) {
      Check(cohort->Barrier(), "barrier");
      auto start = Clock::now();
      run_once(library);
      double seconds = std::chrono::duration<double>(Clock::now() - start).count();
      iterations[library] = std::clamp<int64_t>(
          static_cast<int64_t>(options.min_time / std::max(seconds, 1e-7)), 1, 20000);
    }
    Check(cohort->AllReduce(iterations, kLibraries, DataType::kInt64, ReduceOp::kMax),
          "agreeing on iterations");

    std::vector<double> times[kLibraries];
    for (int round = 0; round < options.rounds; ++round) {
      for (int turn = 0; turn < libraries; ++turn) {
        const int library = (round + turn) % libraries;
        Check(cohort->Barrier(), "barrier");
        auto start = Clock::now();
        for (int64_t i = 0; i < iterations[library]; ++i) run_once(library);
        double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
        Check(cohort->AllReduce(&elapsed, 1, DataType::kFloat64, ReduceOp::kMax), "timing");
        times[library].push_back(elapsed / static_cast<double>(iterations[library]));
      }
    }
    if (rank == 0) {
      std::string line = "@ " + std::to_string(ranks) + " " + std::to_string(bytes);
      for (int library = 0; library < kLibraries; ++library) {
        double median = 0;
        if (library < libraries) {
          std::sort(times[library].begin(), times[library].end());
          median = times[library][times[library].size() / 2];
        }
        line += " " + std::to_string(median);
      }
      report(line);
    }
  }
  return 0;
}

struct Row {
  int ranks;
  size_t bytes;
  double seconds[kLibraries];
};

// Runs one rank count: forks the ranks and returns rank 0's measurements, printing them as rows
// (and rank 0's notes) unless `quiet`.
std::vector<Row> RunRankCount(int ranks, const Options& options, bool quiet = false) {
  Mesh default_mesh = MakeMesh(ranks);
  Mesh tcp_mesh = MakeMesh(ranks);
  std::string gloo_dir =
      "/tmp/cohort-allreduce-bench-" + std::to_string(getpid()) + "-" + std::to_string(ranks);
  std::filesystem::remove_all(gloo_dir);
  std::filesystem::create_directories(gloo_dir);
  int report[2];
  if (pipe(report) != 0) std::exit(1);
  std::vector<pid_t> children;
  std::fflush(stdout);
  for (int rank = 0; rank < ranks; ++rank) {
    pid_t pid = fork();
    if (pid == 0) {
      close(report[0]);
      int code = RunRank(rank, ranks, default_mesh, tcp_mesh, gloo_dir, options, report[1]);
      std::fflush(stderr);
      _exit(code);
    }
    children.push_back(pid);
  }
  close(report[1]);
  for (int fd : default_mesh.listeners) close(fd);
  for (int fd : tcp_mesh.listeners) close(fd);

  std::vector<Row> rows;
  std::string pending;
  char buffer[4096];
  ssize_t got;
  while ((got = read(report[0], buffer, sizeof(buffer))) > 0) {
    pending.append(buffer, static_cast<size_t>(got));
    size_t newline;
    while ((newline = pending.find('\n')) != std::string::npos) {
      std::string line = pending.substr(0, newline);
      pending.erase(0, newline + 1);
      if (line.rfind("@ ", 0) == 0) {
        Row row;
        std::istringstream fields(line.substr(2));
        fields >> row.ranks >> row.bytes >> row.seconds[0] >> row.seconds[1] >> row.seconds[2];
        rows.push_back(row);
        if (quiet) continue;
        double factor = 2.0 * (row.ranks - 1) / row.ranks;
        std::printf("%5d %10s", row.ranks, FormatBytes(row.bytes).c_str());
        double busbw[kLibraries];
        for (int library = 0; library < kLibraries; ++library) {
          double algbw = row.seconds[library] > 0 ? row.bytes / row.seconds[library] / 1e9 : 0;
          busbw[library] = algbw * factor;
          std::printf(" | %10.1f %7.3f %7.3f", row.seconds[library] * 1e6, algbw, busbw[library]);
        }
        double ratio = busbw[kGloo] > 0 ? busbw[kCohort] / busbw[kGloo] : 0;
        double ratio_tcp = busbw[kGloo] > 0 ? busbw[kCohortTcp] / busbw[kGloo] : 0;
        std::printf(" | %6.2f %6.2f\n", ratio, ratio_tcp);
      } else if (!quiet) {
        std::printf("%s\n", line.c_str());
      }
      std::fflush(stdout);
    }
  }
  close(report[0]);
  bool failed = false;
  for (pid_t child : children) {
    int status = 0;
    waitpid(child, &status, 0);
    failed |= !WIFEXITED(status) || WEXITSTATUS(status) != 0;
  }
  std::filesystem::remove_all(gloo_dir);
  if (failed) {
    std::fprintf(stderr, "a rank of the %d-rank run failed\n", ranks);
    std::exit(1);
  }
  return rows;
}

// The goal at 64 MiB with 2 ranks is a fraction of the TCP ceiling. On a shared machine memory
// and loopback speeds drift over minutes, so a ceiling measured at start and an all-reduce
// measured minutes later can disagree by more than the effect being measured. Here the two are
// measured in turn, four times each, right after each other, and each keeps its best, as
// bench/ps does for its summary.
void CheckAgainstTheCeiling(Options options) {
  options.ranks = {2};
  options.min_bytes = options.max_bytes = 64u << 20;
  options.rounds = 1;
  double ceiling = 0, cohort = 0, cohort_tcp = 0;
  for (int round = 0; round < 4; ++round) {
    ceiling = std::max(ceiling, bench::MeasureTcpCeiling(64u << 20, 2u << 30));
    for (const Row& row : RunRankCount(2, options, /*quiet=*/true)) {
      cohort = std::max(cohort, row.bytes / row.seconds[kCohort]);
      cohort_tcp = std::max(cohort_tcp, row.bytes / row.seconds[kCohortTcp]);
    }
  }
  std::printf(
      "# 64 MiB, 2 ranks, measured in turn with the ceiling, best of 4 each: ceiling %.3f GB/s; "
      "busbw %.3f GB/s = %.0f%% (cohort), %.3f GB/s = %.0f%% (cohort-tcp)\n",
      ceiling / 1e9, cohort / 1e9, 100.0 * cohort / ceiling, cohort_tcp / 1e9,
      100.0 * cohort_tcp / ceiling);
}

std::string CpuModel() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) == 0) return line.substr(line.find(':') + 2);
  }
  return "unknown";
}

int Main(int argc, char** argv) {
  Options options = ParseOptions(argc, argv);
  std::printf(
      "# allreduce_bench: float32 sum, in place, loopback; times are medians of %d rounds\n",
      options.rounds);
  std::printf("# cpu: %s, %u cores online\n", CpuModel().c_str(),
              std::thread::hardware_concurrency());
#ifndef COHORT_HAVE_GLOO
  std::printf("# gloo: not built (install libgloo-dev and reconfigure); gloo columns are empty\n");
#endif
  double ceiling = 0, cached_ceiling = 0;
  for (int attempt = 0; attempt < 3; ++attempt) {
    ceiling = std::max(ceiling, bench::MeasureTcpCeiling(64u << 20, 2u << 30));
    cached_ceiling = std::max(cached_ceiling, bench::MeasureTcpCeiling(4u << 20, 2u << 30));
  }
  std::printf(
      "# loopback TCP ceiling, one stream, best of 3 x 2 GiB: %.3f GB/s between 64 MiB buffers, "
      "%.3f GB/s between 4 MiB buffers (in cache)\n",
      ceiling / 1e9, cached_ceiling / 1e9);
  std::printf("# GB/s = 1e9 bytes/s; busbw = algbw * 2(n-1)/n\n");
  std::printf("%5s %10s | %10s %7s %7s | %10s %7s %7s | %10s %7s %7s | %6s %6s\n", "ranks", "size",
              "cohort us", "algbw", "busbw", "tcp us", "algbw", "busbw", "gloo us", "algbw",
              "busbw", "x gloo", "tcp x");
  std::vector<Row> rows;
  for (int ranks : options.ranks) {
    std::vector<Row> more = RunRankCount(ranks, options);
    rows.insert(rows.end(), more.begin(), more.end());
  }
  const bool sweep_has_64_mib_on_2_ranks =
      std::count(options.ranks.begin(), options.ranks.end(), 2) > 0 &&
      options.min_bytes <= (64u << 20) && options.max_bytes >= (64u << 20);
  if (sweep_has_64_mib_on_2_ranks) CheckAgainstTheCeiling(options);
  double min_ratio = 1e300, min_ratio_tcp = 1e300;
  for (const Row& row : rows) {
    if (row.bytes < (1u << 20) || row.seconds[kGloo] <= 0) continue;
    min_ratio = std::min(min_ratio, row.seconds[kGloo] / row.seconds[kCohort]);
    min_ratio_tcp = std::min(min_ratio_tcp, row.seconds[kGloo] / row.seconds[kCohortTcp]);
  }
  for (const Row& row : rows) {
    if (row.ranks == 2 && row.bytes == (64u << 20) && ceiling > 0) {
      const double cohort_busbw = row.bytes / row.seconds[kCohort];
      const double tcp_busbw = row.bytes / row.seconds[kCohortTcp];
      std::printf(
          "# 64 MiB, 2 ranks: busbw is %.0f%% (cohort) and %.0f%% (cohort-tcp) of the 64 MiB "
          "TCP ceiling; %.0f%% and %.0f%% of the in-cache one\n",
          100.0 * cohort_busbw / ceiling, 100.0 * tcp_busbw / ceiling,
          100.0 * cohort_busbw / cached_ceiling, 100.0 * tcp_busbw / cached_ceiling);
    }
    if (row.bytes == options.min_bytes && row.seconds[kGloo] > 0) {
      std::printf(
          "# %s, %d ranks: latency %.1f us (cohort), %.1f us (cohort-tcp), %.1f us (gloo)\n",
          FormatBytes(row.bytes).c_str(), row.ranks, row.seconds[kCohort] * 1e6,
          row.seconds[kCohortTcp] * 1e6, row.seconds[kGloo] * 1e6);
    }
  }
  if (min_ratio > 1e299) {
    std::printf("allreduce: min busbw ratio vs gloo (>= 1 MiB) = n/a\n");
    return 0;
  }
  std::printf("# cohort-tcp (TCP ring only): min busbw ratio vs gloo (>= 1 MiB) = %.2f\n",
              min_ratio_tcp);
  std::printf("allreduce: min busbw ratio vs gloo (>= 1 MiB) = %.2f\n", min_ratio);
  return 0;
}

}  // namespace
}  // namespace cohort::bench

int main(int argc, char** argv) { return cohort::bench::Main(argc, argv); }
