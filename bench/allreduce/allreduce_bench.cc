// allreduce_bench: Cohort's all-reduce beside its like-for-like peers, against the link's bound.
//
// Two comparisons, never mixed:
//
//   --mode=tcp (the default): Cohort over TCP only (its same-host path off, as between hosts)
//   against every all-reduce of Gloo's TCP transport (Debian's libgloo-dev): gloo::allreduce,
//   the API PyTorch's Gloo backend calls, with its ring and its bcube algorithm, and the classic
//   AllreduceRing, AllreduceRingChunked and AllreduceHalvingDoubling. Per size the best of the
//   five is "best gloo", named. The limit is the link (--link-bits-per-second, the shaping rate of
//   each host's link each way, between hosts): each algorithm's bound is the time its least
//   traffic through one host's link takes at that rate, 2(n-1)/n of the buffer for a flat
//   all-reduce (Cohort's ring, every Gloo algorithm: a ring over ranks placed host by host sends
//   that much out of each host), 2(h-1)/h for Cohort's hierarchical all-reduce over h hosts; "of
//   bound" is that time over the measured one. Beside them, in the same processes and in turn
//   with them, the single-connection TCP loop (bench/common/tcp_loop.h): each rank sends to
//   its next rank and receives from its previous one at once, as many bytes as a ring all-reduce
//   moves, over one connection, at most 256 KiB per system call. It is a reference point for
//   what one plain TCP stream of this kernel does here, not a limit: an all-reduce may beat it.
//
//   --mode=same-host: Cohort with its same-host path (the default a job on one host gets)
//   against Open MPI's shared-memory MPI_Allreduce (mpirun --mca pml ob1 --mca btl self,vader,
//   running mpi_allreduce_bench). The two run as separate process groups, alternating round by
//   round.
//
// Ranks are forked on loopback (--ranks=2,4), or, with --rank, this process is one rank of a
// group whose endpoints --endpoints lists, one per rank (on emulated hosts: run_cross_host.sh).
//
// Each figure is per operation: every rank times a block of iterations (as many as fill
// --min-time, agreed by all), the slowest rank's time counts, and --rounds blocks (10 by default)
// give min / median / max. The libraries take turns within each round, in rotating order, on the
// same float32 buffer (sum, in place); each result is checked first. Bandwidths as NCCL-tests
// define them: algbw = size / time, busbw = algbw * 2(n-1)/n; the TCP loop's busbw is the
// bytes each rank sent / time. Ratios and fractions ("of it", "ratio") are medians over rounds of
// the ratio within each round (the libraries of one round run one right after the other).
//
//   allreduce_bench [--mode=tcp|same-host] [--ranks=2,4] [--min-bytes=1024]
//                   [--max-bytes=67108864] [--factor=4] [--min-time=0.05] [--rounds=10]
//                   [--segment-bytes=N] [--receive-slots=N] [--same-host-min-bytes=N]
//                   [--staging-bytes=N (0: the same-host all-reduce reads peers' memory)]
//                   [--staging-min-bytes=N]
//                   [--rank=R --endpoints=HOST:PORT,... --gloo-store=DIR --label=TEXT]
//                   [--link-bits-per-second=N] [--skip=NAME,...]
//                   [--mpirun=PATH --mpi-bench=PATH]
//
// With --rank, rank R listens on its endpoint's port (Cohort) and the next port (the TCP loop);
// Gloo's rendezvous is a file store in DIR, which every rank must see. The hosts are the distinct
// host names of --endpoints.
//
// Output: a table per rank count; with a link rate, one line per size for the documentation's
// generator (bench/allreduce/render_cross_host.py):
//   allreduce-row LABEL RANKS BYTES COHORT_US COHORT_BUSBW COHORT_OF_BOUND BEST_GLOO
//                 GLOO_BUSBW GLOO_OF_BOUND COHORT/GLOO LOOP_BUSBW
// then per configuration the goal figures as lines "allreduce-goal NAME LABEL VALUE SIZE" (for
// run_cross_host.sh), and last the summary:
//   allreduce: min busbw ratio vs best gloo (>= 1 MiB) = X.XX             (--mode=tcp)
//   allreduce same-host: min busbw ratio vs open mpi (>= 1 MiB) = X.XX    (--mode=same-host)
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "collective/communicator.h"
#include "collective/reduction.h"
#include "net/socket.h"
#include "net/tcp/tcp_transport.h"
#include "spread.h"
#include "tcp_loop.h"

#ifdef COHORT_HAVE_GLOO
#include <gloo/allreduce.h>
#include <gloo/allreduce_halving_doubling.h>
#include <gloo/allreduce_ring.h>
#include <gloo/allreduce_ring_chunked.h>
#include <gloo/math.h>
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

// Everything measured, in column order. The Gloo ones exist only when Gloo was found; Open MPI
// runs in its own processes (--mode=same-host).
enum Library {
  kCohort,
  kGlooAllreduceRing,
  kGlooAllreduceBcube,
  kGlooRing,
  kGlooRingChunked,
  kGlooHalvingDoubling,
  kTcpLoop,
  kOpenMpi,
  kLibraries
};
const char* const kLibraryNames[] = {"cohort",
                                     "gloo::allreduce(ring)",
                                     "gloo::allreduce(bcube)",
                                     "AllreduceRing",
                                     "AllreduceRingChunked",
                                     "AllreduceHalvingDoubling",
                                     "tcp-loop",
                                     "open-mpi"};
constexpr Library kGlooLibraries[] = {kGlooAllreduceRing, kGlooAllreduceBcube, kGlooRing,
                                      kGlooRingChunked, kGlooHalvingDoubling};
constexpr size_t kMiB = 1u << 20;

enum class Mode { kTcp, kSameHost };

struct Options {
  Mode mode = Mode::kTcp;
  std::vector<int> ranks = {2, 4};
  size_t min_bytes = 1024;
  size_t max_bytes = 64 * kMiB;
  size_t factor = 4;
  double min_time = 0.05;
  int rounds = 10;
  collective::RingTuning ring;  // Cohort's defaults unless overridden
  size_t same_host_min_bytes = collective::CommunicatorOptions().same_host_min_bytes;
  size_t staging_bytes = collective::CommunicatorOptions().same_host_staging_bytes;
  size_t staging_min_bytes = collective::CommunicatorOptions().same_host_staging_min_bytes;
  // One rank of a group spread over hosts (--rank): its index, every rank's endpoint, Gloo's
  // file store and the configuration's name in the output.
  int rank = -1;
  std::vector<std::string> endpoints;
  std::string gloo_store;
  std::string label;
  // The rate of each host's link, each way (--link-bits-per-second; 0: unknown, e.g. loopback):
  // busbw is also shown as a fraction of it, since each rank's sends cross at most one link.
  double link_bits_per_second = 0;
  // Libraries left out of --mode=tcp, by their names in the output (--skip=a,b), to look at a few.
  std::vector<std::string> skip;
#ifdef COHORT_MPIRUN
  std::string mpirun = COHORT_MPIRUN;
  std::string mpi_bench = COHORT_MPI_BENCH;
#else
  std::string mpirun;
  std::string mpi_bench;
#endif
};

[[noreturn]] void Usage(const std::string& problem) {
  std::fprintf(stderr, "allreduce_bench: %s (see the comment at the top of allreduce_bench.cc)\n",
               problem.c_str());
  std::exit(2);
}

size_t ParseSize(const std::string& flag, const char* text) {
  char* end = nullptr;
  unsigned long long value = std::strtoull(text, &end, 10);
  if (end == text || *end != '\0') Usage(flag + ": not a number: " + text);
  return static_cast<size_t>(value);
}

Options ParseOptions(int argc, char** argv) {
  Options options;
  for (int i = 1; i < argc; ++i) {
    std::string argument = argv[i];
    auto value = [&](const char* name) -> const char* {
      size_t length = std::strlen(name);
      return argument.compare(0, length, name) == 0 ? argument.c_str() + length : nullptr;
    };
    auto list = [](const char* text) {
      std::vector<std::string> items;
      std::stringstream in(text);
      std::string item;
      while (std::getline(in, item, ',')) items.push_back(item);
      return items;
    };
    if (const char* v = value("--mode=")) {
      if (std::strcmp(v, "tcp") == 0) {
        options.mode = Mode::kTcp;
      } else if (std::strcmp(v, "same-host") == 0) {
        options.mode = Mode::kSameHost;
      } else {
        Usage(std::string("--mode: ") + v + " not in {tcp,same-host}");
      }
    } else if (const char* v = value("--ranks=")) {
      options.ranks.clear();
      for (const std::string& item : list(v)) {
        const size_t ranks = ParseSize("--ranks", item.c_str());
        if (ranks < 2 || ranks > 64) Usage("--ranks: " + item + " not in [2, 64]");
        options.ranks.push_back(static_cast<int>(ranks));
      }
    } else if (const char* v = value("--min-bytes=")) {
      options.min_bytes = ParseSize("--min-bytes", v);
    } else if (const char* v = value("--max-bytes=")) {
      options.max_bytes = ParseSize("--max-bytes", v);
    } else if (const char* v = value("--factor=")) {
      options.factor = std::max<size_t>(2, ParseSize("--factor", v));
    } else if (const char* v = value("--min-time=")) {
      options.min_time = std::atof(v);
    } else if (const char* v = value("--rounds=")) {
      options.rounds = static_cast<int>(std::clamp<size_t>(ParseSize("--rounds", v), 1, 1000));
    } else if (const char* v = value("--segment-bytes=")) {
      options.ring.segment_bytes = ParseSize("--segment-bytes", v);
    } else if (const char* v = value("--receive-slots=")) {
      options.ring.receive_slots = static_cast<int>(ParseSize("--receive-slots", v));
    } else if (const char* v = value("--same-host-min-bytes=")) {
      options.same_host_min_bytes = ParseSize("--same-host-min-bytes", v);
    } else if (const char* v = value("--staging-bytes=")) {
      options.staging_bytes = ParseSize("--staging-bytes", v);
    } else if (const char* v = value("--staging-min-bytes=")) {
      options.staging_min_bytes = ParseSize("--staging-min-bytes", v);
    } else if (const char* v = value("--rank=")) {
      options.rank = static_cast<int>(ParseSize("--rank", v));
    } else if (const char* v = value("--endpoints=")) {
      options.endpoints = list(v);
    } else if (const char* v = value("--gloo-store=")) {
      options.gloo_store = v;
    } else if (const char* v = value("--label=")) {
      options.label = v;
    } else if (const char* v = value("--skip=")) {
      options.skip = list(v);
      for (const std::string& name : options.skip) {
        if (std::find(std::begin(kLibraryNames), std::end(kLibraryNames), name) ==
                std::end(kLibraryNames) ||
            name == "cohort") {
          Usage("--skip: " + name + " is not a library --mode=tcp can leave out");
        }
      }
    } else if (const char* v = value("--link-bits-per-second=")) {
      options.link_bits_per_second = std::atof(v);
    } else if (const char* v = value("--mpirun=")) {
      options.mpirun = v;
    } else if (const char* v = value("--mpi-bench=")) {
      options.mpi_bench = v;
    } else {
      Usage("unknown argument " + argument);
    }
  }
  if (options.min_bytes < sizeof(float) || options.min_bytes > options.max_bytes ||
      options.max_bytes > (size_t{1} << 32)) {
    Usage("need 4 <= --min-bytes <= --max-bytes <= 4 GiB");
  }
  if (options.rank >= 0) {
    if (options.mode != Mode::kTcp) Usage("--rank runs --mode=tcp only");
    if (options.endpoints.size() < 2 || options.rank >= static_cast<int>(options.endpoints.size()))
      Usage("--rank needs --endpoints with at least 2 endpoints, its own among them");
    if (options.gloo_store.empty()) Usage("--rank needs --gloo-store");
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

std::string CompactBytes(size_t bytes) {
  std::string text = FormatBytes(bytes);
  text.erase(std::remove(text.begin(), text.end(), ' '), text.end());
  return text;
}

std::vector<size_t> Sizes(const Options& options) {
  std::vector<size_t> sizes;
  for (size_t bytes = options.min_bytes; bytes <= options.max_bytes; bytes *= options.factor) {
    sizes.push_back(bytes / sizeof(float) * sizeof(float));
  }
  return sizes;
}

[[noreturn]] void Die(const std::string& message) {
  std::fprintf(stderr, "allreduce_bench: %s\n", message.c_str());
  std::fflush(stderr);
  _exit(1);
}

void Check(const Status& status, const char* what) {
  if (!status.ok()) Die(std::string(what) + ": " + status.ToString());
}

// The measurements of one configuration: per-operation seconds by library and size.
using Samples = std::map<std::pair<int, size_t>, std::vector<double>>;

// ---- One rank ----

// Where one rank finds its peers and its own sockets.
struct RankPlan {
  int rank = 0;
  cluster::ClusterSpec spec;            // Cohort's endpoints, as "worker" tasks
  int cohort_listener = -1;             // bound already (forked ranks), or -1
  std::vector<net::Endpoint> tcp_loop;  // the TCP loop's endpoints
  net::Socket loop_listener;
  std::string gloo_host;  // the address Gloo's device binds
  std::string gloo_store;
  bool same_host = false;
  std::vector<Library> libraries;  // measured in these processes, in rotation
};

std::unique_ptr<Communicator> ConnectCohort(const RankPlan& plan, const Options& options) {
  net::TransportOptions transport_options;
  transport_options.job_name = "allreduce-bench";
  transport_options.secret = "allreduce-bench secret";
  transport_options.listening_fd = plan.cohort_listener;
  transport_options.log_warning = [](const std::string& message) {
    std::fprintf(stderr, "warning: %s\n", message.c_str());
  };
  auto transport = net::TcpTransport::Connect(plan.spec, {"worker", plan.rank}, transport_options);
  if (!transport.ok())
    Die("rank " + std::to_string(plan.rank) + ": " + transport.status().ToString());
  collective::CommunicatorOptions communicator_options;
  communicator_options.same_host_memory = plan.same_host;
  communicator_options.ring = options.ring;
  communicator_options.same_host_min_bytes = options.same_host_min_bytes;
  communicator_options.same_host_staging_bytes = options.staging_bytes;
  communicator_options.same_host_staging_min_bytes = options.staging_min_bytes;
  auto communicator = Communicator::Create(std::move(*transport), communicator_options);
  if (!communicator.ok()) {
    Die("rank " + std::to_string(plan.rank) + ": " + communicator.status().ToString());
  }
  return std::move(*communicator);
}

// Runs every size for `plan.libraries`; rank 0 calls `sample` with each per-operation time and
// `note` with what the reader should know about the run. Sets `*cohort_hierarchical`, when given,
// to whether Cohort's all-reduce is hierarchical there (the link bound depends on it).
void RunRank(RankPlan plan, const Options& options,
             const std::function<void(Library, size_t, double)>& sample,
             const std::function<void(const std::string&)>& note,
             bool* cohort_hierarchical = nullptr) {
  const int rank = plan.rank;
  const int ranks = static_cast<int>(plan.spec.jobs.at("worker").size());
  std::unique_ptr<Communicator> cohort = ConnectCohort(plan, options);
  if (cohort_hierarchical != nullptr) *cohort_hierarchical = cohort->uses_hierarchical_all_reduce();
  const bool measures = [&](Library library) {
    return std::find(plan.libraries.begin(), plan.libraries.end(), library) != plan.libraries.end();
  }(kTcpLoop);
  std::unique_ptr<RingExchange> ring;
  if (measures) {
    auto connected = RingExchange::Connect(rank, plan.tcp_loop, std::move(plan.loop_listener),
                                           net::Deadline::After(std::chrono::minutes(2)));
    if (!connected.ok()) Die(connected.status().ToString());
    ring = std::move(*connected);
  }
#ifdef COHORT_HAVE_GLOO
  std::shared_ptr<gloo::rendezvous::Context> gloo_context;
  if (std::count_if(plan.libraries.begin(), plan.libraries.end(), [](Library library) {
        return std::find(std::begin(kGlooLibraries), std::end(kGlooLibraries), library) !=
               std::end(kGlooLibraries);
      }) > 0) {
    try {
      auto store = std::make_shared<gloo::rendezvous::FileStore>(plan.gloo_store);
      auto device = gloo::transport::tcp::CreateDevice(plan.gloo_host.c_str());
      gloo_context = std::make_shared<gloo::rendezvous::Context>(rank, ranks);
      gloo_context->setTimeout(std::chrono::minutes(10));
      gloo_context->connectFullMesh(*store, device);
    } catch (const std::exception& error) {
      Die("rank " + std::to_string(rank) + ": gloo rendezvous in " + plan.gloo_store + ": " +
          error.what());
    }
  }
  uint32_t gloo_tag = 0;
#endif
  if (rank == 0) {
    note(std::to_string(ranks) + " ranks; cohort: " +
         (plan.same_host
              ? (cohort->uses_same_host_memory()
                     ? (cohort->uses_shared_memory_staging()
                            ? "same-host path: shared-memory staging in chunks of " +
                                  FormatBytes(options.staging_bytes) +
                                  (options.staging_min_bytes > 0
                                       ? " from " + FormatBytes(options.staging_min_bytes) +
                                             " up, TCP ring below"
                                       : std::string(" at every size"))
                            : "same-host path (cross-memory attach) from " +
                                  FormatBytes(options.same_host_min_bytes) + " up, TCP ring below")
                     : "same-host path unavailable here, TCP ring only")
              : "TCP ring only (same-host path off)") +
         "; reduction kernels: " + collective::ReductionKernelName());
  }

  std::vector<float> data(options.max_bytes / sizeof(float));
  std::vector<char> loop_receive(ring ? options.max_bytes : 0);
  const int libraries = static_cast<int>(plan.libraries.size());
  for (size_t bytes : Sizes(options)) {
    const size_t count = bytes / sizeof(float);
#ifdef COHORT_HAVE_GLOO
    std::unique_ptr<gloo::Algorithm> gloo_classic[kLibraries];
    if (gloo_context) {
      const std::vector<float*> pointers = {data.data()};
      const int elements = static_cast<int>(count);
      gloo_classic[kGlooRing] =
          std::make_unique<gloo::AllreduceRing<float>>(gloo_context, pointers, elements);
      gloo_classic[kGlooRingChunked] =
          std::make_unique<gloo::AllreduceRingChunked<float>>(gloo_context, pointers, elements);
      gloo_classic[kGlooHalvingDoubling] =
          std::make_unique<gloo::AllreduceHalvingDoubling<float>>(gloo_context, pointers, elements);
    }
#endif
    auto run_once = [&](Library library) {
      switch (library) {
        case kCohort:
          Check(cohort->AllReduce(data.data(), count, DataType::kFloat32, ReduceOp::kSum),
                "cohort all-reduce");
          return;
        case kTcpLoop:
          Check(ring->Exchange(data.data(), bytes, loop_receive.data(), bytes,
                               RingAllReduceBytesPerRank(bytes, ranks),
                               net::Deadline::After(std::chrono::minutes(10))),
                "tcp loop");
          return;
        default:
          break;
      }
#ifdef COHORT_HAVE_GLOO
      try {
        if (library == kGlooAllreduceRing || library == kGlooAllreduceBcube) {
          // As PyTorch's Gloo backend calls it: options made per call, a fresh tag each time.
          gloo::AllreduceOptions gloo_options(gloo_context);
          gloo_options.setAlgorithm(library == kGlooAllreduceRing
                                        ? gloo::AllreduceOptions::Algorithm::RING
                                        : gloo::AllreduceOptions::Algorithm::BCUBE);
          gloo_options.setOutput(data.data(), count);
          gloo_options.setReduceFunction(
              static_cast<void (*)(void*, const void*, const void*, size_t)>(&gloo::sum<float>));
          gloo_options.setTag(gloo_tag++);
          gloo::allreduce(gloo_options);
        } else {
          gloo_classic[library]->run();
        }
      } catch (const std::exception& error) {
        Die(std::string(kLibraryNames[library]) + ": " + error.what());
      }
#endif
    };

    // Correctness first: every all-reduce must produce 1 + 2 + ... + n.
    const float expected = static_cast<float>(ranks * (ranks + 1) / 2);
    for (Library library : plan.libraries) {
      if (library == kTcpLoop) continue;
      std::fill_n(data.data(), count, static_cast<float>(rank + 1));
      run_once(library);
      for (size_t i = 0; i < count; i += 97) {
        if (data[i] != expected) {
          Die(std::string(kLibraryNames[library]) + ": wrong sum " + std::to_string(data[i]) +
              " at " + std::to_string(i) + " (expected " + std::to_string(expected) + ")");
        }
      }
    }
    // The timed data: -0.0 in every element. Sums of it stay -0.0 (finite) however many
    // iterations run, adding it costs what adding any float does, and every word has a bit set,
    // so the data is dense to Cohort's zero skipping (which leaves out only +0.0 words): the full
    // buffer crosses the network, as random data would. (+0.0 would be skipped: not dense.)
    std::fill_n(data.data(), count, -0.0f);

    // Iterations per block: enough for min_time, agreed by all ranks.
    std::vector<int64_t> iterations(libraries, 1);
    for (int i = 0; i < libraries; ++i) {
      Check(cohort->Barrier(), "barrier");
      auto start = Clock::now();
      run_once(plan.libraries[i]);
      double seconds = std::chrono::duration<double>(Clock::now() - start).count();
      iterations[i] = std::clamp<int64_t>(
          static_cast<int64_t>(options.min_time / std::max(seconds, 1e-7)), 1, 10000);
    }
    Check(cohort->AllReduce(iterations.data(), iterations.size(), DataType::kInt64, ReduceOp::kMax),
          "agreeing on iterations");

    for (int round = 0; round < options.rounds; ++round) {
      for (int turn = 0; turn < libraries; ++turn) {
        const int index = (round + turn) % libraries;
        Check(cohort->Barrier(), "barrier");
        auto start = Clock::now();
        for (int64_t i = 0; i < iterations[index]; ++i) run_once(plan.libraries[index]);
        double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
        Check(cohort->AllReduce(&elapsed, 1, DataType::kFloat64, ReduceOp::kMax), "timing");
        if (rank == 0) {
          sample(plan.libraries[index], bytes, elapsed / static_cast<double>(iterations[index]));
        }
      }
    }
  }
}

// ---- Reading and printing the figures ----

double BusBandwidth(Library library, size_t bytes, int ranks, double seconds) {
  if (seconds <= 0) return 0;
  if (library == kTcpLoop) {
    return static_cast<double>(RingAllReduceBytesPerRank(bytes, ranks)) / seconds / 1e9;
  }
  return 2.0 * (ranks - 1) / ranks * static_cast<double>(bytes) / seconds / 1e9;
}

// The worst figure over sizes from `from_bytes` up, and where it was.
struct Worst {
  double value = 1e300;
  size_t bytes = 0;
  int ranks = 0;
  std::string detail;
  bool found() const { return bytes > 0; }
  void Offer(double candidate, size_t at, int with_ranks, const std::string& what = "") {
    if (candidate < value) {
      value = candidate;
      bytes = at;
      ranks = with_ranks;
      detail = what;
    }
  }
};

// The median over rounds of `library`'s busbw / `reference`'s busbw measured in the same round,
// i.e. of time(reference) / time(library), both moving the same bytes. Pairing each round's two
// measurements, taken one right after the other, keeps the load of that moment out of the
// ratio, where a ratio of two medians would mix rounds taken under different load. 0 without
// samples.
double PairedMedianRatio(const Samples& samples, Library reference, Library library, size_t bytes) {
  auto reference_times = samples.find({reference, bytes});
  auto library_times = samples.find({library, bytes});
  if (reference_times == samples.end() || library_times == samples.end()) return 0;
  std::vector<double> ratios;
  const size_t rounds = std::min(reference_times->second.size(), library_times->second.size());
  for (size_t round = 0; round < rounds; ++round) {
    if (library_times->second[round] > 0) {
      ratios.push_back(reference_times->second[round] / library_times->second[round]);
    }
  }
  return SpreadOf(ratios).median;
}

struct TcpFigures {
  Worst gloo_ratio;     // cohort / best gloo, sizes >= 1 MiB
  Worst link_fraction;  // cohort's fraction of its link bound, sizes >= 4 MiB
};

// Where the ranks are, for the link bound: `hosts` hosts (0: unknown, e.g. loopback), and whether
// Cohort's all-reduce is hierarchical there.
struct Layout {
  int hosts = 0;
  bool cohort_hierarchical = false;
};

// The least bytes that `library`'s all-reduce of `bytes` over `ranks` ranks sends out of one host
// through its link (and receives through it): 2(n-1)/n of the buffer for a flat all-reduce, whose
// ranks are placed host by host (a ring then crosses each host's link once each way, and with one
// rank per host every rank must send that much); 2(h-1)/h for Cohort's hierarchical all-reduce,
// which reduces within each host first.
double LinkBytes(Library library, size_t bytes, int ranks, const Layout& layout) {
  if (library == kCohort && layout.cohort_hierarchical && layout.hosts >= 2) {
    return 2.0 * (layout.hosts - 1) / layout.hosts * static_cast<double>(bytes);
  }
  return 2.0 * (ranks - 1) / ranks * static_cast<double>(bytes);
}

// `library`'s fraction of the link's bound at the median time: the time its least traffic takes at
// the link rate over the time measured (1: the link was busy all along). 0 without a link rate.
double LinkFraction(Library library, size_t bytes, int ranks, const Layout& layout,
                    double link_bits_per_second, double seconds) {
  if (link_bits_per_second <= 0 || seconds <= 0 || layout.hosts < 2) return 0;
  return LinkBytes(library, bytes, ranks, layout) / (link_bits_per_second / 8) / seconds;
}

// Prints the table of one --mode=tcp configuration and returns its goal figures.
TcpFigures PrintTcpTable(const std::string& label, int ranks, const Samples& samples,
                         const Options& options, const Layout& layout) {
  TcpFigures figures;
  const bool link = options.link_bits_per_second > 0 && layout.hosts >= 2;
  std::printf(
      "# %s, %d ranks: per-operation time in us, min / median / max of %d rounds; "
      "busbw GB/s of the median\n",
      label.c_str(), ranks, options.rounds);
  if (link) {
    std::printf(
        "# links of %.3f GB/s each way between %d hosts: \"bound\" is each algorithm's fraction "
        "of the link's bound (its least traffic through a host's link at the link rate, over the "
        "time taken): cohort %s, gloo flat (2(n-1)/n of the buffer)\n",
        options.link_bits_per_second / 8 / 1e9, layout.hosts,
        layout.cohort_hierarchical ? "hierarchical (2(h-1)/h of the buffer)"
                                   : "flat ring (2(n-1)/n of the buffer)");
  }
  std::printf(
      "# tcp-loop: a single-connection TCP loop moving a ring's bytes at most 256 KiB per call "
      "(a reference, not a limit); \"loop\" is cohort's busbw over its\n");
  std::printf("%9s | %27s %7s%s | %7s %-24s%s %6s | %7s %5s | %s\n", "size",
              "cohort us (min/med/max)", "busbw", link ? "  bound" : "", "gloo", "best gloo",
              link ? "  bound" : "", "ratio", "tcploop", "loop",
              "busbw: gloo::allreduce ring, bcube; AllreduceRing, RingChunked, HalvingDoubling");
  for (size_t bytes : Sizes(options)) {
    auto spread_of = [&](Library library) {
      auto found = samples.find({library, bytes});
      return found == samples.end() ? Spread() : SpreadOf(found->second);
    };
    const Spread cohort = spread_of(kCohort);
    const Spread loop = spread_of(kTcpLoop);
    const double cohort_busbw = BusBandwidth(kCohort, bytes, ranks, cohort.median);
    const double loop_busbw = BusBandwidth(kTcpLoop, bytes, ranks, loop.median);
    double best_busbw = 0;
    Library best = kGlooRing;
    std::string variants;
    for (Library library : kGlooLibraries) {
      const double busbw = BusBandwidth(library, bytes, ranks, spread_of(library).median);
      char text[16];
      std::snprintf(text, sizeof(text), " %7.3f", busbw);
      variants += text;
      if (busbw > best_busbw) {
        best_busbw = busbw;
        best = library;
      }
    }
    const double cohort_of_bound =
        LinkFraction(kCohort, bytes, ranks, layout, options.link_bits_per_second, cohort.median);
    const double gloo_of_bound =
        best_busbw > 0 ? LinkFraction(best, bytes, ranks, layout, options.link_bits_per_second,
                                      spread_of(best).median)
                       : 0;
    const double of_loop = PairedMedianRatio(samples, kTcpLoop, kCohort, bytes);
    const double ratio = best_busbw > 0 ? PairedMedianRatio(samples, best, kCohort, bytes) : 0;
    char cohort_bound_text[16] = "";
    char gloo_bound_text[16] = "";
    if (link) {
      std::snprintf(cohort_bound_text, sizeof(cohort_bound_text), " %5.0f%%",
                    100 * cohort_of_bound);
      std::snprintf(gloo_bound_text, sizeof(gloo_bound_text), " %5.0f%%", 100 * gloo_of_bound);
    }
    std::printf("%9s | %8.1f %8.1f %9.1f %7.3f%s | %7.3f %-24s%s %5.2fx | %7.3f %4.0f%% |%s\n",
                FormatBytes(bytes).c_str(), cohort.min * 1e6, cohort.median * 1e6, cohort.max * 1e6,
                cohort_busbw, cohort_bound_text, best_busbw,
                best_busbw > 0 ? kLibraryNames[best] : "(no gloo)", gloo_bound_text, ratio,
                loop_busbw, 100 * of_loop, variants.c_str());
    if (link) {
      std::printf("allreduce-row %s %d %zu %.1f %.4f %.4f %s %.4f %.4f %.4f %.4f\n", label.c_str(),
                  ranks, bytes, cohort.median * 1e6, cohort_busbw, cohort_of_bound,
                  best_busbw > 0 ? kLibraryNames[best] : "-", best_busbw, gloo_of_bound, ratio,
                  loop_busbw);
    }
    if (bytes >= kMiB && best_busbw > 0) {
      figures.gloo_ratio.Offer(ratio, bytes, ranks, kLibraryNames[best]);
    }
    if (link && bytes >= 4 * kMiB) figures.link_fraction.Offer(cohort_of_bound, bytes, ranks);
  }
  auto goal = [&](const char* name, const Worst& worst) {
    if (!worst.found()) return;
    std::printf("allreduce-goal %s %s %.3f %s %s\n", name, label.c_str(), worst.value,
                CompactBytes(worst.bytes).c_str(),
                worst.detail.empty() ? "-" : worst.detail.c_str());
  };
  goal("gloo-ratio-from-1MiB", figures.gloo_ratio);
  goal("link-fraction-from-4MiB", figures.link_fraction);
  std::fflush(stdout);
  return figures;
}

void PrintTcpSummary(const std::vector<TcpFigures>& all) {
  Worst ratio, fraction;
  for (const TcpFigures& figures : all) {
    if (figures.gloo_ratio.found()) {
      ratio.Offer(figures.gloo_ratio.value, figures.gloo_ratio.bytes, figures.gloo_ratio.ranks,
                  figures.gloo_ratio.detail);
    }
    if (figures.link_fraction.found()) {
      fraction.Offer(figures.link_fraction.value, figures.link_fraction.bytes,
                     figures.link_fraction.ranks);
    }
  }
  if (fraction.found()) {
    std::printf("# min cohort fraction of the link bound (>= 4 MiB) = %.2f (%s, %d ranks)\n",
                fraction.value, FormatBytes(fraction.bytes).c_str(), fraction.ranks);
  }
  if (!ratio.found()) {
    std::printf("allreduce: min busbw ratio vs best gloo (>= 1 MiB) = n/a\n");
    return;
  }
  std::printf("allreduce: min busbw ratio vs best gloo (>= 1 MiB) = %.2f (%s, %d ranks, vs %s)\n",
              ratio.value, FormatBytes(ratio.bytes).c_str(), ratio.ranks, ratio.detail.c_str());
}

// ---- Forked ranks on loopback ----

// Forks `ranks` ranks on loopback measuring `libraries` and returns rank 0's samples; rank 0's
// notes are printed as "# " lines when `print_notes`.
Samples RunForked(int ranks, const Options& options, bool same_host,
                  const std::vector<Library>& libraries, bool print_notes = true) {
  cluster::ClusterSpec spec;
  std::vector<int> cohort_listeners;
  std::vector<net::Endpoint> tcp_loop;
  std::vector<net::Socket> loop_listeners;
  for (int rank = 0; rank < ranks; ++rank) {
    auto cohort_listener = net::ListenTcp("127.0.0.1", 0, 128);
    auto loop_listener = net::ListenTcp("127.0.0.1", 0, 4);
    if (!cohort_listener.ok()) Die(cohort_listener.status().ToString());
    if (!loop_listener.ok()) Die(loop_listener.status().ToString());
    spec.jobs["worker"].push_back("127.0.0.1:" +
                                  std::to_string(*net::LocalPort(cohort_listener->fd())));
    tcp_loop.push_back({"127.0.0.1", *net::LocalPort(loop_listener->fd())});
    cohort_listeners.push_back(cohort_listener->Release());
    loop_listeners.push_back(std::move(*loop_listener));
  }
  const std::string gloo_dir =
      "/tmp/cohort-allreduce-bench-" + std::to_string(getpid()) + "-" + std::to_string(ranks);
  std::filesystem::remove_all(gloo_dir);
  std::filesystem::create_directories(gloo_dir);
  int report[2];
  if (pipe(report) != 0) Die("pipe");
  std::fflush(stdout);
  std::vector<pid_t> children;
  for (int rank = 0; rank < ranks; ++rank) {
    pid_t pid = fork();
    if (pid == 0) {
      close(report[0]);
      RankPlan plan;
      plan.rank = rank;
      plan.spec = spec;
      plan.cohort_listener = cohort_listeners[rank];
      for (int other = 0; other < ranks; ++other) {
        if (other != rank) close(cohort_listeners[other]);
      }
      plan.tcp_loop = tcp_loop;
      plan.loop_listener = std::move(loop_listeners[rank]);
      loop_listeners.clear();
      plan.gloo_host = "127.0.0.1";
      plan.gloo_store = gloo_dir;
      plan.same_host = same_host;
      plan.libraries = libraries;
      auto write_line = [&](const std::string& line) {
        std::string text = line + "\n";
        [[maybe_unused]] ssize_t ignored = write(report[1], text.data(), text.size());
      };
      RunRank(
          std::move(plan), options,
          [&](Library library, size_t bytes, double seconds) {
            char text[96];
            std::snprintf(text, sizeof(text), "@ %d %zu %.9g", library, bytes, seconds);
            write_line(text);
          },
          [&](const std::string& line) { write_line("# " + line); });
      std::fflush(stderr);
      _exit(0);
    }
    children.push_back(pid);
  }
  close(report[1]);
  for (int fd : cohort_listeners) close(fd);
  loop_listeners.clear();

  Samples samples;
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
        int library = 0;
        size_t bytes = 0;
        double seconds = 0;
        std::istringstream fields(line.substr(2));
        fields >> library >> bytes >> seconds;
        samples[{library, bytes}].push_back(seconds);
      } else if (print_notes) {
        std::printf("%s\n", line.c_str());
        std::fflush(stdout);
      }
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
  if (failed) Die("a rank of the " + std::to_string(ranks) + "-rank run failed (see above)");
  return samples;
}

// What --mode=tcp measures: Cohort, every Gloo all-reduce and the TCP loop, less those that
// --skip names.
std::vector<Library> TcpLibraries(const Options& options) {
  std::vector<Library> libraries = {kCohort};
#ifdef COHORT_HAVE_GLOO
  libraries.insert(libraries.end(), std::begin(kGlooLibraries), std::end(kGlooLibraries));
#endif
  libraries.push_back(kTcpLoop);
  libraries.erase(std::remove_if(libraries.begin(), libraries.end(),
                                 [&](Library library) {
                                   return std::count(options.skip.begin(), options.skip.end(),
                                                     kLibraryNames[library]) > 0;
                                 }),
                  libraries.end());
  return libraries;
}

std::string CpuModel() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) == 0) return line.substr(line.find(':') + 2);
  }
  return "unknown";
}

void PrintPreamble(const Options& options) {
  std::printf("# allreduce_bench --mode=%s: float32 sum in place; %d rounds per figure%s\n",
              options.mode == Mode::kTcp ? "tcp" : "same-host", options.rounds,
              options.rounds < 10 ? " (fewer than 10: not for reporting)" : "");
  std::printf("# cpu: %s, %u cores online; GB/s = 1e9 bytes/s; busbw = algbw * 2(n-1)/n\n",
              CpuModel().c_str(), std::thread::hardware_concurrency());
#ifndef COHORT_HAVE_GLOO
  if (options.mode == Mode::kTcp) {
    std::printf("# gloo: not built (install libgloo-dev and reconfigure); no gloo figures\n");
  }
#endif
}

int RunTcpForked(const Options& options) {
  std::printf(
      "# tcp: cohort (same-host path off) vs gloo's tcp transport vs the link bound (and the tcp "
      "loop), "
      "loopback\n");
  std::vector<TcpFigures> all;
  for (int ranks : options.ranks) {
    Samples samples = RunForked(ranks, options, /*same_host=*/false, TcpLibraries(options));
    all.push_back(PrintTcpTable("loopback", ranks, samples, options, Layout()));
  }
  PrintTcpSummary(all);
  return 0;
}

// One rank of a group on several hosts; rank 0 prints the table.
int RunTcpRank(const Options& options) {
  RankPlan plan;
  plan.rank = options.rank;
  std::vector<net::Endpoint> endpoints;
  for (const std::string& text : options.endpoints) {
    auto endpoint = net::ParseEndpoint(text);
    if (!endpoint.ok()) Usage("--endpoints: " + endpoint.status().ToString());
    plan.spec.jobs["worker"].push_back(text);
    plan.tcp_loop.push_back({endpoint->host, static_cast<uint16_t>(endpoint->port + 1)});
    endpoints.push_back(*endpoint);
  }
  const net::Endpoint& self = endpoints[options.rank];
  auto loop_listener = net::ListenTcp("", static_cast<uint16_t>(self.port + 1), 4);
  if (!loop_listener.ok()) Die(loop_listener.status().ToString());
  plan.loop_listener = std::move(*loop_listener);
  plan.gloo_host = self.host;
  plan.gloo_store = options.gloo_store;
  plan.libraries = TcpLibraries(options);
  const std::string label = options.label.empty() ? "hosts" : options.label;
  if (options.rank == 0) {
    PrintPreamble(options);
    std::printf(
        "# tcp: cohort (same-host path off) vs gloo's tcp transport vs the link bound (and the tcp "
        "loop), "
        "%s\n",
        label.c_str());
  }
  Layout layout;
  std::vector<std::string> hosts;
  for (const net::Endpoint& endpoint : endpoints) {
    if (std::find(hosts.begin(), hosts.end(), endpoint.host) == hosts.end()) {
      hosts.push_back(endpoint.host);
    }
  }
  layout.hosts = static_cast<int>(hosts.size());
  Samples samples;
  RunRank(
      std::move(plan), options,
      [&](Library library, size_t bytes, double seconds) {
        samples[{library, bytes}].push_back(seconds);
      },
      [](const std::string& line) { std::printf("# %s\n", line.c_str()); },
      &layout.cohort_hierarchical);
  if (options.rank != 0) return 0;
  std::vector<TcpFigures> all = {
      PrintTcpTable(label, static_cast<int>(endpoints.size()), samples, options, layout)};
  PrintTcpSummary(all);
  return 0;
}

// ---- Same host: Cohort's same-host path against Open MPI's shared memory ----

// Runs `argv` and returns its standard output, or an error after `timeout` (the command is
// killed) or when it fails.
StatusOr<std::string> CaptureOutput(const std::vector<std::string>& argv,
                                    std::chrono::seconds timeout) {
  int out[2];
  if (pipe(out) != 0) return Status::Internal("pipe");
  std::fflush(stdout);
  pid_t pid = fork();
  if (pid == 0) {
    dup2(out[1], 1);
    close(out[0]);
    close(out[1]);
    std::vector<char*> args;
    for (const std::string& arg : argv) args.push_back(const_cast<char*>(arg.c_str()));
    args.push_back(nullptr);
    execvp(args[0], args.data());
    std::fprintf(stderr, "cannot run %s: %s\n", args[0], std::strerror(errno));
    _exit(127);
  }
  close(out[1]);
  const auto deadline = Clock::now() + timeout;
  std::string output;
  char buffer[4096];
  bool timed_out = false;
  while (true) {
    pollfd fd = {out[0], POLLIN, 0};
    if (Clock::now() >= deadline) {
      timed_out = true;
      break;
    }
    if (poll(&fd, 1, 100) <= 0) continue;
    ssize_t got = read(out[0], buffer, sizeof(buffer));
    if (got <= 0) break;
    output.append(buffer, static_cast<size_t>(got));
  }
  close(out[0]);
  if (timed_out) kill(pid, SIGKILL);
  int status = 0;
  waitpid(pid, &status, 0);
  if (timed_out) {
    return Status::DeadlineExceeded(argv[0] + " ran past " + std::to_string(timeout.count()) +
                                    " s");
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    return Status::Internal(argv[0] + " failed (status " + std::to_string(status) +
                            "); its output:\n" + output);
  }
  return output;
}

// Open MPI as its strongest here: shared memory only (vader, with its single-copy mechanism where
// the kernel allows it), no binding (Cohort's ranks are not bound either) and ranks that yield
// their core while they poll: with busy polling, a rank waiting for a peer that shares its core
// (4 ranks on 2 cores, or any load beside) spins away the peer's time slice, which made 2-rank
// operations 10 to 100 times slower on a loaded 2-core machine.
std::vector<std::string> MpiCommand(int ranks, const Options& options) {
  return {options.mpirun,
          "--allow-run-as-root",
          "--oversubscribe",
          "--bind-to",
          "none",
          "--mca",
          "mpi_yield_when_idle",
          "1",
          "--mca",
          "pml",
          "ob1",
          "--mca",
          "btl",
          "self,vader",
          "-np",
          std::to_string(ranks),
          options.mpi_bench,
          "--min-bytes=" + std::to_string(options.min_bytes),
          "--max-bytes=" + std::to_string(options.max_bytes),
          "--factor=" + std::to_string(options.factor),
          "--min-time=" + std::to_string(options.min_time),
          "--rounds=1"};
}

// Adds the samples mpi_allreduce_bench printed; fails unless it ran as one group of `ranks`.
Status AddMpiSamples(const std::string& output, int ranks, Samples* samples) {
  if (output.find("# open-mpi ranks " + std::to_string(ranks) + "\n") == std::string::npos) {
    return Status::Internal("mpi_allreduce_bench did not run as one group of " +
                            std::to_string(ranks) + " ranks; it printed:\n" + output);
  }
  std::istringstream lines(output);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.rfind("@ open-mpi ", 0) != 0) continue;
    size_t bytes = 0;
    double seconds = 0;
    std::istringstream fields(line.substr(11));
    fields >> bytes >> seconds;
    (*samples)[{kOpenMpi, bytes}].push_back(seconds);
  }
  return Status::OK();
}

int RunSameHost(const Options& options) {
  if (options.mpirun.empty() || options.mpi_bench.empty()) {
    std::printf("# open mpi: not built (install libopenmpi-dev and openmpi-bin, reconfigure)\n");
    std::printf("allreduce same-host: min busbw ratio vs open mpi (>= 1 MiB) = n/a\n");
    return 0;
  }
  std::vector<std::string> shown = MpiCommand(options.ranks.front(), options);
  std::string command;
  for (const std::string& arg : shown) command += (command.empty() ? "" : " ") + arg;
  std::printf(
      "# same-host: cohort's default path vs Open MPI's shared memory, alternating round "
      "by round; open mpi: %s\n",
      command.c_str());
  std::map<int, Samples> by_ranks;
  Options one_round = options;
  one_round.rounds = 1;
  for (int round = 0; round < options.rounds; ++round) {
    for (int ranks : options.ranks) {
      Samples& samples = by_ranks[ranks];
      for (int turn = 0; turn < 2; ++turn) {
        if ((round + turn) % 2 == 0) {
          Samples cohort = RunForked(ranks, one_round, /*same_host=*/true, {kCohort},
                                     /*print_notes=*/round == 0);
          for (auto& [key, values] : cohort) {
            samples[key].insert(samples[key].end(), values.begin(), values.end());
          }
        } else {
          auto output = CaptureOutput(MpiCommand(ranks, options), std::chrono::seconds(600));
          if (!output.ok()) Die("open mpi: " + output.status().ToString());
          Check(AddMpiSamples(*output, ranks, &samples), "open mpi");
        }
      }
    }
  }
  Worst worst;
  for (int ranks : options.ranks) {
    const Samples& samples = by_ranks[ranks];
    std::printf(
        "# same host, %d ranks: per-operation time in us, min / median / max of %d "
        "rounds; busbw GB/s of the median\n",
        ranks, options.rounds);
    std::printf("%9s | %27s %7s | %27s %7s | %s\n", "size", "cohort us (min/med/max)", "busbw",
                "open mpi us (min/med/max)", "busbw", "cohort / open mpi");
    for (size_t bytes : Sizes(options)) {
      auto spread_of = [&](Library library) {
        auto found = samples.find({library, bytes});
        return found == samples.end() ? Spread() : SpreadOf(found->second);
      };
      const Spread cohort = spread_of(kCohort), mpi = spread_of(kOpenMpi);
      const double cohort_busbw = BusBandwidth(kCohort, bytes, ranks, cohort.median);
      const double mpi_busbw = BusBandwidth(kOpenMpi, bytes, ranks, mpi.median);
      const double ratio = mpi_busbw > 0 ? PairedMedianRatio(samples, kOpenMpi, kCohort, bytes) : 0;
      std::printf("%9s | %8.1f %8.1f %9.1f %7.3f | %8.1f %8.1f %9.1f %7.3f | %5.2fx\n",
                  FormatBytes(bytes).c_str(), cohort.min * 1e6, cohort.median * 1e6,
                  cohort.max * 1e6, cohort_busbw, mpi.min * 1e6, mpi.median * 1e6, mpi.max * 1e6,
                  mpi_busbw, ratio);
      if (bytes >= kMiB && mpi_busbw > 0) worst.Offer(ratio, bytes, ranks);
    }
  }
  if (!worst.found()) {
    std::printf("allreduce same-host: min busbw ratio vs open mpi (>= 1 MiB) = n/a\n");
    return 0;
  }
  std::printf(
      "goal: cohort >= 1.0x Open MPI at every size >= 1 MiB (same host, %s ranks): %s "
      "(min %.2fx at %s, %d ranks)\n",
      [&] {
        std::string list;
        for (int ranks : options.ranks) {
          list += (list.empty() ? "" : " and ") + std::to_string(ranks);
        }
        return list;
      }()
          .c_str(),
      worst.value >= 1.0 ? "PASS" : "FAIL", worst.value, FormatBytes(worst.bytes).c_str(),
      worst.ranks);
  std::printf("allreduce same-host: min busbw ratio vs open mpi (>= 1 MiB) = %.2f\n", worst.value);
  return 0;
}

int Main(int argc, char** argv) {
  Options options = ParseOptions(argc, argv);
  if (options.rank >= 0) return RunTcpRank(options);
  PrintPreamble(options);
  return options.mode == Mode::kTcp ? RunTcpForked(options) : RunSameHost(options);
}

}  // namespace
}  // namespace cohort::bench

int main(int argc, char** argv) { return cohort::bench::Main(argc, argv); }
